//! `extensions: health_check:` answers on its own endpoint whether the
//! collector is up, as the Collector's healthcheckextension does: 200
//! once every receiver listens, 503 while starting and from the moment
//! shutdown begins. The telemetry endpoint's `/health` and `/ready` stay
//! as they are.

mod config;
mod status;

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;

pub use config::{CheckCollectorPipeline, HealthCheckConfig, ResponseBody, DEFAULT_ENDPOINT};

use super::http_endpoint;
use crate::component::{
    ExtensionContext, ExtensionFactory, ExtensionStartFuture, StartedExtension,
};
use crate::telemetry::Readiness;

pub struct HealthCheckExtensionFactory;

impl ExtensionFactory for HealthCheckExtensionFactory {
    const KIND: &'static str = "health_check";
    type Options = HealthCheckConfig;

    fn start<'a>(
        &'a self,
        options: &'a HealthCheckConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        Box::pin(async move {
            let listener = http_endpoint::bind(&context, &options.endpoint).await?;
            let mut started = StartedExtension::default();
            let router = router(
                Arc::clone(&context.host.readiness),
                options.path.clone(),
                options.response_body.clone(),
            );
            let what = format!("health check ({}, {})", options.path, context.id);
            http_endpoint::serve(
                &context,
                &mut started,
                listener,
                (what, &options.connection),
                router,
            );
            Ok(started)
        })
    }
}

#[derive(Clone)]
struct Served {
    readiness: Arc<Readiness>,
    path: Arc<str>,
    body: Option<Arc<ResponseBody>>,
}

/// Answers at `path` (and under it, when it ends in `/`); 404 elsewhere.
fn router(readiness: Arc<Readiness>, path: String, body: Option<ResponseBody>) -> Router {
    Router::new().fallback(answer).with_state(Served {
        readiness,
        path: path.into(),
        body: body.map(Arc::new),
    })
}

async fn answer(State(served): State<Served>, request: Request) -> Response {
    let asked = request.uri().path();
    let matches = if served.path.ends_with('/') {
        asked.starts_with(&*served.path)
    } else {
        asked == &*served.path
    };
    if !matches {
        return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    }
    status::answer(&served.readiness, served.body.as_deref(), SystemTime::now())
}
