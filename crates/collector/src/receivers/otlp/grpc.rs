//! OTLP over gRPC: `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::codegen::{http, Body, BoxFuture, Service, StdError};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

use profbridge_translate::otlp::{
    ExportProfilesPartialSuccess, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};

use super::config::GrpcConfig;
use super::grpc_codec::RawRequestCodec;
use super::intake::{
    admit, any_full, intake, settle, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
use super::retry_info;
use crate::pipeline::PipelineHandle;
use crate::telemetry::{ReceiverMetrics, RefusedReason};
use crate::tls::{BearerAuth, Security, TlsIncoming};

/// How long clients are told to wait before retrying a refused request.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The OTLP profiles gRPC service, answering `Export` from raw request
/// bytes (see grpc_codec.rs); any other method is UNIMPLEMENTED.
#[derive(Clone)]
struct ExportServer {
    pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `grpc`.
    metrics: ReceiverMetrics,
    max_message: usize,
    /// When set, requests without the right bearer token are UNAUTHENTICATED.
    auth: Option<BearerAuth>,
}

const SERVICE_NAME: &str = "opentelemetry.proto.collector.profiles.v1development.ProfilesService";
const EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

impl NamedService for ExportServer {
    const NAME: &'static str = SERVICE_NAME;
}

impl<B> Service<http::Request<B>> for ExportServer
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if let Some(auth) = &self.auth {
            if !auth.allows(request.headers()) {
                crate::tls::refused_unauthenticated(&self.metrics);
                return Box::pin(async {
                    Ok(Status::unauthenticated("missing or wrong bearer token").into_http())
                });
            }
        }
        if request.uri().path() != EXPORT_PATH {
            return Box::pin(async {
                Ok(Status::unimplemented("only Export is served").into_http())
            });
        }
        if any_full(&self.pipelines) {
            // Refused before its body is read and decompressed: under
            // overload, refusals must stay cheap.
            self.metrics.refused_request(RefusedReason::Unavailable);
            return Box::pin(async { Ok(unavailable().into_http()) });
        }
        let server = self.clone();
        Box::pin(async move {
            let mut grpc = Grpc::new(RawRequestCodec)
                .accept_compressed(CompressionEncoding::Gzip)
                .accept_compressed(CompressionEncoding::Zstd)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(server.max_message);
            Ok(grpc.unary(ExportCall(server), request).await)
        })
    }
}

struct ExportCall(ExportServer);

impl UnaryService<Bytes> for ExportCall {
    type Response = ExportProfilesServiceResponse;
    type Future = BoxFuture<Response<Self::Response>, Status>;

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let pipelines = Arc::clone(&self.0.pipelines);
        let metrics = self.0.metrics.clone();
        let settle_metrics = self.0.metrics.clone();
        Box::pin(async move {
            let bytes = request.into_inner();
            let outcome = tokio::task::spawn_blocking(move || {
                let estimate = bytes.len().saturating_mul(DECODED_BYTES_PER_PROTOBUF_BYTE);
                let Some(admission) = admit(&pipelines, estimate, &metrics) else {
                    return Ok(Decision::done(Outcome::Unavailable));
                };
                let request =
                    ExportProfilesServiceRequest::decode(bytes.as_ref()).map_err(|e| {
                        metrics.refused_request(RefusedReason::Invalid);
                        Status::invalid_argument(format!("protobuf: {e}"))
                    })?;
                Ok::<_, Status>(intake(
                    request,
                    bytes.len(),
                    &pipelines,
                    &metrics,
                    admission,
                ))
            })
            .await
            .map_err(|error| Status::internal(format!("intake failed: {error}")))??;
            respond(settle(outcome, &settle_metrics).await)
        })
    }
}

fn respond(outcome: Outcome) -> Result<Response<ExportProfilesServiceResponse>, Status> {
    match outcome {
        Outcome::Accepted { rejected: 0, .. } => {
            Ok(Response::new(ExportProfilesServiceResponse::default()))
        }
        Outcome::Accepted { rejected, reason } => {
            Ok(Response::new(ExportProfilesServiceResponse {
                partial_success: Some(ExportProfilesPartialSuccess {
                    rejected_profiles: i64::try_from(rejected).unwrap_or(i64::MAX),
                    error_message: reason,
                }),
            }))
        }
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
    config: GrpcConfig,
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
    security: Security,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let max_message =
        usize::try_from(config.max_recv_msg_size_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let service = ExportServer {
        pipelines,
        metrics,
        max_message,
        auth: security.auth,
    };
    let router = tonic::transport::Server::builder()
        .max_concurrent_streams(config.max_concurrent_streams)
        .http2_keepalive_interval(Some(config.keepalive.time.0))
        .http2_keepalive_timeout(Some(config.keepalive.timeout.0))
        .add_service(service);
    match security.tls {
        // TLS is accepted here rather than by tonic, so that changed
        // certificate files apply to new connections.
        Some(acceptor) => {
            router
                .serve_with_incoming_shutdown(TlsIncoming::new(listener, acceptor), shutdown)
                .await
        }
        None => {
            router
                .serve_with_incoming_shutdown(
                    // Without TCP_NODELAY, a reply written in pieces waits for the
                    // client's delayed ACK (40 ms on Linux).
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
                    shutdown,
                )
                .await
        }
    }
}

pub fn local_addr(listener: &tokio::net::TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}
