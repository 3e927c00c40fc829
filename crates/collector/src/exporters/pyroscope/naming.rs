//! What Pyroscope's `/ingest` wants in its query: the `name` (application
//! name and labels, `app{k=v,…}`) and the `from`/`until` window in Unix
//! seconds.
//!
//! Pyroscope parses `name` without any escaping: the application name ends
//! at the first `{`, a label name at `=`, a label value at `,` or `}`, and
//! each is trimmed of spaces. Application names may hold ASCII letters,
//! digits and `_ . - /`; label names ASCII letters, digits, `_` and `.`.
//! Its storage then holds labels to Prometheus' rules (letters, digits and
//! `_`, not starting with a digit; `__` names are internal). So:
//!
//! - the application name keeps those characters and turns any other into
//!   `_`; empty or missing, it is [`UNKNOWN_SERVICE`];
//! - a label name is the attribute key with every character but ASCII
//!   letters, digits and `_` turned into `_`, and `_` put first when it
//!   starts with a digit (`host.name` → `host_name`);
//! - a label value has `,`, `}` and control characters turned into `_` and
//!   spaces at either end removed; a label with an empty value is left out.

use std::time::{SystemTime, UNIX_EPOCH};

use profbridge_pprof::Profile;
use profbridge_translate::otlp::KeyValue;

use crate::exporters::attributes::attribute_text;
use crate::protocol::push_v1::{
    LabelPair, LABEL_DELTA, LABEL_PROFILE_NAME, LABEL_SERVICE_NAME, LABEL_SESSION_ID,
};
use crate::protocol::pyroscope_attributes::{
    DELTA_ATTRIBUTE, PROFILE_NAME_ATTRIBUTE, SESSION_ID_ATTRIBUTE,
};

/// The application name of resources without one, as OpenTelemetry SDKs
/// name services they know nothing about.
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// Label names Pyroscope sets itself (names starting with `__` are
/// reserved too).
pub(crate) const RESERVED_LABEL_NAMES: [&str; 2] = ["service_name", "pyroscope_spy"];

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// The label name an attribute key becomes.
pub(crate) fn label_name(key: &str) -> String {
    let mut name: String = key
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// An application name Pyroscope accepts.
pub(crate) fn application_name(text: Option<&str>) -> String {
    let text = text.map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return UNKNOWN_SERVICE.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A label value Pyroscope reads back as it was given (but for the
/// characters it cannot carry).
pub(crate) fn label_value(text: &str) -> String {
    text.trim()
        .chars()
        .map(|c| {
            if matches!(c, ',' | '}') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// How a resource's attributes become a `name`.
#[derive(Debug, Clone)]
pub(crate) struct Naming {
    pub application_name_attribute: String,
    /// Attribute key and the label name it becomes, in configured order.
    pub labels: Vec<(String, String)>,
}

impl Naming {
    pub fn new(application_name_attribute: &str, label_keys: &[String]) -> Self {
        Self {
            application_name_attribute: application_name_attribute.trim().to_owned(),
            labels: label_keys
                .iter()
                .map(|key| (key.trim().to_owned(), label_name(key)))
                .collect(),
        }
    }

    /// `app{k=v,…}` for a resource with these (resolved) attributes; labels
    /// in configured order, those the resource lacks left out.
    pub fn name(&self, attributes: &[KeyValue]) -> String {
        let application = attribute_text(attributes, &self.application_name_attribute);
        let mut name = application_name(application.as_deref());
        name.push('{');
        let mut first = true;
        for (key, label) in &self.labels {
            let Some(value) = attribute_text(attributes, key) else {
                continue;
            };
            let value = label_value(&value);
            if value.is_empty() {
                continue;
            }
            if !first {
                name.push(',');
            }
            first = false;
            name.push_str(label);
            name.push('=');
            name.push_str(&value);
        }
        name.push('}');
        name
    }
}

impl Naming {
    /// The labels of the series a pprof is pushed as (push API):
    /// `__name__` (the resource's `pyroscope.profile_name`, else
    /// [`profile_name`] of the pprof), `service_name` (the application
    /// name, as for `/ingest`), `pyroscope_spy`, the configured labels in
    /// order (values trimmed; those left empty are left out), and
    /// `__delta__` and `__session_id__` when the resource carries them
    /// (`pyroscope.delta` `true` or `false`, `pyroscope.session_id`),
    /// as the push receiver records them.
    pub fn push_labels(&self, attributes: &[KeyValue], profile: &Profile) -> Vec<LabelPair> {
        let name = attribute_text(attributes, PROFILE_NAME_ATTRIBUTE)
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| profile_name(profile).to_owned());
        let application = attribute_text(attributes, &self.application_name_attribute);
        let mut labels = vec![
            LabelPair::new(LABEL_PROFILE_NAME, name),
            LabelPair::new(LABEL_SERVICE_NAME, application_name(application.as_deref())),
            LabelPair::new("pyroscope_spy", super::SPY_NAME),
        ];
        for (key, label) in &self.labels {
            let Some(value) = attribute_text(attributes, key) else {
                continue;
            };
            let value = value.trim();
            if !value.is_empty() {
                labels.push(LabelPair::new(label.clone(), value));
            }
        }
        if let Some(delta) = attribute_text(attributes, DELTA_ATTRIBUTE)
            .map(|delta| delta.trim().to_ascii_lowercase())
            .filter(|delta| delta == "true" || delta == "false")
        {
            labels.push(LabelPair::new(LABEL_DELTA, delta));
        }
        if let Some(session) = attribute_text(attributes, SESSION_ID_ATTRIBUTE)
            .map(|session| session.trim().to_owned())
            .filter(|session| !session.is_empty())
        {
            labels.push(LabelPair::new(LABEL_SESSION_ID, session));
        }
        labels
    }
}

/// The profile name (`__name__`) Pyroscope's SDKs give a profile with these
/// sample types: `memory` for allocations and heap (`alloc_*`, `inuse_*`,
/// `space`, `objects`), `goroutine`, `block` for contentions and delay
/// (Go's block and mutex profiles have the same sample types; both come
/// out as `block`), `wall`, `process_cpu` for CPU time and samples; any
/// other profile is named after its first sample type, in the characters
/// a metric name may hold.
pub(crate) fn profile_name(profile: &Profile) -> String {
    let text = |index: i64| {
        usize::try_from(index)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .map_or("", String::as_str)
    };
    let types: Vec<&str> = profile
        .sample_type
        .iter()
        .map(|sample_type| text(sample_type.r#type))
        .collect();
    let any = |names: &[&str]| types.iter().any(|t| names.contains(t));
    let name = if any(&[
        "alloc_objects",
        "alloc_space",
        "inuse_objects",
        "inuse_space",
        "space",
        "objects",
    ]) {
        "memory"
    } else if any(&["goroutine", "goroutines"]) {
        "goroutine"
    } else if any(&["contentions", "delay"]) {
        "block"
    } else if any(&["wall"]) {
        "wall"
    } else if any(&["cpu", "samples"]) {
        "process_cpu"
    } else {
        let first: String = types
            .first()
            .copied()
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        return if first.is_empty() || first.starts_with(|c: char| c.is_ascii_digit()) {
            format!("profile{first}")
        } else {
            first
        };
    };
    name.to_owned()
}

/// `from` and `until` in Unix seconds for a pprof's `time_nanos` and
/// `duration_nanos`: from the second the profile starts in to the second
/// its end falls in, rounded up, and at least one second. A profile without
/// a time is taken to end when the collector received it (Pyroscope then
/// gives it the time `from`).
pub(crate) fn time_window(
    time_nanos: i64,
    duration_nanos: i64,
    received_at: SystemTime,
) -> (u64, u64) {
    let duration = u64::try_from(duration_nanos).unwrap_or(0);
    let (from, until) = match u64::try_from(time_nanos) {
        Ok(start) if start > 0 => (
            start / NANOS_PER_SECOND,
            start.saturating_add(duration).div_ceil(NANOS_PER_SECOND),
        ),
        _ => {
            let received = received_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs());
            (
                received.saturating_sub(duration.div_ceil(NANOS_PER_SECOND)),
                received,
            )
        }
    };
    (from, until.max(from.saturating_add(1)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use profbridge_translate::otlp::{int_value, key_value, string_value};

    use super::*;

    #[test]
    fn label_names_follow_prometheus_rules() {
        assert_eq!(label_name("host.name"), "host_name");
        assert_eq!(label_name("k8s.pod.name"), "k8s_pod_name");
        assert_eq!(label_name("9lives"), "_9lives");
        assert_eq!(label_name("a-b c/é"), "a_b_c__");
    }

    #[test]
    fn application_names_keep_what_pyroscope_allows() {
        assert_eq!(
            application_name(Some("checkout-api/v2.1")),
            "checkout-api/v2.1"
        );
        assert_eq!(application_name(Some(" my app{x} ")), "my_app_x_");
        assert_eq!(application_name(Some("  ")), UNKNOWN_SERVICE);
        assert_eq!(application_name(None), UNKNOWN_SERVICE);
    }

    #[test]
    fn names_carry_the_configured_labels_in_order() {
        let naming = Naming::new(
            "service.name",
            &[
                "deployment.environment".to_owned(),
                "host.name".to_owned(),
                "missing".to_owned(),
                "shard".to_owned(),
                "blank".to_owned(),
            ],
        );
        let attributes = vec![
            key_value("service.name", string_value("cart")),
            key_value("host.name", string_value(" node-1,rack{2} ")),
            key_value("deployment.environment", string_value("prod")),
            key_value("shard", int_value(7)),
            key_value("blank", string_value("  ")),
        ];
        assert_eq!(
            naming.name(&attributes),
            "cart{deployment_environment=prod,host_name=node-1_rack{2_,shard=7}"
        );
        assert_eq!(naming.name(&[]), "unknown_service{}");
    }

    fn profile_of(types: &[&str]) -> Profile {
        let mut profile = Profile {
            string_table: vec![String::new(), "count".to_owned()],
            ..Profile::default()
        };
        for name in types {
            profile.string_table.push((*name).to_owned());
            profile.sample_type.push(profbridge_pprof::ValueType {
                r#type: i64::try_from(profile.string_table.len() - 1).unwrap(),
                unit: 1,
            });
        }
        profile
    }

    #[test]
    fn profile_names_follow_the_sdks() {
        let name = |types: &[&str]| profile_name(&profile_of(types));
        assert_eq!(name(&["samples", "cpu"]), "process_cpu");
        assert_eq!(name(&["cpu"]), "process_cpu");
        assert_eq!(
            name(&[
                "alloc_objects",
                "alloc_space",
                "inuse_objects",
                "inuse_space"
            ]),
            "memory"
        );
        assert_eq!(name(&["goroutine"]), "goroutine");
        assert_eq!(name(&["contentions", "delay"]), "block");
        assert_eq!(name(&["wall", "samples"]), "wall");
        assert_eq!(name(&["exceptions"]), "exceptions");
        assert_eq!(name(&["lock-time"]), "lock_time");
        assert_eq!(name(&[]), "profile");
    }

    #[test]
    fn push_labels_name_the_series() {
        let naming = Naming::new(
            "service.name",
            &["host.name".to_owned(), "blank".to_owned()],
        );
        let attributes = vec![
            key_value("service.name", string_value("cart api")),
            key_value("host.name", string_value(" node-1,rack} ")),
            key_value("blank", string_value(" ")),
            key_value("pyroscope.delta", string_value("FALSE")),
            key_value("pyroscope.session_id", string_value("0011223344556677")),
        ];
        let labels: Vec<(String, String)> = naming
            .push_labels(&attributes, &profile_of(&["samples", "cpu"]))
            .into_iter()
            .map(|label| (label.name, label.value))
            .collect();
        let expected = [
            ("__name__", "process_cpu"),
            ("service_name", "cart_api"),
            ("pyroscope_spy", "profbridge"),
            ("host_name", "node-1,rack}"),
            ("__delta__", "false"),
            ("__session_id__", "0011223344556677"),
        ];
        assert_eq!(labels, expected.map(|(k, v)| (k.to_owned(), v.to_owned())));
        let named = vec![key_value("pyroscope.profile_name", string_value("memory"))];
        let labels = naming.push_labels(&named, &profile_of(&["samples"]));
        assert_eq!(labels[0], LabelPair::new("__name__", "memory"));
        assert_eq!(labels[1], LabelPair::new("service_name", UNKNOWN_SERVICE));
    }

    #[test]
    fn time_windows_cover_the_profile_in_whole_seconds() {
        let received = UNIX_EPOCH + Duration::from_secs(2_000);
        // 1000.5 s for 10 s: seconds 1000 to 1011.
        assert_eq!(
            time_window(1_000_500_000_000, 10_000_000_000, received),
            (1000, 1011)
        );
        // On whole seconds, and with no duration: at least one second.
        assert_eq!(
            time_window(1_000_000_000_000, 10_000_000_000, received),
            (1000, 1010)
        );
        assert_eq!(time_window(1_000_000_000_000, 0, received), (1000, 1001));
        assert_eq!(time_window(1_000_000_000_000, -5, received), (1000, 1001));
        // No time: ending when received.
        assert_eq!(time_window(0, 30_000_000_000, received), (1970, 2000));
        assert_eq!(time_window(-1, 0, received), (2000, 2001));
    }
}
