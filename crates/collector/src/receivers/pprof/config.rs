use serde::Deserialize;

use crate::settings::server::HttpListener;
use crate::settings::{Options, Problem};

/// `receivers: pprof:` — pprof and legacy profiles POSTed over HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PprofReceiverConfig {
    /// The path profiles are POSTed to.
    pub path: String,
    /// `endpoint` (127.0.0.1:4041 by default), `max_request_body_size`
    /// (as sent, after Content-Encoding, and a gzipped profile after
    /// gunzip), `read_timeout`, `tls`, `auth`, `read_header_timeout`,
    /// `idle_timeout` and `max_connections`, beside `path`.
    #[serde(skip)]
    pub listener: HttpListener,
}

impl Default for PprofReceiverConfig {
    fn default() -> Self {
        Self {
            path: "/v1/pprof".to_owned(),
            listener: HttpListener::at("127.0.0.1:4041"),
        }
    }
}

impl Options for PprofReceiverConfig {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if !self.path.starts_with('/') {
            problems.push(Problem::new(
                "path",
                format!("{:?} must start with /, like /v1/pprof", self.path),
            ));
        }
        problems.extend(self.listener.problems());
        problems
    }

    fn http_listener(&self) -> Option<&HttpListener> {
        Some(&self.listener)
    }

    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        Some(&mut self.listener)
    }
}
