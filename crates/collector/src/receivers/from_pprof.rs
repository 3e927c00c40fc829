//! What the receivers of pprof-family input share: a profile becomes one
//! OTLP request with the resource attributes the receiver found, and that
//! request goes to the pipelines through the receivers' intake.

use prost::Message;

use profbridge_pprof::{DecodeOptions, Profile};
use profbridge_translate::otlp::{
    key_value, string_value, AnyValue, ExportProfilesServiceRequest, KeyValue, KeyValueAndUnit,
    ProfilesDictionary,
};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpError, ToOtlpOptions};

use super::intake::{intake, Admission, Decision, DECODED_BYTES_PER_PROTOBUF_BYTE};
use crate::pipeline::PipelineHandle;
use crate::telemetry::ReceiverMetrics;

/// One pprof profile as a request under a resource with `resource`.
pub(crate) fn profile_request(
    profile: &Profile,
    resource: &[KeyValue],
) -> Result<ExportProfilesServiceRequest, ToOtlpError> {
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile,
            resource_attributes: resource,
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    match converted.rejected.into_iter().next() {
        Some((_, error)) => Err(error),
        None => Ok(converted.request),
    }
}

/// String resource attributes; a later pair replaces an earlier one with
/// the same key.
pub(crate) fn string_attributes(
    pairs: impl IntoIterator<Item = (String, String)>,
) -> Vec<KeyValue> {
    let mut attributes: Vec<KeyValue> = Vec::new();
    for (key, value) in pairs {
        attributes.retain(|kv| kv.key != key);
        attributes.push(key_value(key, string_value(value)));
    }
    attributes
}

/// Sets `attributes` on every resource of `request`, replacing those with
/// the same key.
pub(crate) fn set_resource_attributes(
    request: &mut ExportProfilesServiceRequest,
    attributes: &[KeyValue],
) {
    for resource_profiles in &mut request.resource_profiles {
        let existing = &mut resource_profiles
            .resource
            .get_or_insert_with(Default::default)
            .attributes;
        for attribute in attributes {
            existing.retain(|kv| kv.key != attribute.key);
            existing.push(attribute.clone());
        }
    }
}

/// Adds an attribute to every profile whose sample type is named
/// `sample_type` (every profile for `None`).
pub(crate) fn set_profile_attribute(
    request: &mut ExportProfilesServiceRequest,
    sample_type: Option<&str>,
    key: &str,
    value: &AnyValue,
) {
    let dictionary = request.dictionary.get_or_insert_with(Default::default);
    let mut entry = None;
    for profile in request
        .resource_profiles
        .iter_mut()
        .flat_map(|r| &mut r.scope_profiles)
        .flat_map(|s| &mut s.profiles)
    {
        let type_index = profile.sample_type.as_ref().map_or(0, |t| t.type_strindex);
        if sample_type.is_some_and(|name| string_at(dictionary, type_index) != name) {
            continue;
        }
        let index = *entry.get_or_insert_with(|| add_attribute(dictionary, key, value));
        profile.attribute_indices.push(index);
    }
}

fn string_at(dictionary: &ProfilesDictionary, index: i32) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| dictionary.string_table.get(i))
        .map_or("", String::as_str)
}

fn add_attribute(dictionary: &mut ProfilesDictionary, key: &str, value: &AnyValue) -> i32 {
    let key_strindex = i32::try_from(dictionary.string_table.len()).unwrap_or(i32::MAX);
    dictionary.string_table.push(key.to_owned());
    let index = i32::try_from(dictionary.attribute_table.len()).unwrap_or(i32::MAX);
    dictionary.attribute_table.push(KeyValueAndUnit {
        key_strindex,
        value: Some(value.clone()),
        unit_strindex: 0,
    });
    index
}

/// Limits for parsing input of at most `max` bytes: gzip inside may
/// decompress to `max` bytes too.
pub(crate) fn decode_limits(max: usize) -> DecodeOptions {
    DecodeOptions {
        max_input_bytes: max,
        max_decompressed_bytes: max,
    }
}

/// Room to hold in the pipelines while `input_len` bytes are parsed.
pub(crate) fn parse_estimate(input_len: usize) -> usize {
    input_len.saturating_mul(DECODED_BYTES_PER_PROTOBUF_BYTE)
}

/// [`intake`] for a request built here, which has no encoded size yet.
pub(crate) fn hand_over(
    request: ExportProfilesServiceRequest,
    pipelines: &[PipelineHandle],
    metrics: &ReceiverMetrics,
    admission: Admission,
) -> Decision {
    let encoded_size = request.encoded_len();
    intake(request, encoded_size, None, pipelines, metrics, admission)
}

/// Nanoseconds since the Unix epoch, for profiles that carry no time.
pub(crate) fn nanos_since_epoch(time: std::time::SystemTime) -> i64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
