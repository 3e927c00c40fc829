use serde::Deserialize;

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
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            address: "127.0.0.1:8888".to_owned(),
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
