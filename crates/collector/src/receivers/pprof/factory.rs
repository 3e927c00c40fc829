//! `receivers: pprof:` in the registry.

use axum::routing::post;

use super::config::PprofReceiverConfig;
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::receivers::pprof_http;

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
            let id = context.id;
            let mut started = StartedReceiver::default();
            if let Some((listener, path)) = options.push_server() {
                let what = format!("{id} pprof push (POST {path})");
                let routes = vec![(path.to_owned(), post(super::push))];
                started = pprof_http::start(context.clone(), listener, what, routes).await?;
            }
            if let Some(file) = &options.file {
                super::file_source::start(file, &context, &mut started)?;
            }
            if let Some(own) = &options.own {
                super::self_source::start(own, &context, &mut started);
            }
            if let Some(remote) = &options.remote {
                super::remote::start(remote, &context, &mut started)?;
            }
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &PprofReceiverConfig) -> Vec<StartError> {
        let mut problems: Vec<StartError> = options
            .push_server()
            .map(|(listener, _)| pprof_http::check(id, listener))
            .unwrap_or_default();
        if let Some(Err(error)) = options.remote.as_ref().map(super::remote::check) {
            problems.push(StartError::receiver(id, error));
        }
        problems
    }
}
