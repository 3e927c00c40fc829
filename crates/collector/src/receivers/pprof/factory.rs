//! `receivers: pprof:` in the registry.

use super::config::PprofReceiverConfig;
use crate::component::listen::Server;
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::tls::Alpn;

pub struct PprofReceiverFactory;

impl ReceiverFactory for PprofReceiverFactory {
    const KIND: &'static str = "pprof";
    type Options = PprofReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a PprofReceiverConfig,
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

    fn check(&self, id: &str, options: &PprofReceiverConfig) -> Vec<StartError> {
        server(id, options).check(id).into_iter().collect()
    }
}

fn server<'a>(id: &str, options: &'a PprofReceiverConfig) -> Server<'a> {
    Server {
        endpoint: &options.listener.server.endpoint,
        tls: options.listener.server.tls.as_deref(),
        auth: options.listener.server.auth.as_deref(),
        alpn: Alpn::Http1,
        transport: "http",
        what: format!("{id} pprof push (POST {})", options.path),
    }
}
