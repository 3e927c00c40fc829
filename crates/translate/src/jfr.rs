//! JFR recordings into one OTLP request: each profile the recording made
//! (profbridge-jfr) under a resource of its own that names Pyroscope's
//! metric (`pyroscope.profile_name`), its locations typed
//! `profile.frame.type` (`jvm`, `native`, `kernel`), and the recording
//! itself as the first profile's `original_payload` (format `jfr`) when the
//! options ask.

use profbridge_jfr::Converted;

use crate::otlp::{key_value, string_value, KeyValue};
use crate::reserved::frame_types::label_frame_types;
use crate::to_otlp::{pprof_to_otlp, PprofInput, PprofToOtlp, ToOtlpOptions};

/// `original_payload_format` of a recording kept whole.
pub const JFR_PAYLOAD_FORMAT: &str = "jfr";

/// The resource attribute that names a profile's Pyroscope metric
/// (`process_cpu`, `memory`...), the `__name__` of its series; the
/// Pyroscope receiver and exporter use the same key.
pub const PYROSCOPE_PROFILE_NAME: &str = "pyroscope.profile_name";

/// Every profile of `converted`, each under a resource with `resource`
/// and its metric as [`PYROSCOPE_PROFILE_NAME`] (replacing one `resource`
/// has); `recording` is kept as the first profile's original payload when
/// `options.original_payload` is set.
pub fn jfr_to_otlp(
    converted: &Converted,
    resource: &[KeyValue],
    recording: Option<&[u8]>,
    options: &ToOtlpOptions,
) -> PprofToOtlp {
    let typed: Vec<_> = converted
        .profiles
        .iter()
        .map(|jfr| {
            let mut profile = jfr.profile.clone();
            label_frame_types(&mut profile, |id| {
                let index = usize::try_from(id).ok()?.checked_sub(1)?;
                jfr.frame_kinds.get(index).map(|kind| kind.otel_name())
            });
            profile
        })
        .collect();
    let resources: Vec<Vec<KeyValue>> = converted
        .profiles
        .iter()
        .map(|jfr| {
            let mut attributes: Vec<KeyValue> = resource
                .iter()
                .filter(|kv| kv.key != PYROSCOPE_PROFILE_NAME)
                .cloned()
                .collect();
            attributes.push(key_value(
                PYROSCOPE_PROFILE_NAME,
                string_value(jfr.kind.metric()),
            ));
            attributes
        })
        .collect();
    let inputs: Vec<_> = typed
        .iter()
        .zip(&resources)
        .enumerate()
        .map(|(position, (profile, resource))| PprofInput {
            profile,
            resource_attributes: resource,
            scope: None,
            original_payload: recording.filter(|_| position == 0),
        })
        .collect();
    let options = ToOtlpOptions {
        original_payload_format: JFR_PAYLOAD_FORMAT.to_owned(),
        ..options.clone()
    };
    pprof_to_otlp(&inputs, &options)
}
