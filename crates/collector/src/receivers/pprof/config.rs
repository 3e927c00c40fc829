use serde::Deserialize;

use crate::settings::server::{HttpConnectionSettings, HttpServerSettings};
use crate::settings::Problem;
use crate::settings::{EmbeddedPart, ExtensionRef, Options};

/// `receivers: pprof:` — pprof and legacy profiles POSTed over HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PprofReceiverConfig {
    /// The path profiles are POSTed to.
    pub path: String,
    /// `endpoint` (127.0.0.1:4041 by default), `max_request_body_size`
    /// (as sent, after Content-Encoding, and a gzipped profile after
    /// gunzip), `read_timeout`, `tls` and `auth`, beside `path`.
    #[serde(skip)]
    pub server: HttpServerSettings,
    /// `read_header_timeout`, `idle_timeout` and `max_connections`.
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
}

impl Default for PprofReceiverConfig {
    fn default() -> Self {
        Self {
            path: "/v1/pprof".to_owned(),
            server: HttpServerSettings::at("127.0.0.1:4041"),
            connection: HttpConnectionSettings::default(),
        }
    }
}

impl PprofReceiverConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if !self.path.starts_with('/') {
            problems.push(Problem::new(
                "path",
                format!("{:?} must start with /, like /v1/pprof", self.path),
            ));
        }
        problems.extend(self.server.problems());
        problems.extend(self.connection.problems());
        problems
    }
}

impl Options for PprofReceiverConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.server.extension_ref("").into_iter().collect()
    }

    fn listeners(&self) -> Vec<(String, String)> {
        vec![("endpoint".to_owned(), self.server.endpoint.clone())]
    }

    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.server, &mut self.connection]
    }
}
