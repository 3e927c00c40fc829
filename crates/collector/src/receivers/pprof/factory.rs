//! `receivers: pprof:` in the registry.

use axum::routing::post;

use super::config::PprofReceiverConfig;
use crate::component::{ReceiverContext, ReceiverFactory, StartError, StartFuture};
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
        let what = format!("{} pprof push (POST {})", context.id, options.path);
        let routes = vec![(options.path.clone(), post(super::push))];
        Box::pin(pprof_http::start(context, &options.listener, what, routes))
    }

    fn check(&self, id: &str, options: &PprofReceiverConfig) -> Vec<StartError> {
        pprof_http::check(id, &options.listener)
    }
}
