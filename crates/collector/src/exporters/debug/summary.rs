//! The lines the debug exporter logs.

use profbridge_translate::otlp::{Profile, ProfilesDictionary, Sample};

use super::config::Verbosity;
use crate::exporters::attributes::{attribute_text, resource_attributes, sample_type};
use crate::pipeline::Profiles;

/// The lines describing `batch`:
/// - `basic`: one for the request (resources, profiles, samples, bytes);
/// - `normal`: also one per profile (service, sample type, samples, total);
/// - `detailed`: also one per sample (stack depth, value, attributes).
///
/// A sample's value is the sum of its values, or its timestamp count when
/// it has timestamps only. Text from the request is escaped, so a line
/// stays one line.
pub fn summarize(batch: &Profiles, verbosity: Verbosity) -> Vec<String> {
    let request = batch.request();
    let mut lines = vec![format!(
        "profiles request: {} resources, {} profiles, {} samples, {} bytes",
        request.resource_profiles.len(),
        batch.profile_count(),
        batch.sample_count(),
        batch.encoded_size
    )];
    if verbosity == Verbosity::Basic {
        return lines;
    }
    let dictionary = request.dictionary.as_ref();
    for (r, resource) in request.resource_profiles.iter().enumerate() {
        let service = attribute_text(&resource_attributes(resource, dictionary), "service.name")
            .unwrap_or_else(|| "unknown".to_owned());
        for (s, scope) in resource.scope_profiles.iter().enumerate() {
            for (p, profile) in scope.profiles.iter().enumerate() {
                lines.push(profile_line(
                    &format!("resource {r}, scope {s}, profile {p}"),
                    &service,
                    profile,
                    dictionary,
                ));
                if verbosity == Verbosity::Detailed {
                    lines.extend(
                        profile
                            .samples
                            .iter()
                            .enumerate()
                            .map(|(i, sample)| sample_line(i, sample, dictionary)),
                    );
                }
            }
        }
    }
    lines
}

fn profile_line(
    place: &str,
    service: &str,
    profile: &Profile,
    dictionary: Option<&ProfilesDictionary>,
) -> String {
    let (kind, unit) = sample_type(profile, dictionary);
    let total = profile.samples.iter().fold(0_i64, |sum, sample| {
        sum.saturating_add(sample_value(sample))
    });
    let sample_type = format!("{kind}/{unit}");
    format!(
        "{place}: service.name={service:?} sample_type={} samples={} total={total}",
        sample_type.escape_debug(),
        profile.samples.len()
    )
}

fn sample_line(index: usize, sample: &Sample, dictionary: Option<&ProfilesDictionary>) -> String {
    let depth = dictionary
        .zip(usize::try_from(sample.stack_index).ok())
        .and_then(|(d, i)| d.stack_table.get(i))
        .map_or(0, |stack| stack.location_indices.len());
    format!(
        "  sample {index}: depth={depth} value={} attributes={}",
        sample_value(sample),
        sample.attribute_indices.len()
    )
}

fn sample_value(sample: &Sample) -> i64 {
    if sample.values.is_empty() {
        i64::try_from(sample.timestamps_unix_nano.len()).unwrap_or(i64::MAX)
    } else {
        sample
            .values
            .iter()
            .fold(0_i64, |sum, value| sum.saturating_add(*value))
    }
}
