use std::collections::BTreeMap;

use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::units::Duration;
use crate::settings::{ExtensionRef, Options, Problem};
use crate::tls::config::ClientAuthConfig;

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
    /// The Collector's `auth: {authenticator: …}`: an authenticator
    /// extension's credentials on every request.
    pub auth: Option<ClientAuthConfig>,
    pub compression: Compression,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others (see [`EmbedsHelper`]).
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for OtlpExporterConfig {
    const KEYS: &'static [&'static str] = &[
        "endpoint",
        "tls",
        "headers",
        "auth",
        "compression",
        "timeout",
        "sending_queue",
        "retry_on_failure",
        "dead_letter",
    ];

    fn default_helper() -> ExporterHelperConfig {
        ExporterHelperConfig {
            timeout: DEFAULT_TIMEOUT,
            ..ExporterHelperConfig::default()
        }
    }

    fn helper_mut(&mut self) -> &mut ExporterHelperConfig {
        &mut self.helper
    }
}

impl Default for OtlpExporterConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            tls: TlsConfig::default(),
            headers: BTreeMap::new(),
            auth: None,
            compression: Compression::default(),
            helper: Self::default_helper(),
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

impl OtlpExporterConfig {}

impl Options for OtlpExporterConfig {
    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.auth
            .iter()
            .map(|auth| auth.extension_ref("auth"))
            .collect()
    }

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
