use serde::Deserialize;

use crate::config::units::ByteSize;
use crate::processors::OptionProblem;
use crate::tls::config::{AuthConfig, ServerTlsConfig};

/// `receivers: pprof:` — pprof and legacy profiles POSTed over HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PprofReceiverConfig {
    /// host:port to listen on.
    pub endpoint: String,
    /// The path profiles are POSTed to.
    pub path: String,
    /// Largest accepted body: as sent, after Content-Encoding, and a
    /// gzipped profile after gunzip.
    pub max_request_body_size: ByteSize,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl Default for PprofReceiverConfig {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4041".to_owned(),
            path: "/v1/pprof".to_owned(),
            max_request_body_size: ByteSize(20 << 20),
            tls: None,
            auth: None,
        }
    }
}

impl PprofReceiverConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<OptionProblem> {
        let mut problems = Vec::new();
        if !self.path.starts_with('/') {
            problems.push(OptionProblem::new(
                "path",
                format!("{:?} must start with /, like /v1/pprof", self.path),
            ));
        }
        if self.max_request_body_size.0 == 0 {
            problems.push(OptionProblem::new(
                "max_request_body_size",
                "must be more than 0",
            ));
        }
        problems.extend(crate::tls::config::security_problems(
            self.tls.as_deref(),
            self.auth.as_deref(),
        ));
        problems
    }
}
