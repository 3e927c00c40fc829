use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::client::{ClientSettings, Compression};
use crate::settings::{EmbeddedPart, ExtensionRef, Options, Problem};

/// The path appended to `endpoint`.
pub const PROFILES_PATH: &str = "/v1development/profiles";

/// `exporters: otlp_http:` — OTLP over HTTP.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpHttpExporterConfig {
    /// The full URL to POST to; overrides `endpoint`.
    pub profiles_endpoint: Option<String>,
    pub encoding: Encoding,
    pub compression: Compression,
    /// `endpoint` (a base URL, e.g. `https://collector:4318`, to which
    /// `/v1development/profiles` is appended; without a scheme, `http://`,
    /// or `https://` when TLS options say so), `tls`, `headers` and
    /// `auth`, whose keys sit beside the others.
    #[serde(skip)]
    pub client: ClientSettings,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for OtlpHttpExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
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

impl Options for OtlpHttpExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client, &mut self.helper]
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.client.extension_refs()
    }

    fn problems(&self) -> Vec<Problem> {
        if self.client.endpoint.trim().is_empty() && self.profiles_endpoint.is_none() {
            vec![Problem::new(
                "endpoint",
                "is empty; name the receiver to send to, like http://collector:4318",
            )]
        } else {
            Vec::new()
        }
    }
}
