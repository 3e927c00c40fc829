//! What clients are configured with, in the shape of the OpenTelemetry
//! Collector's `confighttp.ClientConfig` and `configgrpc.ClientConfig`:
//! [`ClientSettings`], which every exporter that connects somewhere
//! embeds. Compression is chosen by the exporters that compress
//! ([`Compression`]); the time one attempt may take is the exporter
//! helper's `timeout`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::parts::{Embedded, Written};
use super::refs::ExtensionRef;
use super::tls::ClientAuthConfig;
use crate::keep_unwritten;

/// Where a client connects, how it is secured, and what every request
/// carries.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientSettings {
    /// Where to connect; each exporter says what it appends.
    pub endpoint: String,
    pub tls: TlsConfig,
    /// Sent with every request (as gRPC metadata over gRPC).
    pub headers: BTreeMap<String, String>,
    /// The Collector's `auth: {authenticator: …}`: an authenticator
    /// extension's credentials on every request.
    pub auth: Option<ClientAuthConfig>,
}

impl ClientSettings {
    /// The authenticator extension `auth` names.
    pub fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.auth
            .iter()
            .map(|auth| auth.extension_ref("auth"))
            .collect()
    }
}

impl Embedded for ClientSettings {
    fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
        keep_unwritten!(self, defaults, written; endpoint, tls, headers, auth);
    }
}

/// `tls:` of a client, in the OpenTelemetry Collector's shape.
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
