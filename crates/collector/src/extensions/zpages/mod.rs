//! `extensions: zpages:` serves the Collector's zPages on its own
//! endpoint: `/debug/servicez`, `/debug/pipelinez` (a page per pipeline
//! and per component: what flows, what is queued and refused, recent
//! errors), `/debug/extensionz` and `/debug/featurez`; plain HTML written
//! by the server, values from the collector's own metrics.

mod component;
mod config;
mod figures;
mod html;
mod parts;
mod pipelines;
mod service;

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

pub use config::{Expvar, ZPagesConfig, DEFAULT_ENDPOINT};

use super::http_endpoint;
use crate::component::{
    ExtensionContext, ExtensionFactory, ExtensionStartFuture, Host, StartedExtension,
};
use parts::{Kind, PIPELINEZ};

pub struct ZPagesExtensionFactory;

impl ExtensionFactory for ZPagesExtensionFactory {
    const KIND: &'static str = "zpages";
    type Options = ZPagesConfig;

    fn start<'a>(
        &'a self,
        options: &'a ZPagesConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        Box::pin(async move {
            let listener = http_endpoint::bind(&context, &options.endpoint).await?;
            let mut started = StartedExtension::default();
            let what = format!("zpages ({}, {})", service::SERVICEZ, context.id);
            let router = router(Arc::clone(context.host));
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

/// The pages, at the Collector's paths; 404 elsewhere.
fn router(host: Arc<Host>) -> Router {
    Router::new()
        .route(service::SERVICEZ, get(servicez))
        .route(PIPELINEZ, get(pipelinez))
        .route(service::EXTENSIONZ, get(extensionz))
        .route(service::FEATUREZ, get(featurez))
        .fallback(elsewhere)
        .with_state(host)
}

async fn servicez(State(host): State<Arc<Host>>) -> Response {
    service::servicez(&host)
}

async fn featurez() -> Response {
    service::featurez()
}

/// The Collector's query parameters of `/debug/pipelinez`; empty counts as
/// absent, as in Go.
#[derive(Deserialize)]
struct PipelineQuery {
    pipelinenamez: Option<String>,
    componentnamez: Option<String>,
    componentkindz: Option<String>,
}

async fn pipelinez(State(host): State<Arc<Host>>, Query(query): Query<PipelineQuery>) -> Response {
    let given = |value: Option<String>| value.filter(|value| !value.is_empty());
    let pipeline = given(query.pipelinenamez);
    let component = given(query.componentnamez);
    let kind = given(query.componentkindz);
    let kind = match kind.as_deref().map(Kind::parse) {
        None => None,
        Some(Some(kind)) => Some(kind),
        Some(None) => {
            return parts::not_found(
                "No such component kind",
                "componentkindz is one of receiver, processor, exporter.",
            )
        }
    };
    match (pipeline, component) {
        (None, _) => pipelines::overview(&host),
        (Some(pipeline), None) => pipelines::pipeline(&host, &pipeline),
        (Some(pipeline), Some(component)) => component::page(&host, &pipeline, &component, kind),
    }
}

#[derive(Deserialize)]
struct ExtensionQuery {
    zextensionname: Option<String>,
}

async fn extensionz(
    State(host): State<Arc<Host>>,
    Query(query): Query<ExtensionQuery>,
) -> Response {
    let selected = query.zextensionname.filter(|name| !name.is_empty());
    service::extensionz(&host, selected.as_deref())
}

async fn elsewhere(request: Request) -> Response {
    let path = request.uri().path();
    match service::NOT_AVAILABLE
        .iter()
        .find(|(unavailable, _)| *unavailable == path)
    {
        Some((path, why)) => service::not_available(path, why),
        None => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}
