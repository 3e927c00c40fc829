use std::collections::BTreeMap;

use serde::Deserialize;

use crate::exporters::helper::config::{ExporterHelperConfig, RetryConfig, SendingQueueConfig};
use crate::exporters::otlp::config::{Compression, TlsConfig, DEFAULT_TIMEOUT};
use crate::settings::units::Duration;
use crate::settings::{Options, Problem};

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
    /// How long one attempt may take, connecting included.
    pub timeout: Duration,
    pub sending_queue: SendingQueueConfig,
    pub retry_on_failure: RetryConfig,
    /// Where requests that cannot be delivered are kept.
    pub dead_letter: Option<String>,
    pub tls: TlsConfig,
}

impl Default for OtlpHttpExporterConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            profiles_endpoint: None,
            encoding: Encoding::default(),
            compression: Compression::default(),
            headers: BTreeMap::new(),
            timeout: DEFAULT_TIMEOUT,
            sending_queue: SendingQueueConfig::default(),
            retry_on_failure: RetryConfig::default(),
            dead_letter: None,
            tls: TlsConfig::default(),
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

impl OtlpHttpExporterConfig {
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

impl Options for OtlpHttpExporterConfig {
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
