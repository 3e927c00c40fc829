use serde::Deserialize;

use crate::settings::server::{HttpConnectionSettings, HttpServerSettings};
use crate::settings::Problem;
use crate::settings::{EmbeddedPart, ExtensionRef, Options};

/// `receivers: pyroscope:` — Pyroscope's `POST /ingest` and push API.
/// Every key is a listener's: `endpoint` (Pyroscope's own port, 4040,
/// on loopback by default), `max_request_body_size` (as sent, after
/// Content-Encoding, and a gzipped profile after gunzip), `read_timeout`,
/// `tls`, `auth`, `read_header_timeout`, `idle_timeout` and
/// `max_connections`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PyroscopeReceiverConfig {
    #[serde(skip)]
    pub server: HttpServerSettings,
    #[serde(skip)]
    pub connection: HttpConnectionSettings,
}

impl Default for PyroscopeReceiverConfig {
    fn default() -> Self {
        Self {
            server: HttpServerSettings::at("127.0.0.1:4040"),
            connection: HttpConnectionSettings::default(),
        }
    }
}

impl PyroscopeReceiverConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = self.server.problems();
        problems.extend(self.connection.problems());
        problems
    }
}

impl Options for PyroscopeReceiverConfig {
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
