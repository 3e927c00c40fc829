use std::collections::BTreeMap;

use serde::Deserialize;

use crate::exporters::helper::config::{ExporterHelperConfig, RetryConfig, SendingQueueConfig};
use crate::settings::units::Duration;
use crate::settings::{Options, Problem};

/// Default time one export attempt may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// `exporters: otlp:` — OTLP over gRPC.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpExporterConfig {
    /// `host:port`, `http://host:port` (plaintext) or `https://host:port` (TLS).
    pub endpoint: String,
    pub tls: TlsConfig,
    /// Sent with every export as gRPC metadata.
    pub headers: BTreeMap<String, String>,
    pub compression: Compression,
    /// How long one attempt may take, connecting included.
    pub timeout: Duration,
    pub sending_queue: SendingQueueConfig,
    pub retry_on_failure: RetryConfig,
    /// Where requests that cannot be delivered are kept.
    pub dead_letter: Option<String>,
}

impl Default for OtlpExporterConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            tls: TlsConfig::default(),
            headers: BTreeMap::new(),
            compression: Compression::default(),
            timeout: DEFAULT_TIMEOUT,
            sending_queue: SendingQueueConfig::default(),
            retry_on_failure: RetryConfig::default(),
            dead_letter: None,
        }
    }
}

/// `tls:` of the OTLP exporters, in the OpenTelemetry Collector's shape.
///
/// Whether TLS is used: `https://` endpoints always, `http://` endpoints
/// never; without a scheme, when `insecure` is `false` or any other option
/// is set. Options that contradict the endpoint are configuration errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// `true`: plaintext; `false`: TLS. Unset: decided as described above.
    pub insecure: Option<bool>,
    /// PEM CA certificates to trust instead of the built-in roots.
    pub ca_file: Option<String>,
    /// PEM client certificate, for mutual TLS (with `key_file`).
    pub cert_file: Option<String>,
    /// PEM private key of `cert_file`.
    pub key_file: Option<String>,
    /// Accept any server certificate. For tests only.
    pub insecure_skip_verify: bool,
}

/// How request bodies are compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    Gzip,
    Zstd,
    None,
}

impl Compression {
    /// The name used in `Content-Encoding` and `grpc-encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
            Self::None => "identity",
        }
    }
}

impl OtlpExporterConfig {
    /// The sending queue, retries, timeout and dead letters.
    pub fn helper(&self) -> ExporterHelperConfig {
        ExporterHelperConfig {
            sending_queue: self.sending_queue.clone(),
            retry_on_failure: self.retry_on_failure.clone(),
            timeout: self.timeout,
            dead_letter: self.dead_letter.clone(),
        }
    }
}

impl Options for OtlpExporterConfig {
    fn problems(&self) -> Vec<Problem> {
        if self.endpoint.trim().is_empty() {
            vec![Problem::new(
                "endpoint",
                "is empty; name the receiver to send to, like collector:4317",
            )]
        } else {
            Vec::new()
        }
    }
}
