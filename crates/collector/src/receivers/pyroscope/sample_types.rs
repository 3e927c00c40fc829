//! Sample types: what folded uploads get for Pyroscope's `units`, and what
//! a `sample_type_config` part says about each sample type of a pprof.

use std::collections::BTreeMap;

use serde::Deserialize;

use profbridge_pprof::{Profile, ValueType};
use profbridge_translate::otlp::{bool_value, string_value, ExportProfilesServiceRequest};

use crate::receivers::from_pprof::set_profile_attribute;

/// Pyroscope `units` that folded input cannot have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("units {0:?} is not supported; use samples, objects, bytes, goroutines, lock_samples or lock_nanoseconds")]
pub(super) struct UnsupportedUnits(String);

/// A `sample_type_config` part that is not the JSON Pyroscope sends.
#[derive(Debug, thiserror::Error)]
#[error("sample_type_config: {0}")]
pub(super) struct SampleTypeConfigError(serde_json::Error);

/// The pprof `(type, unit)` of folded input, by Pyroscope's `units`.
pub(super) fn folded_sample_type(
    units: Option<&str>,
) -> Result<(&'static str, &'static str), UnsupportedUnits> {
    Ok(match units.unwrap_or("samples") {
        "samples" => ("samples", "count"),
        "objects" => ("objects", "count"),
        "bytes" => ("space", "bytes"),
        "goroutines" => ("goroutines", "count"),
        "lock_samples" => ("contentions", "count"),
        "lock_nanoseconds" => ("delay", "nanoseconds"),
        other => return Err(UnsupportedUnits(other.to_owned())),
    })
}

/// Makes CPU samples taken at `sample_rate` Hz look like a Go CPU profile:
/// period type cpu/nanoseconds, period one second over the rate, and a
/// second sample type cpu/nanoseconds worth samples × period.
pub(super) fn add_cpu_time(profile: &mut Profile, sample_rate: u32) {
    let period = 1_000_000_000 / i64::from(sample_rate.max(1));
    let cpu = ValueType {
        r#type: intern(profile, "cpu"),
        unit: intern(profile, "nanoseconds"),
    };
    profile.period_type = Some(cpu);
    profile.period = period;
    profile.sample_type.push(cpu);
    for sample in &mut profile.sample {
        let count = sample.value.first().copied().unwrap_or(0);
        sample.value.push(count.saturating_mul(period));
    }
}

fn intern(profile: &mut Profile, text: &str) -> i64 {
    let index = match profile.string_table.iter().position(|s| s == text) {
        Some(index) => index,
        None => {
            profile.string_table.push(text.to_owned());
            profile.string_table.len().saturating_sub(1)
        }
    };
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// What Pyroscope's `sample_type_config` says about one sample type.
#[derive(Debug, Default, Deserialize)]
pub(super) struct SampleTypeConfig {
    units: Option<String>,
    #[serde(rename = "display-name")]
    display_name: Option<String>,
    aggregation: Option<String>,
    cumulative: Option<bool>,
    sampled: Option<bool>,
}

/// By pprof sample type name.
pub(super) type SampleTypeConfigs = BTreeMap<String, SampleTypeConfig>;

pub(super) fn parse_sample_type_config(
    bytes: &[u8],
) -> Result<SampleTypeConfigs, SampleTypeConfigError> {
    serde_json::from_slice(bytes).map_err(SampleTypeConfigError)
}

/// Records each configured sample type's settings as attributes of the
/// OTLP profile of that type: `pyroscope.units`, `pyroscope.display_name`,
/// `pyroscope.aggregation`, `pyroscope.cumulative`, `pyroscope.sampled`.
pub(super) fn record_sample_type_config(
    request: &mut ExportProfilesServiceRequest,
    configs: &SampleTypeConfigs,
) {
    for (sample_type, config) in configs {
        let texts = [
            ("pyroscope.units", &config.units),
            ("pyroscope.display_name", &config.display_name),
            ("pyroscope.aggregation", &config.aggregation),
        ];
        for (key, value) in texts {
            if let Some(value) = value {
                set_profile_attribute(request, Some(sample_type), key, &string_value(value));
            }
        }
        let flags = [
            ("pyroscope.cumulative", config.cumulative),
            ("pyroscope.sampled", config.sampled),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                set_profile_attribute(request, Some(sample_type), key, &bool_value(value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_pprof::parse_folded;

    #[test]
    fn cpu_samples_gain_cpu_time() {
        let Ok(mut profile) = parse_folded(b"main;work 3\nmain 1\n", ("samples", "count")) else {
            unreachable!("folded text parses");
        };
        add_cpu_time(&mut profile, 100);
        assert_eq!(profile.period, 10_000_000);
        let values: Vec<Vec<i64>> = profile.sample.iter().map(|s| s.value.clone()).collect();
        assert_eq!(values, [vec![3, 30_000_000], vec![1, 10_000_000]]);
        assert!(profbridge_pprof::validate(&profile).is_ok());
    }

    #[test]
    fn units_map_to_sample_types() {
        assert_eq!(folded_sample_type(None), Ok(("samples", "count")));
        assert_eq!(folded_sample_type(Some("bytes")), Ok(("space", "bytes")));
        assert!(folded_sample_type(Some("parsecs"))
            .is_err_and(|e| e.to_string().contains("\"parsecs\"")));
    }

    #[test]
    fn the_config_reads_pyroscope_keys() {
        let configs = parse_sample_type_config(
            br#"{"inuse_space": {"units": "bytes", "aggregation": "average", "display-name": "inuse", "sampled": false, "future": 1}}"#,
        );
        let Ok(configs) = configs else {
            unreachable!("{configs:?}");
        };
        let inuse = configs.get("inuse_space");
        assert!(
            inuse.is_some_and(|c| c.aggregation.as_deref() == Some("average")
                && c.display_name.as_deref() == Some("inuse")
                && c.sampled == Some(false))
        );
        assert!(parse_sample_type_config(b"[1]")
            .is_err_and(|e| e.to_string().starts_with("sample_type_config: ")));
    }
}
