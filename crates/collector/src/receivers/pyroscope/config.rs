use serde::Deserialize;

use crate::settings::server::HttpListener;
use crate::settings::Options;

/// `receivers: pyroscope:` — Pyroscope's `POST /ingest` and push API.
/// Every key is its listener's: `endpoint` (Pyroscope's own port, 4040,
/// on loopback by default), `max_request_body_size` (as sent, after
/// Content-Encoding, and a gzipped profile after gunzip), `read_timeout`,
/// `tls`, `auth`, `read_header_timeout`, `idle_timeout` and
/// `max_connections`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PyroscopeReceiverConfig {
    #[serde(skip)]
    pub listener: HttpListener,
}

impl Default for PyroscopeReceiverConfig {
    fn default() -> Self {
        Self {
            listener: HttpListener::at("127.0.0.1:4040"),
        }
    }
}

impl Options for PyroscopeReceiverConfig {
    fn http_listener(&self) -> Option<&HttpListener> {
        Some(&self.listener)
    }

    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        Some(&mut self.listener)
    }
}
