use serde::Deserialize;

use super::units::Duration;
use super::Problem;

/// `service: telemetry:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    pub metrics: MetricsConfig,
    pub logs: LogsConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// host:port of the Prometheus /metrics, /health and /ready endpoint;
    /// empty turns it off.
    pub address: String,
    /// How long a request's head may take to arrive.
    pub read_header_timeout: Duration,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
    /// Connections open at once; at the cap, accepting waits until one
    /// closes.
    pub max_connections: u32,
}

impl MetricsConfig {
    /// Every problem in the connection options.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (path, value) in [
            ("read_header_timeout", self.read_header_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if value.0.is_zero() {
                problems.push(Problem::new(path, "must be more than 0"));
            }
        }
        if self.max_connections == 0 {
            problems.push(Problem::new("max_connections", "must be more than 0"));
        }
        problems
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            address: "127.0.0.1:8888".to_owned(),
            read_header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 64,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogEncoding {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogsConfig {
    /// error, warn, info, debug or trace.
    pub level: String,
    pub encoding: LogEncoding,
}

impl Default for LogsConfig {
    fn default() -> Self {
        Self {
            level: "info".to_owned(),
            encoding: LogEncoding::Text,
        }
    }
}
