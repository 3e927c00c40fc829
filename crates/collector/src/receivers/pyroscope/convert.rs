//! One `/ingest` upload into one OTLP request: the profile in the format
//! the query names (or the Content-Type and bytes tell; JFR in jfr.rs),
//! its time from `from` and `until`, its resource from `name` and
//! `spyName`.

use profbridge_pprof::{
    parse_folded, parse_unzipped, unzip, DecodeError, DecodeOptions, DetectError, Format,
    ParseError, Profile, Unzipped, DEFAULT_FOLDED_SAMPLE_TYPE,
};
use profbridge_translate::otlp::{string_value, ExportProfilesServiceRequest};

use super::jfr::jfr_request;
use super::multipart;
use super::query::{IngestFormat, IngestQuery};
use super::sample_types::{
    add_cpu_time, folded_sample_type, parse_sample_type_config, record_sample_type_config,
    SampleTypeConfigs,
};
use super::series::SPY_NAME_ATTRIBUTE;
use crate::receivers::from_pprof::{profile_request, set_profile_attribute, string_attributes};
use crate::receivers::pprof_http::Failure;
use crate::telemetry::ReceiverMetrics;

const NANOS_PER_SECOND: i64 = 1_000_000_000;

pub(super) fn ingest_request(
    query: &IngestQuery,
    content_type: &str,
    body: &[u8],
    limits: &DecodeOptions,
    received_at: i64,
    metrics: &ReceiverMetrics,
) -> Result<ExportProfilesServiceRequest, Failure> {
    let boundary = multipart::boundary(content_type);
    let resource = resource_pairs(query);
    let mut configs = SampleTypeConfigs::new();
    let (format, mut profile) = match &boundary {
        Some(boundary) => match query.format.unwrap_or(IngestFormat::Pprof) {
            IngestFormat::Pprof => {
                let (payload, parsed) = pprof_parts(body, boundary)?;
                configs = parsed;
                let profile = pprof_profile(unzip(payload, limits), limits, metrics)?;
                (IngestFormat::Pprof, profile)
            }
            IngestFormat::Jfr => {
                return jfr_request(query, Some(boundary), body, &resource, limits, received_at);
            }
            IngestFormat::Folded | IngestFormat::Lines => {
                return Err(Failure::BadRequest(
                    "folded and lines uploads are the text itself, not multipart/form-data"
                        .to_owned(),
                ));
            }
        },
        None => {
            // Gunzipped once, for detection and for the reader.
            let unzipped = unzip(body, limits);
            let format = query.format.unwrap_or_else(|| match &unzipped {
                Ok(unzipped) if profbridge_jfr::is_jfr(&unzipped.bytes) => IngestFormat::Jfr,
                Ok(unzipped) => match unzipped.detect() {
                    Ok(detected) if detected.format != Format::Folded => IngestFormat::Pprof,
                    _ => IngestFormat::Folded,
                },
                Err(_) => IngestFormat::Folded,
            });
            let profile = match format {
                IngestFormat::Jfr => {
                    let unzipped = unzipped.map_err(|error| Failure::from_gunzip(&error))?;
                    return jfr_request(
                        query,
                        None,
                        &unzipped.bytes,
                        &resource,
                        limits,
                        received_at,
                    );
                }
                IngestFormat::Pprof => pprof_profile(unzipped, limits, metrics)?,
                IngestFormat::Folded | IngestFormat::Lines => {
                    let unzipped = unzipped.map_err(|error| Failure::from_gunzip(&error))?;
                    folded_profile(query, format, &unzipped.bytes)?
                }
            };
            (format, profile)
        }
    };
    set_time(&mut profile, query, format, received_at);
    let mut request = profile_request(&profile, &string_attributes(resource))
        .map_err(|e| Failure::BadRequest(e.to_string()))?;
    record_sample_type_config(&mut request, &configs);
    if let (Some(aggregation), IngestFormat::Folded | IngestFormat::Lines) =
        (&query.aggregation, format)
    {
        set_profile_attribute(
            &mut request,
            None,
            "pyroscope.aggregation",
            &string_value(aggregation),
        );
    }
    Ok(request)
}

/// The resource attributes of an upload: the labels of `name`,
/// `pyroscope.spy_name` and `service.name`.
fn resource_pairs(query: &IngestQuery) -> Vec<(String, String)> {
    let mut resource: Vec<(String, String)> = query.labels.clone();
    if let Some(spy) = &query.spy_name {
        resource.push((SPY_NAME_ATTRIBUTE.to_owned(), spy.clone()));
    }
    resource.push(("service.name".to_owned(), query.app_name.clone()));
    resource
}

/// The `profile` part of a multipart upload, and its `sample_type_config`.
fn pprof_parts<'a>(
    body: &'a [u8],
    boundary: &str,
) -> Result<(&'a [u8], SampleTypeConfigs), Failure> {
    let parts = multipart::parts(body, boundary).map_err(bad_request)?;
    let configs = match parts.iter().find(|part| part.name == "sample_type_config") {
        Some(part) => parse_sample_type_config(part.data).map_err(bad_request)?,
        None => SampleTypeConfigs::new(),
    };
    let profile = parts
        .iter()
        .find(|part| part.name == "profile")
        .ok_or_else(|| {
            Failure::BadRequest("the multipart/form-data body has no profile part".to_owned())
        })?;
    Ok((profile.data, configs))
}

/// A pprof (or legacy) upload, gunzipped already, read as every received
/// pprof is: strings that are not UTF-8 are replaced, and counted.
fn pprof_profile(
    unzipped: Result<Unzipped<'_>, DecodeError>,
    limits: &DecodeOptions,
    metrics: &ReceiverMetrics,
) -> Result<Profile, Failure> {
    let read = unzipped
        .map_err(|error| ParseError::Detect(DetectError::Decode(error)))
        .and_then(|unzipped| {
            let detected = unzipped.detect()?;
            parse_unzipped(
                &unzipped,
                detected.format.into(),
                DEFAULT_FOLDED_SAMPLE_TYPE,
                limits,
            )
        });
    let (profile, replaced) = read.map_err(|error| Failure::from_parse(&error))?;
    metrics.strings_replaced(replaced.len());
    Ok(profile)
}

/// A folded or lines upload, gunzipped already.
fn folded_profile(
    query: &IngestQuery,
    format: IngestFormat,
    body: &[u8],
) -> Result<Profile, Failure> {
    let units = query.units.as_deref();
    let sample_type = folded_sample_type(units).map_err(bad_request)?;
    let text = if format == IngestFormat::Lines {
        lines_as_folded(body)
    } else {
        body.to_vec()
    };
    let mut profile = parse_folded(&text, sample_type)
        .map_err(|error| Failure::BadRequest(format!("cannot read the folded stacks: {error}")))?;
    if units.is_none_or(|units| units == "samples") {
        add_cpu_time(&mut profile, query.sample_rate);
    }
    Ok(profile)
}

/// Each non-blank line of a `lines` upload is one sample of its stack.
fn lines_as_folded(body: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(body.len() + body.len() / 8);
    for line in body.split(|&byte| byte == b'\n') {
        let line = line.trim_ascii();
        if !line.is_empty() {
            text.extend_from_slice(line);
            text.extend_from_slice(b" 1\n");
        }
    }
    text
}

/// `from` and `until` give folded and lines uploads their time and
/// duration (the time defaults to when it arrived); a pprof keeps its own
/// and gets them only where it has none.
fn set_time(profile: &mut Profile, query: &IngestQuery, format: IngestFormat, received_at: i64) {
    let from = query.from.map(|s| s.saturating_mul(NANOS_PER_SECOND));
    let duration = match (query.from, query.until) {
        (Some(from), Some(until)) => {
            Some(until.saturating_sub(from).saturating_mul(NANOS_PER_SECOND))
        }
        _ => None,
    };
    let keep_own = format == IngestFormat::Pprof;
    if !(keep_own && profile.time_nanos != 0) {
        profile.time_nanos = from.unwrap_or(received_at);
    }
    if let Some(duration) = duration {
        if !(keep_own && profile.duration_nanos != 0) {
            profile.duration_nanos = duration;
        }
    }
}

/// A 400 whose text is `error`'s message.
fn bad_request(error: impl std::fmt::Display) -> Failure {
    Failure::BadRequest(error.to_string())
}
