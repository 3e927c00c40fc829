//! `receivers: pyroscope:` in the registry.

use super::config::PyroscopeReceiverConfig;
use super::{INGEST_PATH, PUSH_PATH};
use crate::component::listen::{bind, note_endpoint, over_tls, security, wait_for};
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::telemetry::ReceiverMetrics;
use crate::tls::Alpn;

pub struct PyroscopeReceiverFactory;

impl ReceiverFactory for PyroscopeReceiverFactory {
    const KIND: &'static str = "pyroscope";
    type Options = PyroscopeReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a PyroscopeReceiverConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        Box::pin(async move {
            let name = context.id;
            let mut started = StartedReceiver::default();
            let tls = options.tls.as_deref();
            let security = security(name, tls, options.auth.as_deref(), Alpn::Http1)?;
            let listener = bind(name, &options.endpoint).await?;
            let what = format!(
                "{name} Pyroscope ingest (POST {INGEST_PATH} and {PUSH_PATH}){}",
                over_tls(&security)
            );
            note_endpoint(&mut started.listening, &listener, what);
            let shutdown = wait_for(context.stopped.clone());
            let (config, handles) = (options.clone(), context.pipelines);
            let metrics = ReceiverMetrics::new(context.metrics, name, "http");
            started.tasks.push(tokio::spawn(async move {
                if let Err(error) =
                    super::serve(listener, config, handles, metrics, security, shutdown).await
                {
                    tracing::error!(%error, "Pyroscope receiver failed");
                }
            }));
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &PyroscopeReceiverConfig) -> Vec<StartError> {
        let (tls, auth) = (options.tls.as_deref(), options.auth.as_deref());
        security(id, tls, auth, Alpn::Http1)
            .err()
            .into_iter()
            .collect()
    }
}
