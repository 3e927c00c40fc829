//! `format=jfr`: a Java Flight Recorder recording as the Pyroscope Java
//! agent uploads it, either the whole body or the `jfr` part of a
//! multipart/form-data form whose optional `labels` part is the agent's
//! labels snapshot (each part gzipped or not). The recording is converted
//! whole before anything is handed on.
//!
//! The profiles the recording makes are grouped into a resource per
//! Pyroscope metric, attributed as Pyroscope labels the series it stores: the query's labels,
//! `service.name` and `pyroscope.spy_name`, plus `pyroscope.profile_name`
//! (the series' `__name__`: `process_cpu`, `wall`, `memory`, `mutex`,
//! `block`), `pyroscope.delta` `false`, and `jfr_event` (async-profiler's
//! event) when the recording names one.

use profbridge_jfr::{
    convert, parse_labels_snapshot, ConvertOptions, Converted, LabelsError, LabelsSnapshot, Limits,
};
use profbridge_pprof::{DecodeError, DecodeOptions};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{jfr_to_otlp, ToOtlpOptions};

use super::multipart;
use super::query::IngestQuery;
use super::series::DELTA_ATTRIBUTE;
use crate::receivers::from_pprof::string_attributes;
use crate::receivers::pprof_http::Failure;

/// The resource attribute async-profiler's event becomes, named as
/// Pyroscope's label.
pub const JFR_EVENT_ATTRIBUTE: &str = "jfr_event";

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// The request a JFR upload makes; `resource` holds the attributes every
/// profile of it gets.
pub(super) fn jfr_request(
    query: &IngestQuery,
    boundary: Option<&str>,
    body: &[u8],
    resource: &[(String, String)],
    limits: &DecodeOptions,
    received_at: i64,
) -> Result<ExportProfilesServiceRequest, Failure> {
    let (recording, labels) = match boundary {
        Some(boundary) => form_parts(body, boundary, limits)?,
        None => (body, None),
    };
    let options = ConvertOptions {
        sample_rate: Some(query.sample_rate),
        time_range_nanos: time_range(query, received_at),
        labels: labels.as_ref(),
        decode: *limits,
        limits: Limits::default(),
    };
    let converted = convert(recording, &options).map_err(|error| Failure::from_jfr(&error))?;
    let otlp = jfr_to_otlp(
        &converted,
        &upload_resource(resource, &converted),
        None,
        &ToOtlpOptions::default(),
    );
    if let Some((index, error)) = otlp.rejected.first() {
        let kind = converted
            .profiles
            .get(*index)
            .map_or("?", |profile| profile.kind.name());
        return Err(Failure::BadRequest(format!(
            "the recording's {kind} profile cannot be converted: {error}"
        )));
    }
    Ok(otlp.request)
}

/// The `jfr` part of a form, and its `labels` part decoded.
fn form_parts<'a>(
    body: &'a [u8],
    boundary: &str,
    limits: &DecodeOptions,
) -> Result<(&'a [u8], Option<LabelsSnapshot>), Failure> {
    let parts = multipart::parts(body, boundary).map_err(|e| Failure::BadRequest(e.to_string()))?;
    let Some(jfr) = parts.iter().find(|part| part.name == "jfr") else {
        let names: Vec<String> = parts
            .iter()
            .map(|part| format!("{:?}", part.name))
            .collect();
        let held = if names.is_empty() {
            "it has no parts".to_owned()
        } else {
            format!("its parts: {}", names.join(", "))
        };
        return Err(Failure::BadRequest(format!(
            "the multipart/form-data body has no jfr part ({held})"
        )));
    };
    let labels = match parts.iter().find(|part| part.name == "labels") {
        Some(part) if !part.data.is_empty() => {
            Some(parse_labels_snapshot(part.data, limits).map_err(|e| labels_failure(&e))?)
        }
        _ => None,
    };
    Ok((jfr.data, labels))
}

/// `from` and `until` in nanoseconds; one of them missing is when the
/// upload arrived, as Pyroscope takes it. Neither: the recording's own.
fn time_range(query: &IngestQuery, received_at: i64) -> Option<(i64, i64)> {
    let nanos = |seconds: i64| seconds.saturating_mul(NANOS_PER_SECOND);
    match (query.from.map(nanos), query.until.map(nanos)) {
        (None, None) => None,
        (Some(from), Some(until)) => Some((from, until)),
        (Some(from), None) => Some((from, received_at.max(from))),
        (None, Some(until)) => Some((received_at.min(until), until)),
    }
}

/// The resource of every profile of an upload: `resource`, and as
/// Pyroscope labels each series it stores, `pyroscope.delta` `false` and
/// async-profiler's event. `jfr_to_otlp` adds each profile's metric.
fn upload_resource(resource: &[(String, String)], converted: &Converted) -> Vec<KeyValue> {
    let mut pairs = resource.to_vec();
    pairs.push((DELTA_ATTRIBUTE.to_owned(), "false".to_owned()));
    if let Some(event) = converted
        .profiler_event
        .as_deref()
        .filter(|e| !e.is_empty())
    {
        pairs.push((JFR_EVENT_ATTRIBUTE.to_owned(), event.to_owned()));
    }
    string_attributes(pairs)
}

fn is_size_limit(error: &DecodeError) -> bool {
    matches!(
        error,
        DecodeError::InputTooLarge { .. } | DecodeError::DecompressedTooLarge { .. }
    )
}

fn labels_failure(error: &LabelsError) -> Failure {
    match error {
        LabelsError::Gunzip(decode) if is_size_limit(decode) => {
            Failure::TooLarge(format!("the labels part: {error} (max_request_body_size)"))
        }
        LabelsError::NotSnapshot(_) => Failure::BadRequest(error.to_string()),
        _ => Failure::BadRequest(format!("cannot read the labels part: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use profbridge_jfr::{JfrProfile, ProfileKind};
    use profbridge_translate::otlp::{any_value, ResourceProfiles};

    use super::super::series::PROFILE_NAME_ATTRIBUTE;

    use super::*;

    fn query(pairs: &[(&str, &str)]) -> IngestQuery {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let parsed = IngestQuery::parse(&pairs);
        let Ok(parsed) = parsed else {
            unreachable!("{parsed:?}");
        };
        parsed
    }

    fn form(parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (name, data) in parts {
            body.extend_from_slice(
                format!("--b\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            body.extend_from_slice(data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--b--\r\n");
        body
    }

    fn refusal(body: &[u8], boundary: Option<&str>, max: usize) -> Failure {
        let limits = DecodeOptions {
            max_input_bytes: max,
            max_decompressed_bytes: max,
        };
        let result = jfr_request(&query(&[("name", "app")]), boundary, body, &[], &limits, 1);
        let Err(failure) = result else {
            unreachable!("{body:?} is refused");
        };
        failure
    }

    #[test]
    fn forms_without_a_recording_or_with_a_bad_snapshot_are_refused() {
        let failure = refusal(
            &form(&[("profile", b"x"), ("labels", b"")]),
            Some("b"),
            1 << 20,
        );
        assert!(matches!(failure, Failure::BadRequest(_)));
        assert!(
            failure
                .message()
                .contains("no jfr part (its parts: \"profile\", \"labels\")"),
            "{}",
            failure.message()
        );
        let failure = refusal(b"--b--\r\n", Some("b"), 1 << 20);
        assert!(failure.message().contains("no jfr part (it has no parts)"));
        let failure = refusal(
            &form(&[("jfr", b"FLR\0"), ("labels", b"\xff\xff\xff")]),
            Some("b"),
            1 << 20,
        );
        assert!(matches!(failure, Failure::BadRequest(_)));
        assert!(
            failure.message().contains("the labels part"),
            "{}",
            failure.message()
        );
        let failure = refusal(&form(&[("jfr", b"PK\x03\x04")]), Some("b"), 1 << 20);
        assert!(matches!(failure, Failure::BadRequest(_)));
        assert!(
            failure
                .message()
                .starts_with("cannot read the JFR recording: not a JFR"),
            "{}",
            failure.message()
        );
    }

    #[test]
    fn a_recording_past_the_limit_is_too_large() {
        let mut bomb = Vec::new();
        let mut encoder = flate2::write::GzEncoder::new(&mut bomb, flate2::Compression::best());
        assert!(encoder.write_all(&vec![0u8; 4 << 20]).is_ok());
        assert!(encoder.finish().is_ok());
        for (body, boundary) in [(form(&[("jfr", &bomb)]), Some("b")), (bomb.clone(), None)] {
            let failure = refusal(&body, boundary, 1 << 20);
            assert!(matches!(failure, Failure::TooLarge(_)), "{failure:?}");
        }
        let failure = refusal(
            &form(&[("jfr", b"FLR\0"), ("labels", &bomb)]),
            Some("b"),
            1 << 20,
        );
        assert!(matches!(failure, Failure::TooLarge(_)), "{failure:?}");
        assert!(failure.message().starts_with("the labels part"));
    }

    #[test]
    fn time_comes_from_from_and_until() {
        let received = 50 * NANOS_PER_SECOND;
        let range = |pairs: &[(&str, &str)]| {
            let mut all = vec![("name", "app")];
            all.extend_from_slice(pairs);
            time_range(&query(&all), received)
        };
        assert_eq!(range(&[]), None);
        assert_eq!(
            range(&[("from", "10"), ("until", "20")]),
            Some((10 * NANOS_PER_SECOND, 20 * NANOS_PER_SECOND))
        );
        assert_eq!(
            range(&[("from", "10")]),
            Some((10 * NANOS_PER_SECOND, received))
        );
        assert_eq!(
            range(&[("until", "20")]),
            Some((20 * NANOS_PER_SECOND, 20 * NANOS_PER_SECOND))
        );
    }

    fn texts(resource: &ResourceProfiles) -> Vec<(String, String)> {
        resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .map(|kv| {
                let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(any_value::Value::StringValue(text)) => text.clone(),
                    other => format!("{other:?}"),
                };
                (kv.key.clone(), value)
            })
            .collect()
    }

    #[test]
    fn each_profile_is_a_resource_named_as_pyroscope_names_its_series() {
        let profile = |kind, sample_type| {
            let parsed = profbridge_pprof::parse_folded(b"Burn.main;Burn.spin 3\n", sample_type);
            let Ok(profile) = parsed else {
                unreachable!("folded text parses");
            };
            JfrProfile {
                kind,
                profile,
                frame_kinds: Vec::new(),
            }
        };
        let converted = Converted {
            profiles: vec![
                profile(ProfileKind::Cpu, ("cpu", "nanoseconds")),
                profile(ProfileKind::AllocSample, ("alloc_sample_objects", "count")),
                profile(ProfileKind::Mutex, ("contentions", "count")),
            ],
            profiler_event: Some("itimer".to_owned()),
            ..Converted::default()
        };
        let resource = vec![
            ("env".to_owned(), "prod".to_owned()),
            ("service.name".to_owned(), "shop".to_owned()),
        ];
        let request = jfr_to_otlp(
            &converted,
            &upload_resource(&resource, &converted),
            None,
            &ToOtlpOptions::default(),
        )
        .request;
        let names: Vec<Vec<(String, String)>> =
            request.resource_profiles.iter().map(texts).collect();
        let expected = |metric: &str| {
            [
                ("env", "prod"),
                ("service.name", "shop"),
                (DELTA_ATTRIBUTE, "false"),
                (JFR_EVENT_ATTRIBUTE, "itimer"),
                (PROFILE_NAME_ATTRIBUTE, metric),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec()
        };
        assert_eq!(
            names,
            [
                expected("process_cpu"),
                expected("memory"),
                expected("mutex")
            ]
        );
        assert!(request
            .resource_profiles
            .iter()
            .all(|r| r.scope_profiles.len() == 1 && r.scope_profiles[0].profiles.len() == 1));
    }
}
