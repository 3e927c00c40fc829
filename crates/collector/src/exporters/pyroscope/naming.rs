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

use profbridge_translate::otlp::KeyValue;

use crate::exporters::file::attribute_text;

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
