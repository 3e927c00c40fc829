//! The floor for scripts/bench-collector.sh: a bare tonic server for OTLP
//! profiles that only decodes each request (tonic does that) and answers
//! OK. It is set up as the collector's gRPC receiver is (gzip and zstd
//! accepted, 16 MiB messages, 100 streams a connection, mimalloc), so the
//! difference to `profbridge serve` is what the collector does with a
//! request once it is decoded.
//!
//! Usage: decode_floor [ADDR]   (default 127.0.0.1:0)
//! Prints `listening on ADDR`, then serves until interrupted or killed.

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_server::{
    ProfilesService, ProfilesServiceServer,
};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, ExportProfilesServiceResponse};
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Floor;

#[tonic::async_trait]
impl ProfilesService for Floor {
    async fn export(
        &self,
        request: Request<ExportProfilesServiceRequest>,
    ) -> std::result::Result<Response<ExportProfilesServiceResponse>, Status> {
        drop(request);
        Ok(Response::new(ExportProfilesServiceResponse::default()))
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    let service = ProfilesServiceServer::new(Floor)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(16 << 20);
    tonic::transport::Server::builder()
        .max_concurrent_streams(100)
        .add_service(service)
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        )
        .await?;
    Ok(())
}
