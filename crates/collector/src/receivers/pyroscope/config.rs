use serde::Deserialize;

use crate::config::units::ByteSize;
use crate::processors::OptionProblem;
use crate::tls::config::{AuthConfig, ServerTlsConfig};

/// `receivers: pyroscope:` — Pyroscope's `POST /ingest`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PyroscopeReceiverConfig {
    /// host:port to listen on; Pyroscope's own port by default.
    pub endpoint: String,
    /// Largest accepted body: as sent, after Content-Encoding, and a
    /// gzipped profile after gunzip.
    pub max_request_body_size: ByteSize,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl Default for PyroscopeReceiverConfig {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4040".to_owned(),
            max_request_body_size: ByteSize(20 << 20),
            tls: None,
            auth: None,
        }
    }
}

impl PyroscopeReceiverConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<OptionProblem> {
        let mut problems = if self.max_request_body_size.0 == 0 {
            vec![OptionProblem::new(
                "max_request_body_size",
                "must be more than 0",
            )]
        } else {
            Vec::new()
        };
        problems.extend(crate::tls::config::security_problems(
            self.tls.as_deref(),
            self.auth.as_deref(),
        ));
        problems
    }
}
