//! OTLP over gRPC: `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};

use profbridge_translate::otlp::{
    ExportProfilesPartialSuccess, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_server::{
    ProfilesService, ProfilesServiceServer,
};

use super::config::GrpcConfig;
use super::intake::{intake, Outcome};
use super::retry_info;
use crate::pipeline::PipelineHandle;
use crate::telemetry::ReceiverMetrics;

/// How long clients are told to wait before retrying a refused request.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

struct Service {
    pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `grpc`.
    metrics: ReceiverMetrics,
}

#[tonic::async_trait]
impl ProfilesService for Service {
    async fn export(
        &self,
        request: Request<ExportProfilesServiceRequest>,
    ) -> Result<Response<ExportProfilesServiceResponse>, Status> {
        let request = request.into_inner();
        let pipelines = Arc::clone(&self.pipelines);
        let metrics = self.metrics.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let size = request.encoded_len();
            intake(request, size, &pipelines, &metrics)
        })
        .await
        .map_err(|error| Status::internal(format!("intake failed: {error}")))?;
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
            Outcome::Unavailable => Err(Status::with_details(
                tonic::Code::Unavailable,
                "the pipeline is full; retry later",
                retry_info::status_details(
                    tonic::Code::Unavailable as i32,
                    "the pipeline is full; retry later",
                    RETRY_AFTER,
                )
                .into(),
            )),
        }
    }
}

/// Serves until `shutdown` resolves; the listener is already bound.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: GrpcConfig,
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let max_message =
        usize::try_from(config.max_recv_msg_size_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let service = ProfilesServiceServer::new(Service { pipelines, metrics })
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_message);
    tonic::transport::Server::builder()
        .max_concurrent_streams(config.max_concurrent_streams)
        .http2_keepalive_interval(Some(config.keepalive.time.0))
        .http2_keepalive_timeout(Some(config.keepalive.timeout.0))
        .add_service(service)
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener),
            shutdown,
        )
        .await
}

pub fn local_addr(listener: &tokio::net::TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}
