//! `service: telemetry:` in the OpenTelemetry Collector's shape: `logs`
//! and `metrics` with the Collector's keys, and profbridge's own endpoint
//! options beside them.

mod logs;
mod metrics;

use serde::de::IgnoredAny;
use serde::Deserialize;

pub use logs::{FieldValue, LogEncoding, LogOutput, LogsConfig, SamplingConfig};
pub use metrics::{MetricsConfig, MetricsLevel, PrometheusConfig, DEFAULT_ADDRESS};

use super::embed::{deserialize_embedding, options_key_paths};
use super::parts::NestedSection;
use super::{Options, Problem};

/// `service: telemetry:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    pub metrics: MetricsConfig,
    pub logs: LogsConfig,
    /// The Collector's own spans: profbridge makes none.
    pub traces: Option<IgnoredAny>,
    /// Attributes of the Collector's own telemetry: profbridge's metrics
    /// carry none.
    pub resource: Option<IgnoredAny>,
}

impl TelemetryConfig {
    /// Every problem, with paths from `service.telemetry`.
    pub fn problems(&self) -> Vec<Problem> {
        let under = |section: &'static str, found: Vec<Problem>| {
            found.into_iter().map(move |problem| {
                Problem::new(
                    format!("service.telemetry.{section}.{}", problem.path),
                    problem.message,
                )
            })
        };
        let mut problems: Vec<Problem> = under("metrics", self.metrics.problems())
            .chain(under("logs", self.logs.problems()))
            .collect();
        if self.traces.is_some() {
            problems.push(Problem::new(
                "service.telemetry.traces",
                "not supported: profbridge does not trace itself; remove this section",
            ));
        }
        if self.resource.is_some() {
            problems.push(Problem::new(
                "service.telemetry.resource",
                "not supported: profbridge's own metrics and logs carry no resource \
                 attributes; remove this section (logs.initial_fields adds fields to \
                 every log line)",
            ));
        }
        problems
    }
}

impl Options for TelemetryConfig {
    fn nested_sections() -> Vec<NestedSection<Self>> {
        vec![NestedSection {
            path: &["metrics"],
            fill: |telemetry, value, path| {
                telemetry.metrics = deserialize_embedding(value, path)?;
                Ok(())
            },
            key_paths: options_key_paths::<MetricsConfig>,
        }]
    }
}
