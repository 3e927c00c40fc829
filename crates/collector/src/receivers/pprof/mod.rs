//! The pprof receiver: `POST /v1/pprof` (the path is configurable) with a
//! pprof profile, raw or gzipped, any legacy format, folded stacks, or a
//! JFR recording (a profile per kind of event), told apart by their bytes. Resource attributes come from the query
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

use profbridge_jfr::ConvertOptions;
use profbridge_pprof::{load_profile, DecodeOptions, ParseError, DEFAULT_FOLDED_SAMPLE_TYPE};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{jfr_to_otlp, ToOtlpOptions};

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
                match load_profile(&raw, None, DEFAULT_FOLDED_SAMPLE_TYPE, &limits) {
                    Ok(loaded) => loaded,
                    Err(ParseError::Jfr) => return jfr_request(&raw, &attributes, &limits),
                    Err(error) => return Err(Failure::from_parse(&error)),
                };
            metrics.strings_replaced(replaced.len());
            if profile.time_nanos == 0 {
                profile.time_nanos = nanos_since_epoch(SystemTime::now());
            }
            profile_request(&profile, &attributes).map_err(|e| Failure::BadRequest(e.to_string()))
        })
        .await
}

/// A recording pushed whole: every profile it makes, or none.
fn jfr_request(
    raw: &[u8],
    attributes: &[KeyValue],
    limits: &DecodeOptions,
) -> Result<ExportProfilesServiceRequest, Failure> {
    let options = ConvertOptions {
        decode: *limits,
        ..ConvertOptions::default()
    };
    let converted = profbridge_jfr::convert(raw, &options).map_err(|e| Failure::from_jfr(&e))?;
    let otlp = jfr_to_otlp(&converted, attributes, None, &ToOtlpOptions::default());
    match otlp.rejected.into_iter().next() {
        Some((_, error)) => Err(Failure::BadRequest(error.to_string())),
        None => Ok(otlp.request),
    }
}
