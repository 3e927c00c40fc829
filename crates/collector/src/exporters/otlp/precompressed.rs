//! Sending a message that is compressed already (the bytes a request
//! arrived as): tonic compresses what its codec writes and sets the
//! frame's compressed flag itself, so the channel is wrapped in a service
//! that, for a request carrying a [`CompressedMessage`], replaces the body
//! tonic made with the frame of that message and names its compression.
//! Everything else, responses included, is tonic's.

use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::Full;
use tonic::body::Body;
use tonic::codegen::http::{self, HeaderValue};
use tonic::transport::Channel;
use tower_service::Service;

/// The gRPC length-prefixed message header: a compressed flag, then the
/// length (u32, big-endian).
const PREFIX_LEN: usize = 5;

/// A message compressed already, framed, in the extensions of the
/// request that sends it; tonic is then given an empty message and no
/// compression.
#[derive(Debug, Clone)]
pub(super) struct CompressedMessage {
    /// Its `grpc-encoding`.
    encoding: &'static str,
    /// The request body: the message's one frame, flagged compressed.
    frame: Bytes,
}

impl CompressedMessage {
    pub fn new(encoding: &'static str, message: &[u8]) -> Result<Self, TooLarge> {
        let length = u32::try_from(message.len()).map_err(|_| TooLarge(message.len()))?;
        let mut frame = BytesMut::with_capacity(PREFIX_LEN + message.len());
        frame.put_u8(1);
        frame.put_u32(length);
        frame.put_slice(message);
        Ok(Self {
            encoding,
            frame: frame.freeze(),
        })
    }
}

/// A message too large for a gRPC frame's length.
#[derive(Debug, thiserror::Error)]
#[error("a {0} byte message is too large for a gRPC frame")]
pub(super) struct TooLarge(usize);

/// The channel, sending [`CompressedMessage`]s as they are.
#[derive(Debug, Clone)]
pub(super) struct PassThrough(pub Channel);

impl Service<http::Request<Body>> for PassThrough {
    type Response = <Channel as Service<http::Request<Body>>>::Response;
    type Error = <Channel as Service<http::Request<Body>>>::Error;
    type Future = <Channel as Service<http::Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::poll_ready(&mut self.0, cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        if let Some(message) = request.extensions_mut().remove::<CompressedMessage>() {
            request
                .headers_mut()
                .insert("grpc-encoding", HeaderValue::from_static(message.encoding));
            *request.body_mut() = Body::new(Full::new(message.frame));
        }
        self.0.call(request)
    }
}
