//! `extensions: zpages:` options, as the Collector's zpagesextension has
//! them.

use serde::Deserialize;

use crate::settings::server::{HttpConnectionSettings, ListenerCap};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, Problem};

/// Where the Collector's zpages listen by default.
pub const DEFAULT_ENDPOINT: &str = "localhost:55679";

/// How long a connection may sit idle.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZPagesConfig {
    /// `host:port` to listen on.
    pub endpoint: String,
    /// `read_header_timeout`, `idle_timeout` and `max_connections`.
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
    /// Go's expvar page: accepted only when off.
    pub expvar: Expvar,
}

impl Default for ZPagesConfig {
    fn default() -> Self {
        Self {
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            connection: HttpConnectionSettings::for_endpoint(IDLE_TIMEOUT),
            expvar: Expvar::default(),
        }
    }
}

/// `expvar`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Expvar {
    pub enabled: bool,
}

impl Options for ZPagesConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.connection]
    }

    fn problems(&self) -> Vec<Problem> {
        // The endpoint is checked with every listener's.
        let mut problems = Vec::new();
        if self.expvar.enabled {
            problems.push(Problem::new(
                "expvar.enabled",
                "is not available in profbridge (expvar shows a Go runtime's variables); \
                 /metrics serves the process figures (profbridge_process_*)",
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
