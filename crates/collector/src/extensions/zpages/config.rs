//! `extensions: zpages:` options, as the Collector's zpagesextension has
//! them.

use serde::Deserialize;

use crate::settings::{Options, Problem};

/// Where the Collector's zpages listen by default.
pub const DEFAULT_ENDPOINT: &str = "localhost:55679";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZPagesConfig {
    /// `host:port` to listen on.
    pub endpoint: String,
    /// Go's expvar page: accepted only when off.
    pub expvar: Expvar,
}

impl Default for ZPagesConfig {
    fn default() -> Self {
        Self {
            endpoint: DEFAULT_ENDPOINT.to_owned(),
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
        problems
    }

    fn listeners(&self) -> Vec<(String, String)> {
        vec![("endpoint".to_owned(), self.endpoint.clone())]
    }
}
