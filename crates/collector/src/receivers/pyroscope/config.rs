use serde::Deserialize;

use crate::receivers::otlp::config::{
    http_listener_problems, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_HEADER_TIMEOUT, DEFAULT_READ_TIMEOUT,
};
use crate::settings::tls::{AuthConfig, ServerTlsConfig};
use crate::settings::units::{ByteSize, Duration};
use crate::settings::Problem;
use crate::settings::{ExtensionRef, Options};

/// `receivers: pyroscope:` — Pyroscope's `POST /ingest`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PyroscopeReceiverConfig {
    /// host:port to listen on; Pyroscope's own port by default.
    pub endpoint: String,
    /// Largest accepted body: as sent, after Content-Encoding, and a
    /// gzipped profile after gunzip.
    pub max_request_body_size: ByteSize,
    /// How long a request's head may take to arrive.
    pub read_header_timeout: Duration,
    /// How long a request's body may take to arrive, from when its head
    /// was read.
    pub read_timeout: Duration,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
    /// Connections open at once; at the cap, accepting waits until one
    /// closes.
    pub max_connections: u32,
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
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            tls: None,
            auth: None,
        }
    }
}

impl PyroscopeReceiverConfig {
    pub(crate) fn connection_limits(&self) -> crate::net::ConnectionLimits {
        crate::net::ConnectionLimits {
            max_connections: crate::net::count(self.max_connections),
            idle_timeout: self.idle_timeout.0,
        }
    }

    pub(crate) fn http_limits(&self) -> crate::net::HttpLimits {
        crate::net::HttpLimits {
            read_header_timeout: self.read_header_timeout.0,
            max_concurrent_streams: 100,
        }
    }

    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = if self.max_request_body_size.0 == 0 {
            vec![Problem::new("max_request_body_size", "must be more than 0")]
        } else {
            Vec::new()
        };
        problems.extend(http_listener_problems(
            self.read_header_timeout,
            self.read_timeout,
            self.idle_timeout,
            self.max_connections,
        ));
        problems.extend(crate::settings::tls::security_problems(
            self.tls.as_deref(),
            self.auth.as_deref(),
        ));
        problems
    }
}

impl Options for PyroscopeReceiverConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.auth
            .as_deref()
            .and_then(|auth| auth.extension_ref("auth"))
            .into_iter()
            .collect()
    }

    fn listeners(&self) -> Vec<(String, String)> {
        vec![("endpoint".to_owned(), self.endpoint.clone())]
    }
}
