use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::client::{ClientSettings, Compression};
use crate::settings::{EmbeddedPart, ExtensionRef, Options, Problem};

/// `exporters: otlp:` — OTLP over gRPC.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpExporterConfig {
    pub compression: Compression,
    /// `endpoint` (`host:port`, `http://host:port` for plaintext or
    /// `https://host:port` for TLS), `tls`, `headers` (sent as gRPC
    /// metadata) and `auth`, whose keys sit beside the others.
    #[serde(skip)]
    pub client: ClientSettings,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for OtlpExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

impl Options for OtlpExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client, &mut self.helper]
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.client.extension_refs()
    }

    fn problems(&self) -> Vec<Problem> {
        if self.client.endpoint.trim().is_empty() {
            vec![Problem::new(
                "endpoint",
                "is empty; name the receiver to send to, like collector:4317",
            )]
        } else {
            Vec::new()
        }
    }
}
