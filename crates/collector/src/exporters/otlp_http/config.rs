use std::collections::BTreeMap;

use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::exporters::otlp::config::{Compression, TlsConfig, DEFAULT_TIMEOUT};
use crate::settings::{ExtensionRef, Options, Problem};
use crate::tls::config::ClientAuthConfig;

/// The path appended to `endpoint`.
pub const PROFILES_PATH: &str = "/v1development/profiles";

/// `exporters: otlp_http:` — OTLP over HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpHttpExporterConfig {
    /// Base URL, e.g. `https://collector:4318`; `/v1development/profiles`
    /// is appended. Without a scheme, `http://` (or `https://` when TLS
    /// options say so).
    pub endpoint: String,
    /// The full URL to POST to; overrides `endpoint`.
    pub profiles_endpoint: Option<String>,
    pub encoding: Encoding,
    pub compression: Compression,
    /// Sent with every request.
    pub headers: BTreeMap<String, String>,
    /// The Collector's `auth: {authenticator: …}`: an authenticator
    /// extension's credentials on every request.
    pub auth: Option<ClientAuthConfig>,
    pub tls: TlsConfig,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others (see [`EmbedsHelper`]).
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for OtlpHttpExporterConfig {
    const KEYS: &'static [&'static str] = &[
        "endpoint",
        "profiles_endpoint",
        "encoding",
        "compression",
        "headers",
        "auth",
        "timeout",
        "sending_queue",
        "retry_on_failure",
        "dead_letter",
        "tls",
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

impl Default for OtlpHttpExporterConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            profiles_endpoint: None,
            encoding: Encoding::default(),
            compression: Compression::default(),
            headers: BTreeMap::new(),
            auth: None,
            tls: TlsConfig::default(),
            helper: Self::default_helper(),
        }
    }
}

/// The body's encoding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// `application/x-protobuf`.
    #[default]
    Proto,
    /// `application/json`, OTLP/JSON.
    Json,
}

impl OtlpHttpExporterConfig {}

impl Options for OtlpHttpExporterConfig {
    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.auth
            .iter()
            .map(|auth| auth.extension_ref("auth"))
            .collect()
    }

    fn problems(&self) -> Vec<Problem> {
        if self.endpoint.trim().is_empty() && self.profiles_endpoint.is_none() {
            vec![Problem::new(
                "endpoint",
                "is empty; name the receiver to send to, like http://collector:4318",
            )]
        } else {
            Vec::new()
        }
    }
}
