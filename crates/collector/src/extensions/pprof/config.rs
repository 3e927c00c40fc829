//! `extensions: pprof:` options, as the Collector's pprofextension has
//! them.

use std::path::PathBuf;

use serde::Deserialize;

use crate::settings::server::{HttpConnectionSettings, ListenerCap};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, OwnedFile, Problem};

/// Where the Collector's pprof extension listens by default. An empty or
/// malformed `endpoint` is refused with every listener's.
pub const DEFAULT_ENDPOINT: &str = "localhost:1777";

/// How long a connection may sit idle; more than the longest profile,
/// which sends nothing until it is done.
const IDLE_TIMEOUT: Duration = Duration::from_secs(super::http::MAX_SECONDS + 60);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PprofConfig {
    /// `host:port` to listen on.
    pub endpoint: String,
    /// `read_header_timeout`, `idle_timeout` and `max_connections`.
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
    /// Go's block profile rate. A Rust process has no Go runtime to set it
    /// on: read, and warned about at start when above 0.
    pub block_profile_fraction: i64,
    /// Go's mutex profile fraction: read, and warned about at start when
    /// above 0, as `block_profile_fraction`.
    pub mutex_profile_fraction: i64,
    /// A file to write a CPU profile of the whole run to, at shutdown;
    /// empty for none.
    pub save_to_file: String,
}

impl Default for PprofConfig {
    fn default() -> Self {
        Self {
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            connection: HttpConnectionSettings::for_endpoint(IDLE_TIMEOUT),
            block_profile_fraction: 0,
            mutex_profile_fraction: 0,
            save_to_file: String::new(),
        }
    }
}

impl PprofConfig {
    /// The file `save_to_file` names, when it names one.
    pub fn save_to(&self) -> Option<PathBuf> {
        (!self.save_to_file.is_empty()).then(|| PathBuf::from(&self.save_to_file))
    }

    /// The Go runtime options that were set, which have no effect here.
    pub fn go_only_options_set(&self) -> Vec<&'static str> {
        [
            ("block_profile_fraction", self.block_profile_fraction),
            ("mutex_profile_fraction", self.mutex_profile_fraction),
        ]
        .into_iter()
        .filter(|(_, value)| *value > 0)
        .map(|(key, _)| key)
        .collect()
    }
}

impl Options for PprofConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.connection]
    }

    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if !self.save_to_file.is_empty() && self.save_to_file.trim().is_empty() {
            problems.push(Problem::new(
                "save_to_file",
                "is blank; name a file, or leave it out",
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

    fn owned_file(&self, _id: &str) -> Option<OwnedFile> {
        Some(OwnedFile {
            key: "save_to_file",
            path: self.save_to()?,
            owner: "pprof extension",
        })
    }
}
