//! `receivers: pyroscope:` in the registry.

use axum::routing::post;

use super::config::PyroscopeReceiverConfig;
use super::{INGEST_PATH, PUSH_PATH};
use crate::component::{ReceiverContext, ReceiverFactory, StartError, StartFuture};
use crate::receivers::pprof_http;

pub struct PyroscopeReceiverFactory;

impl ReceiverFactory for PyroscopeReceiverFactory {
    const KIND: &'static str = "pyroscope";
    type Options = PyroscopeReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a PyroscopeReceiverConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        let what = format!(
            "{} Pyroscope ingest (POST {INGEST_PATH} and {PUSH_PATH})",
            context.id
        );
        let routes = vec![
            (INGEST_PATH.to_owned(), post(super::ingest)),
            (PUSH_PATH.to_owned(), post(super::push::push)),
        ];
        Box::pin(pprof_http::start(context, &options.listener, what, routes))
    }

    fn check(&self, id: &str, options: &PyroscopeReceiverConfig) -> Vec<StartError> {
        pprof_http::check(id, &options.listener)
    }
}
