//! The Pyroscope receiver: `POST /ingest` as Grafana Pyroscope documents
//! it, and `POST /push.v1.PusherService/Push`, the push API the current
//! SDKs speak (push.rs). For `/ingest`, the query names the application
//! and its labels (`name`), the time (`from`, `until`) and the format
//! (`format`, `sampleRate`, `units`, `aggregationType`, `spyName`); the
//! body is the profile, or for pprof a multipart/form-data form with a
//! `profile` part and an optional `sample_type_config` part, or for JFR
//! one with a `jfr` part and an optional `labels` part (jfr.rs). Answers
//! 200, as Pyroscope does.

pub mod config;
mod convert;
mod factory;
mod jfr;
mod multipart;
mod push;
mod query;
mod sample_types;
mod series;

pub use factory::PyroscopeReceiverFactory;
pub use jfr::JFR_EVENT_ATTRIBUTE;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

use self::convert::ingest_request;
use self::query::IngestQuery;
use super::from_pprof::{decode_limits, nanos_since_epoch};
use super::pprof_http::{Failure, Intake};
pub use crate::protocol::push_v1::PUSH_PATH;
pub use series::{
    DELTA_ATTRIBUTE, PROFILE_NAME_ATTRIBUTE, SESSION_ID_ATTRIBUTE, SPY_NAME_ATTRIBUTE,
};

/// Where Pyroscope takes uploads.
pub const INGEST_PATH: &str = "/ingest";

async fn ingest(
    State(intake): State<Intake>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let query = query
        .map_err(|rejection| rejection.body_text())
        .and_then(|Query(query)| IngestQuery::parse(&query).map_err(|e| e.to_string()));
    let query = match query {
        Ok(query) => query,
        Err(message) => return intake.refuse(&Failure::BadRequest(message)),
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let limits = decode_limits(intake.max_body);
    let received_at = nanos_since_epoch(SystemTime::now());
    let metrics = intake.metrics.clone();
    intake
        .handle(&headers, body, StatusCode::OK, move |raw| {
            ingest_request(&query, &content_type, &raw, &limits, received_at, &metrics)
        })
        .await
}
