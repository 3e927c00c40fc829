//! `extensions: health_check:` options, as the Collector's
//! healthcheckextension has them.

use serde::Deserialize;

use crate::settings::server::{HttpConnectionSettings, ListenerCap};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, Problem};

/// Where the Collector's health check listens by default.
pub const DEFAULT_ENDPOINT: &str = "localhost:13133";

/// How long a health check connection may sit idle.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthCheckConfig {
    /// `host:port` to listen on.
    pub endpoint: String,
    /// `read_header_timeout`, `idle_timeout` and `max_connections`.
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
    /// Where the status is served; a path ending in `/` also answers every
    /// path under it, as Go's HTTP mux does.
    pub path: String,
    /// Bodies to send instead of the JSON status.
    pub response_body: Option<ResponseBody>,
    /// The Collector's deprecated exporter-failure check: accepted only
    /// when off.
    pub check_collector_pipeline: CheckCollectorPipeline,
}

impl Default for HealthCheckConfig {
    fn default() -> Self {
        Self {
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            connection: HttpConnectionSettings::for_endpoint(IDLE_TIMEOUT),
            path: "/".to_owned(),
            response_body: None,
            check_collector_pipeline: CheckCollectorPipeline::default(),
        }
    }
}

/// `response_body`: the body when healthy and when not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponseBody {
    pub healthy: String,
    pub unhealthy: String,
}

/// `check_collector_pipeline`; its other keys are read and ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckCollectorPipeline {
    pub enabled: bool,
    pub interval: String,
    pub exporter_failure_threshold: i64,
}

impl Default for CheckCollectorPipeline {
    fn default() -> Self {
        Self {
            enabled: false,
            interval: "5m".to_owned(),
            exporter_failure_threshold: 5,
        }
    }
}

impl Options for HealthCheckConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.connection]
    }

    fn problems(&self) -> Vec<Problem> {
        // An empty or malformed endpoint is reported by the listener check,
        // as every listener's is.
        let mut problems = Vec::new();
        if !self.path.starts_with('/') {
            problems.push(Problem::new("path", "must start with /"));
        }
        if self.check_collector_pipeline.enabled {
            problems.push(Problem::new(
                "check_collector_pipeline.enabled",
                "is not available in profbridge (the Collector deprecated it); \
                 alert on profbridge_exporter_send_failed_profiles_total from /metrics instead",
            ));
        }
        problems.extend(self.connection.problems());
        problems
    }

    fn listeners(&self) -> Vec<(String, String)> {
        vec![("endpoint".to_owned(), self.endpoint.clone())]
    }

    fn connection_caps(&self) -> Vec<ListenerCap> {
        vec![ListenerCap::at("", self.connection.max_connections)]
    }
}
