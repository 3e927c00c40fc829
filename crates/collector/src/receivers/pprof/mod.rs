//! The pprof receiver: `POST /v1/pprof` (the path is configurable) with a
//! pprof profile, raw or gzipped, or any legacy format or folded stacks,
//! told apart by their bytes. Resource attributes come from the query
//! string and headers (attributes.rs). Answers 204 once every pipeline
//! took the profile. The other sources: `remote` (remote/), `file`
//! (file_source.rs) and `self` (self_source.rs).

mod attributes;
pub mod config;
mod factory;
mod file_source;
pub mod remote;
mod self_source;

pub use factory::PprofReceiverFactory;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use profbridge_pprof::{load_profile, DEFAULT_FOLDED_SAMPLE_TYPE};

use self::attributes::resource_attributes;
use super::from_pprof::{decode_limits, nanos_since_epoch, profile_request};
use super::pprof_http::{Failure, Intake};

async fn push(
    State(intake): State<Intake>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let attributes = query
        .map_err(|rejection| rejection.body_text())
        .and_then(|Query(query)| resource_attributes(&query, &headers).map_err(|e| e.to_string()));
    let attributes = match attributes {
        Ok(attributes) => attributes,
        Err(message) => return intake.refuse(&Failure::BadRequest(message)),
    };
    let limits = decode_limits(intake.max_body);
    let metrics = intake.metrics.clone();
    intake
        .handle(&headers, body, StatusCode::NO_CONTENT, move |raw| {
            let (mut profile, replaced) =
                load_profile(&raw, None, DEFAULT_FOLDED_SAMPLE_TYPE, &limits)
                    .map_err(|error| Failure::from_parse(&error))?;
            metrics.strings_replaced(replaced.len());
            if profile.time_nanos == 0 {
                profile.time_nanos = nanos_since_epoch(SystemTime::now());
            }
            profile_request(&profile, &attributes).map_err(|e| Failure::BadRequest(e.to_string()))
        })
        .await
}
