//! OTLP over gRPC: `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tonic::codegen::{http, Body, BoxFuture, Service, StdError};
use tonic::server::NamedService;
use tonic::Status;

use profbridge_translate::decode_request_reusing;
use profbridge_translate::otlp::{ExportProfilesPartialSuccess, ExportProfilesServiceResponse};

use super::compression::{decompress, decompressed_size_estimate, DecompressError};
use super::decompressed::DecompressedBuffers;
use crate::net::{ConnectionLimits, Incoming};
use crate::pipeline::{pooled_request, wanted, PipelineHandle, Wanted};
use crate::protocol::admission::{declared_length, RETRY_AFTER};
use crate::protocol::compression::Compression;
use crate::protocol::grpc_unary::{
    grpc_timeout, parse_unary, reply, request_compression, FrameError, PREFIX_LEN,
};
use crate::protocol::retry_info;
use crate::receivers::admitted_body::{read_admitted_grpc, BodyBudget, BodyError};
use crate::receivers::intake::{
    any_full, intake, settle, Admission, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
use crate::settings::server::GrpcServerSettings;
use crate::telemetry::{ReceiverMetrics, RefusedReason};
use crate::tls::{BearerAuth, Security};

/// The OTLP profiles gRPC service, answering `Export` itself (see
/// protocol/grpc_unary.rs); any other method is UNIMPLEMENTED.
#[derive(Clone)]
struct ExportServer {
    pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `grpc`.
    metrics: ReceiverMetrics,
    max_message: usize,
    /// When set, requests without the right bearer token are UNAUTHENTICATED.
    auth: Option<BearerAuth>,
    buffers: Arc<DecompressedBuffers>,
    /// How long a request's message may take to arrive.
    read_timeout: Duration,
    /// The forms of a request the exporters send or store as they are.
    wanted: Wanted,
}

const SERVICE_NAME: &str = "opentelemetry.proto.collector.profiles.v1development.ProfilesService";
const EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

impl NamedService for ExportServer {
    const NAME: &'static str = SERVICE_NAME;
}

type GrpcResponse = http::Response<tonic::body::Body>;

impl<B> Service<http::Request<B>> for ExportServer
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = GrpcResponse;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if let Some(auth) = &self.auth {
            if !auth.allows(request.headers()) {
                crate::tls::refused_unauthenticated(&self.metrics);
                return answer(Status::unauthenticated("missing or wrong bearer token"));
            }
        }
        if request.uri().path() != EXPORT_PATH {
            return answer(Status::unimplemented("only Export is served"));
        }
        let encoding = match request_compression(request.headers()) {
            Ok(encoding) => encoding,
            Err(status) => return answer(self.undecodable(status)),
        };
        if any_full(&self.pipelines) {
            // Refused before its body is read: under overload, refusals
            // must stay cheap.
            self.metrics.refused_request(RefusedReason::Unavailable);
            self.metrics
                .note_refusal(RefusedReason::Unavailable, "a pipeline is full");
            return answer(unavailable());
        }
        // The client's deadline, when it is sooner than ours.
        let timeout = grpc_timeout(request.headers())
            .map_or(self.read_timeout, |client| client.min(self.read_timeout));
        let declared = declared_length(request.headers());
        let server = self.clone();
        Box::pin(async move {
            Ok(server
                .export(encoding, request.into_body(), declared, timeout)
                .await
                .unwrap_or_else(Status::into_http))
        })
    }
}

fn answer(status: Status) -> BoxFuture<GrpcResponse, Infallible> {
    Box::pin(async { Ok(status.into_http()) })
}

impl ExportServer {
    async fn export<B>(
        self,
        encoding: Compression,
        body: B,
        declared: Option<u64>,
        timeout: Duration,
    ) -> Result<GrpcResponse, Status>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<StdError>,
    {
        let limit = self.max_message.saturating_add(PREFIX_LEN);
        let budget = BodyBudget {
            pipelines: &self.pipelines,
            metrics: &self.metrics,
            limit,
            deadline: tokio::time::Instant::now() + timeout,
            timeout,
        };
        let mut body = Box::pin(body);
        let (body, admission) = match read_admitted_grpc(&mut body, declared, &budget).await {
            Ok(read) => read,
            Err(BodyError::TooLarge { .. }) => {
                return Err(self.undecodable(Status::resource_exhausted(format!(
                    "the request is larger than the limit of {limit} bytes (max_recv_msg_size_mib)"
                ))))
            }
            // Counted by the admission.
            Err(BodyError::Unavailable) => return Err(unavailable()),
            // What grpc-go answers for a call whose deadline passes.
            Err(error @ BodyError::TimedOut(_)) => {
                return Err(self.undecodable(Status::deadline_exceeded(format!(
                    "{error} (read_timeout, or the call's grpc-timeout)"
                ))))
            }
            Err(error @ BodyError::Failed(_)) => {
                return Err(self.undecodable(Status::cancelled(error.to_string())))
            }
        };
        let (compression, message) = parse_unary(body, encoding)
            .map_err(|error| self.undecodable(frame_status(&error, self.max_message)))?;
        let server = self.clone();
        let decision =
            tokio::task::spawn_blocking(move || server.receive(compression, message, admission))
                .await
                .map_err(|error| Status::internal(format!("intake failed: {error}")))??;
        let response = respond(settle(decision, &self.metrics).await)?;
        Ok(reply(&response))
    }

    /// Admits the request on an estimate of its decompressed size, then
    /// decompresses, decodes and queues it: blocking work.
    fn receive(
        &self,
        compression: Compression,
        message: Bytes,
        mut admission: Admission,
    ) -> Result<Decision, Status> {
        let estimate = decompressed_size_estimate(compression, &message, self.max_message);
        // The message's own bytes are held already; this grows the hold
        // to what decoding needs.
        if !admission.cover_in(
            &self.pipelines,
            estimate.saturating_mul(DECODED_BYTES_PER_PROTOBUF_BYTE),
            &self.metrics,
        ) {
            return Ok(Decision::done(Outcome::Unavailable));
        }
        let raw = decompress(
            compression,
            message.clone(),
            self.max_message,
            &self.buffers,
        )
        .map_err(|error| {
            self.undecodable(match error {
                DecompressError::TooLarge => Status::resource_exhausted(format!(
                    "the message decompresses to more than {} bytes (max_recv_msg_size_mib)",
                    self.max_message
                )),
                DecompressError::Corrupt(error) => {
                    Status::invalid_argument(format!("cannot decompress the message: {error}"))
                }
            })
        })?;
        if !admission.cover(
            raw.len().saturating_mul(DECODED_BYTES_PER_PROTOBUF_BYTE),
            &self.metrics,
        ) {
            self.buffers.give_back(raw);
            return Ok(Decision::done(Outcome::Unavailable));
        }
        let decoded = decode_request_reusing(&raw, pooled_request(&self.pipelines, raw.len()));
        let size = raw.len();
        let request = match decoded {
            Ok(request) => request,
            Err(e) => {
                self.buffers.give_back(raw);
                return Err(self.undecodable(Status::invalid_argument(format!("protobuf: {e}"))));
            }
        };
        let received =
            self.buffers
                .keep_received(self.wanted.keeps(compression), compression, message, raw);
        Ok(intake(
            request,
            size,
            Some(received),
            &self.pipelines,
            &self.metrics,
            admission,
        ))
    }

    /// Counts and logs a request refused before its profiles could be
    /// counted.
    fn undecodable(&self, status: Status) -> Status {
        self.metrics.refused_request(RefusedReason::Invalid);
        self.metrics
            .note_refusal(RefusedReason::Invalid, status.message());
        tracing::warn!(
            receiver = %self.metrics.receiver,
            transport = self.metrics.transport,
            reason = RefusedReason::Invalid.as_str(),
            detail = status.message(),
            "refused a request that could not be decoded"
        );
        status
    }
}

/// A body that is not one well-formed message is the client's fault:
/// INVALID_ARGUMENT, or RESOURCE_EXHAUSTED when its prefix claims more
/// than the receiver takes.
fn frame_status(error: &FrameError, max_message: usize) -> Status {
    match error {
        FrameError::LengthMismatch { declared, .. } if *declared > max_message => {
            Status::resource_exhausted(format!(
                "the message prefix declares {declared} bytes, over the limit of {max_message} (max_recv_msg_size_mib)"
            ))
        }
        other => Status::invalid_argument(other.to_string()),
    }
}

fn respond(outcome: Outcome) -> Result<ExportProfilesServiceResponse, Status> {
    match outcome {
        Outcome::Accepted { rejected: 0, .. } => Ok(ExportProfilesServiceResponse::default()),
        Outcome::Accepted { rejected, reason } => Ok(ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: i64::try_from(rejected).unwrap_or(i64::MAX),
                error_message: reason,
            }),
        }),
        Outcome::Invalid(reason) => Err(Status::invalid_argument(reason)),
        Outcome::Unavailable => Err(unavailable()),
    }
}

/// UNAVAILABLE, with RetryInfo saying when to try again.
fn unavailable() -> Status {
    Status::with_details(
        tonic::Code::Unavailable,
        "the pipeline is full; retry later",
        retry_info::status_details(
            tonic::Code::Unavailable as i32,
            "the pipeline is full; retry later",
            RETRY_AFTER,
        )
        .into(),
    )
}

/// Serves until `shutdown` resolves; the listener is already bound.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: GrpcServerSettings,
    connections: ConnectionLimits,
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
    security: Security,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let max_message =
        usize::try_from(config.max_recv_msg_size_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let service = ExportServer {
        wanted: wanted(&pipelines),
        pipelines,
        metrics,
        max_message,
        auth: security.auth,
        buffers: Arc::default(),
        read_timeout: config.read_timeout.0,
    };
    let tls = security.tls.map(|acceptor| (acceptor, security.handshakes));
    // TLS is accepted here rather than by tonic, so that changed
    // certificate files apply to new connections; plain or TLS, the one
    // accept loop backs off on errors, caps the connections, sets
    // TCP_NODELAY and closes idle connections.
    let incoming = Incoming::new(listener, connections, tls);
    let router = tonic::transport::Server::builder()
        .layer(crate::net::TrackRequestsLayer)
        .max_concurrent_streams(config.max_concurrent_streams)
        .http2_keepalive_interval(Some(config.keepalive.time.0))
        .http2_keepalive_timeout(Some(config.keepalive.timeout.0))
        .add_service(service);
    router
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

pub fn local_addr(listener: &tokio::net::TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}
