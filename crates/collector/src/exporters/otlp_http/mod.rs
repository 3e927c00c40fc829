//! The OTLP/HTTP exporter: `POST /v1development/profiles` with a protobuf
//! or JSON body, gzip or zstd, over HTTP/1.1 or HTTP/2 (TLS via rustls).
//! Each export is one attempt, and its error says whether a retry may
//! succeed.

mod body;
pub mod config;
mod factory;
mod response;

pub use factory::OtlpHttpExporterFactory;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING, CONTENT_TYPE};
use reqwest::{Client, Url};

use super::http_reply::{read_reply, send_error};
use super::partial_success::warn_partial_success;
use super::{ExportCause, ExportError};
use crate::client::http::client;
use crate::client::tls::{split_scheme, uses_tls, ClientTlsError};
use crate::pipeline::{Profiles, Sent};
use crate::settings::client::Compression;
use crate::tls::BearerAuth;
use config::{Encoding, OtlpHttpExporterConfig, PROFILES_PATH};

/// How much of a reply's body is read.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// Exports batches over HTTP. Safe to share between tasks.
#[derive(Debug)]
pub struct OtlpHttpExporter {
    url: Url,
    client: Client,
    headers: HeaderMap,
    encoding: Encoding,
    compression: Compression,
    timeout: Duration,
    /// An authenticator extension's credentials, sent with every export.
    auth: Option<BearerAuth>,
}

impl OtlpHttpExporter {
    /// Checks the configuration and reads TLS files; does not connect.
    pub fn new(config: &OtlpHttpExporterConfig) -> Result<Self, ExportError> {
        let (url, tls) = profiles_url(config).map_err(unusable)?;
        let mut headers = custom_headers(config).map_err(unusable)?;
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static(body::content_type(config.encoding)),
        );
        if config.compression != Compression::None {
            headers.insert(
                CONTENT_ENCODING,
                HeaderValue::from_static(config.compression.name()),
            );
        }
        Ok(Self {
            url,
            client: client(
                &config.client.tls,
                tls,
                Some(config.helper.timeout.0).filter(|timeout| !timeout.is_zero()),
            )
            .map_err(unusable)?,
            headers,
            encoding: config.encoding,
            compression: config.compression,
            timeout: config.helper.timeout.0,
            auth: None,
        })
    }

    /// Sends `auth`'s credentials with every export.
    #[must_use]
    pub fn with_auth(mut self, auth: Option<BearerAuth>) -> Self {
        self.auth = auth;
        self
    }

    /// The URL profiles are POSTed to.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The compression of its protobuf bodies, if it sends protobuf.
    pub fn protobuf_compression(&self) -> Option<Compression> {
        (self.encoding == Encoding::Proto).then_some(self.compression)
    }

    /// One export attempt, limited by the configured timeout. A reply that
    /// rejects some profiles is a success (they would be rejected again)
    /// and is logged.
    pub async fn export(&self, batch: &Profiles) -> Result<Sent, ExportError> {
        let (body, sent) = body::encode(batch, self.encoding, self.compression)
            .map_err(|error| ExportError::Permanent(ExportCause::Encode(Box::new(error))))?;
        let mut headers = self.headers.clone();
        if let Some((name, value)) = self.auth.as_ref().and_then(BearerAuth::credentials) {
            headers.insert(name, value);
        }
        let response = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .timeout(self.timeout)
            .body(body)
            .send()
            .await
            .map_err(|error| send_error(&self.url, self.timeout, error))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_reply(response, MAX_REPLY_BYTES)
            .await
            .map_err(|error| send_error(&self.url, self.timeout, error))?;
        let endpoint = self.url.as_str();
        if let Some(partial) = response::outcome(endpoint, status, &headers, &body)? {
            warn_partial_success(endpoint, &partial);
        }
        Ok(sent)
    }
}

fn unusable(error: impl std::error::Error + Send + Sync + 'static) -> ExportError {
    ExportError::Permanent(ExportCause::exporter("otlp_http", error))
}

/// Why the HTTP exporter's URL or headers cannot be used.
#[derive(Debug, thiserror::Error)]
enum UrlError {
    #[error("set endpoint (or profiles_endpoint)")]
    NoEndpoint,
    #[error(transparent)]
    Tls(#[from] ClientTlsError),
    #[error("{given:?} is not a URL: {error}")]
    NotAUrl {
        given: String,
        error: <Url as std::str::FromStr>::Err,
    },
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error("headers: {0:?} is not a valid header name")]
    HeaderName(String),
    #[error("headers: the value of {0:?} is not a valid header value")]
    HeaderValue(String),
}

/// The URL to POST to, and whether it uses TLS.
fn profiles_url(config: &OtlpHttpExporterConfig) -> Result<(Url, bool), UrlError> {
    let (given, append_path) = match &config.profiles_endpoint {
        Some(full) => (full.as_str(), false),
        None => (config.client.endpoint.as_str(), true),
    };
    if given.trim().is_empty() {
        return Err(UrlError::NoEndpoint);
    }
    let (scheme, rest) = split_scheme(given)?;
    let tls = uses_tls(scheme, &config.client.tls)?;
    let mut text = format!("{}://{rest}", if tls { "https" } else { "http" });
    if append_path {
        text = format!("{}{PROFILES_PATH}", text.trim_end_matches('/'));
    }
    let url = Url::parse(&text).map_err(|error| UrlError::NotAUrl {
        given: given.to_owned(),
        error,
    })?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost(given.to_owned()));
    }
    Ok((url, tls))
}

fn custom_headers(config: &OtlpHttpExporterConfig) -> Result<HeaderMap, UrlError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &config.client.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| UrlError::HeaderName(name.clone()))?;
        let mut value =
            HeaderValue::from_str(value).map_err(|_| UrlError::HeaderValue(name.to_string()))?;
        // Kept out of Debug output: headers often carry credentials.
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::client::ClientSettings;

    fn url_of(endpoint: &str, profiles_endpoint: Option<&str>) -> Result<String, UrlError> {
        let config = OtlpHttpExporterConfig {
            profiles_endpoint: profiles_endpoint.map(str::to_owned),
            client: ClientSettings {
                endpoint: endpoint.to_owned(),
                ..ClientSettings::default()
            },
            ..OtlpHttpExporterConfig::default()
        };
        profiles_url(&config).map(|(url, _)| url.to_string())
    }

    #[test]
    fn urls_get_the_profiles_path_unless_given_in_full() {
        assert_eq!(
            url_of("http://collector:4318", None).unwrap(),
            "http://collector:4318/v1development/profiles"
        );
        assert_eq!(
            url_of("https://example.com/otlp/", None).unwrap(),
            "https://example.com/otlp/v1development/profiles"
        );
        assert_eq!(
            url_of("127.0.0.1:4318", None).unwrap(),
            "http://127.0.0.1:4318/v1development/profiles"
        );
        assert_eq!(
            url_of("", Some("http://a:1/custom")).unwrap(),
            "http://a:1/custom"
        );
        assert!(url_of("", None).is_err());
        assert!(url_of("http://", None).is_err());
    }
}
