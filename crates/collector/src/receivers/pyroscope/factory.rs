//! `receivers: pyroscope:` in the registry.

use super::config::PyroscopeReceiverConfig;
use super::{INGEST_PATH, PUSH_PATH};
use crate::component::listen::Server;
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
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
            let mut started = StartedReceiver::default();
            let config = options.clone();
            server(context.id, options)
                .start(
                    &context,
                    &mut started,
                    |listener, pipelines, metrics, security, shutdown| {
                        super::serve(listener, config, pipelines, metrics, security, shutdown)
                    },
                )
                .await?;
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &PyroscopeReceiverConfig) -> Vec<StartError> {
        server(id, options).check(id).into_iter().collect()
    }
}

fn server<'a>(id: &str, options: &'a PyroscopeReceiverConfig) -> Server<'a> {
    Server {
        endpoint: &options.listener.server.endpoint,
        tls: options.listener.server.tls.as_deref(),
        auth: options.listener.server.auth.as_deref(),
        alpn: Alpn::Http1,
        transport: "http",
        what: format!("{id} Pyroscope ingest (POST {INGEST_PATH} and {PUSH_PATH})"),
    }
}
