//! `receivers: otlp:` in the registry.

use super::config::{HttpConfig, OtlpReceiverConfig};
use super::{grpc, http};
use crate::component::listen::Server;
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::net::{receiver_limits, ConnectionLimits};
use crate::settings::server::GrpcServerSettings;
use crate::tls::Alpn;

pub struct OtlpReceiverFactory;

impl ReceiverFactory for OtlpReceiverFactory {
    const KIND: &'static str = "otlp";
    type Options = OtlpReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a OtlpReceiverConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        Box::pin(async move {
            let mut started = StartedReceiver::default();
            if let Some(config) = &options.protocols.grpc {
                let owned = config.clone();
                let limits = ConnectionLimits::of_grpc(config, context.max_connections);
                grpc_server(context.id, config)
                    .start(
                        &context,
                        &mut started,
                        |listener, pipelines, metrics, security, shutdown| {
                            grpc::serve(
                                listener, owned, limits, pipelines, metrics, security, shutdown,
                            )
                        },
                    )
                    .await?;
            }
            if let Some(config) = &options.protocols.http {
                let owned = config.clone();
                let limits = receiver_limits(&config.listener.connection, context.max_connections);
                http_server(context.id, config)
                    .start(
                        &context,
                        &mut started,
                        |listener, pipelines, metrics, security, shutdown| {
                            http::serve(
                                listener, owned, limits, pipelines, metrics, security, shutdown,
                            )
                        },
                    )
                    .await?;
            }
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &OtlpReceiverConfig) -> Vec<StartError> {
        let grpc = options
            .protocols
            .grpc
            .iter()
            .map(|grpc| grpc_server(id, grpc));
        let http = options
            .protocols
            .http
            .iter()
            .map(|http| http_server(id, http));
        grpc.chain(http)
            .filter_map(|server| server.check(id))
            .collect()
    }
}

fn grpc_server<'a>(id: &str, config: &'a GrpcServerSettings) -> Server<'a> {
    Server {
        endpoint: &config.endpoint,
        tls: config.tls.as_deref(),
        auth: config.auth.as_deref(),
        alpn: Alpn::Grpc,
        transport: "grpc",
        what: format!("{id} OTLP gRPC"),
    }
}

fn http_server<'a>(id: &str, config: &'a HttpConfig) -> Server<'a> {
    let what = format!("{id} OTLP HTTP (POST {})", config.profiles_url_path);
    Server::http(&config.listener, what)
}
