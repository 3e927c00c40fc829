//! `receivers: otlp:` in the registry.

use std::sync::Arc;

use super::config::OtlpReceiverConfig;
use super::{grpc, http};
use crate::component::listen::{bind, note_endpoint, over_tls, security, wait_for};
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::telemetry::ReceiverMetrics;
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
            let name = context.id;
            let mut started = StartedReceiver::default();
            if let Some(grpc_config) = &options.protocols.grpc {
                let security = security(
                    name,
                    grpc_config.tls.as_deref(),
                    grpc_config.auth.as_deref(),
                    Alpn::Grpc,
                )?;
                let listener = bind(name, &grpc_config.endpoint).await?;
                let what = format!("{name} OTLP gRPC{}", over_tls(&security));
                note_endpoint(&mut started.listening, &listener, what);
                let shutdown = wait_for(context.stopped.clone());
                let (config, handles) = (grpc_config.clone(), Arc::clone(&context.pipelines));
                let metrics = ReceiverMetrics::new(context.metrics, name, "grpc");
                started.tasks.push(tokio::spawn(async move {
                    if let Err(error) =
                        grpc::serve(listener, config, handles, metrics, security, shutdown).await
                    {
                        tracing::error!(%error, "OTLP gRPC server failed");
                    }
                }));
            }
            if let Some(http_config) = &options.protocols.http {
                let security = security(
                    name,
                    http_config.tls.as_deref(),
                    http_config.auth.as_deref(),
                    Alpn::Http1,
                )?;
                let listener = bind(name, &http_config.endpoint).await?;
                let what = format!(
                    "{name} OTLP HTTP (POST {}){}",
                    http_config.profiles_url_path,
                    over_tls(&security)
                );
                note_endpoint(&mut started.listening, &listener, what);
                let shutdown = wait_for(context.stopped.clone());
                let (config, handles) = (http_config.clone(), Arc::clone(&context.pipelines));
                let metrics = ReceiverMetrics::new(context.metrics, name, "http");
                started.tasks.push(tokio::spawn(async move {
                    if let Err(error) =
                        http::serve(listener, config, handles, metrics, security, shutdown).await
                    {
                        tracing::error!(%error, "OTLP HTTP server failed");
                    }
                }));
            }
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &OtlpReceiverConfig) -> Vec<StartError> {
        let grpc = options
            .protocols
            .grpc
            .iter()
            .map(|grpc| (grpc.tls.as_deref(), grpc.auth.as_deref(), Alpn::Grpc));
        let http = options
            .protocols
            .http
            .iter()
            .map(|http| (http.tls.as_deref(), http.auth.as_deref(), Alpn::Http1));
        grpc.chain(http)
            .filter_map(|(tls, auth, alpn)| security(id, tls, auth, alpn).err())
            .collect()
    }
}
