//! `receivers: pprof:` in the registry.

use axum::routing::post;

use super::config::PprofReceiverConfig;
use super::remote::{self, RemoteError};
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
            let remote = match &options.remote {
                Some(config) => {
                    let auth = match &config.client.auth {
                        Some(auth) => Some(
                            context
                                .extensions
                                .authenticator(&auth.authenticator)
                                .cloned()
                                .ok_or_else(|| {
                                    StartError::receiver(
                                        id,
                                        RemoteError::NoAuthenticator(
                                            auth.authenticator.to_string(),
                                        ),
                                    )
                                })?,
                        ),
                        None => None,
                    };
                    let task = remote::start(remote::Start {
                        id,
                        config,
                        pipelines: context.pipelines.clone(),
                        registry: context.metrics,
                        auth,
                        stopped: context.stopped.clone(),
                    })
                    .map_err(|error| StartError::receiver(id, error))?;
                    Some((task, remote::describe(id, config)))
                }
                None => None,
            };
            let mut started = StartedReceiver::default();
            if let Some((listener, path)) = options.push_server() {
                let what = format!("{id} pprof push (POST {path})");
                let routes = vec![(path.to_owned(), post(super::push))];
                started = pprof_http::start(context, listener, what, routes).await?;
            }
            if let Some((task, description)) = remote {
                started.tasks.push(task);
                started.watching.push(description);
            }
            Ok(started)
        })
    }

    fn check(&self, id: &str, options: &PprofReceiverConfig) -> Vec<StartError> {
        let mut problems: Vec<StartError> = options
            .push_server()
            .map(|(listener, _)| pprof_http::check(id, listener))
            .unwrap_or_default();
        if let Some(Err(error)) = options.remote.as_ref().map(remote::check) {
            problems.push(StartError::receiver(id, error));
        }
        problems
    }
}
