//! The OTLP gRPC exporter: `ProfilesService/Export` on another collector
//! or backend. Connects lazily, on the first export, and keeps the
//! connection; each export is one attempt, and its error says whether a
//! retry may succeed.

mod codec;
pub mod config;
mod factory;
mod precompressed;
mod status;

pub use factory::OtlpExporterFactory;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::OnceCell;
use tonic::client::Grpc;
use tonic::codec::CompressionEncoding;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::partial_success::warn_partial_success;
use super::{ExportCause, ExportError};
use crate::client::skip_verify::UnverifiedTlsConnector;
use crate::client::tls::{split_scheme, uses_tls, ClientTlsError, TlsFiles};
use crate::pipeline::{Body, Profiles, Sent};
use crate::settings::client::{Compression, TlsConfig};
use crate::tls::BearerAuth;
use codec::ExportCodec;
use config::OtlpExporterConfig;
use precompressed::{CompressedMessage, PassThrough};

const EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

/// Exports batches over gRPC. Safe to share between tasks.
#[derive(Debug)]
pub struct OtlpGrpcExporter {
    /// As configured, for messages.
    endpoint_text: String,
    endpoint: Endpoint,
    /// Set for `tls.insecure_skip_verify`: TLS done by the connector.
    unverified: Option<UnverifiedTlsConnector>,
    channel: OnceCell<Channel>,
    metadata: MetadataMap,
    compression: Compression,
    timeout: Duration,
    /// An authenticator extension's credentials, sent with every export.
    auth: Option<BearerAuth>,
}

impl OtlpGrpcExporter {
    /// Checks the configuration and reads TLS files; does not connect.
    pub fn new(config: &OtlpExporterConfig) -> Result<Self, ExportError> {
        let invalid =
            |error: ChannelError| ExportError::Permanent(ExportCause::exporter("otlp", error));
        let (endpoint, unverified) = channel_endpoint(config).map_err(invalid)?;
        if unverified.is_some() {
            tracing::warn!(
                endpoint = config.client.endpoint.trim(),
                "tls.insecure_skip_verify: the server's certificate is not verified; \
                 anyone on the path can pose as the server"
            );
        }
        Ok(Self {
            endpoint_text: config.client.endpoint.trim().to_owned(),
            endpoint,
            unverified,
            channel: OnceCell::new(),
            metadata: metadata(config).map_err(invalid)?,
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

    /// The endpoint as configured.
    pub fn endpoint(&self) -> &str {
        &self.endpoint_text
    }

    /// The compression of what it sends.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// One export attempt, limited by the configured timeout: the bytes
    /// the request arrived as when its compression is this exporter's,
    /// else its protobuf compressed by tonic. A reply that rejects some
    /// profiles is a success (they would be rejected again) and is logged.
    pub async fn export(&self, batch: &Profiles) -> Result<Sent, ExportError> {
        let body = batch.body(crate::exporters::on_the_wire(self.compression));
        let sent = body.sent();
        match tokio::time::timeout(self.timeout, self.send(body)).await {
            Ok(result) => result.map(|()| sent),
            Err(_) => Err(ExportError::retryable(ExportCause::NoReply {
                endpoint: self.endpoint_text.clone(),
                limit: self.timeout,
            })),
        }
    }

    async fn send(&self, body: Body) -> Result<(), ExportError> {
        let channel = self
            .channel
            .get_or_init(|| async {
                match &self.unverified {
                    Some(connector) => self.endpoint.connect_with_connector_lazy(connector.clone()),
                    None => self.endpoint.connect_lazy(),
                }
            })
            .await
            .clone();
        let mut grpc = Grpc::new(PassThrough(channel))
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Zstd);
        let (message, compressed) = match (body, tonic_encoding(self.compression)) {
            (Body::AsReceived(compressed), Some(_)) => {
                let compressed = CompressedMessage::new(self.compression.name(), &compressed)
                    .map_err(|error| {
                        ExportError::Permanent(ExportCause::Encode(Box::new(error)))
                    })?;
                (Bytes::new(), Some(compressed))
            }
            (body, encoding) => {
                if let Some(encoding) = encoding {
                    grpc = grpc.send_compressed(encoding);
                }
                (body.into_bytes(), None)
            }
        };
        grpc.ready().await.map_err(|error| {
            ExportError::retryable(ExportCause::Unreachable {
                endpoint: self.endpoint_text.clone(),
                error: Box::new(error),
            })
        })?;
        let mut request = tonic::Request::new(message);
        if let Some(compressed) = compressed {
            request.extensions_mut().insert(compressed);
        }
        *request.metadata_mut() = self.metadata.clone();
        if let Some((key, value)) = self.auth.as_ref().and_then(credentials) {
            request.metadata_mut().insert(key, value);
        }
        request.set_timeout(self.timeout);
        let response = grpc
            .unary(request, PathAndQuery::from_static(EXPORT_PATH), ExportCodec)
            .await
            .map_err(|status| status::export_error(status, &self.endpoint_text))?;
        if let Some(partial) = response.into_inner().partial_success {
            warn_partial_success(&self.endpoint_text, &partial);
        }
        Ok(())
    }
}

/// How tonic names `compression`; `None` for none.
fn tonic_encoding(compression: Compression) -> Option<CompressionEncoding> {
    match compression {
        Compression::Gzip => Some(CompressionEncoding::Gzip),
        Compression::Zstd => Some(CompressionEncoding::Zstd),
        Compression::None => None,
    }
}

/// Why the gRPC exporter's endpoint, TLS options or headers cannot be used.
#[derive(Debug, thiserror::Error)]
enum ChannelError {
    #[error(transparent)]
    Tls(#[from] ClientTlsError),
    #[error("endpoint {0:?} has a path; gRPC endpoints are host:port")]
    HasPath(String),
    #[error("endpoint {endpoint:?}: {error}")]
    Endpoint {
        endpoint: String,
        error: tonic::transport::Error,
    },
    #[error("endpoint {0:?} has no host")]
    NoHost(String),
    #[error("tls: {0}")]
    TonicTls(tonic::transport::Error),
    #[error("headers: {0:?} is not a valid gRPC metadata name")]
    MetadataName(String),
    #[error("headers: the value of {0:?} is not valid in gRPC metadata")]
    MetadataValue(String),
}

fn channel_endpoint(
    config: &OtlpExporterConfig,
) -> Result<(Endpoint, Option<UnverifiedTlsConnector>), ChannelError> {
    let (scheme, rest) = split_scheme(&config.client.endpoint)?;
    let authority = rest.trim_end_matches('/');
    if authority.contains('/') {
        return Err(ChannelError::HasPath(config.client.endpoint.clone()));
    }
    let tls = uses_tls(scheme, &config.client.tls)?;
    // Without verification the connector does TLS, and tonic, seeing
    // https://, would try to do it again.
    let unverified = tls && config.client.tls.insecure_skip_verify;
    let uri = format!(
        "{}://{authority}",
        if tls && !unverified { "https" } else { "http" }
    );
    let endpoint = Endpoint::from_shared(uri).map_err(|error| ChannelError::Endpoint {
        endpoint: config.client.endpoint.clone(),
        error,
    })?;
    if endpoint.uri().host().is_none_or(str::is_empty) {
        return Err(ChannelError::NoHost(config.client.endpoint.clone()));
    }
    let endpoint = endpoint
        .connect_timeout(config.helper.timeout.0)
        .tcp_nodelay(true);
    if !tls {
        return Ok((endpoint, None));
    }
    if unverified {
        let identity = TlsFiles::read(&config.client.tls)?.identity;
        let connector = UnverifiedTlsConnector::new(identity)?;
        return Ok((endpoint, Some(connector)));
    }
    let endpoint = endpoint
        .tls_config(client_tls(&config.client.tls)?)
        .map_err(ChannelError::TonicTls)?;
    Ok((endpoint, None))
}

fn client_tls(config: &TlsConfig) -> Result<ClientTlsConfig, ClientTlsError> {
    let files = TlsFiles::read(config)?;
    let mut tls = ClientTlsConfig::new();
    tls = match files.ca {
        Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(ca)),
        None => tls.with_webpki_roots(),
    };
    if let Some((cert, key)) = files.identity {
        tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
    }
    Ok(tls)
}

/// The authenticator's credentials as gRPC metadata.
fn credentials(auth: &BearerAuth) -> Option<(AsciiMetadataKey, AsciiMetadataValue)> {
    let (name, value) = auth.credentials()?;
    let key = AsciiMetadataKey::from_bytes(name.as_str().as_bytes()).ok()?;
    let mut value = AsciiMetadataValue::try_from(value.as_bytes()).ok()?;
    value.set_sensitive(true);
    Some((key, value))
}

fn metadata(config: &OtlpExporterConfig) -> Result<MetadataMap, ChannelError> {
    let mut metadata = MetadataMap::new();
    for (name, value) in &config.client.headers {
        let key = AsciiMetadataKey::from_bytes(name.as_bytes())
            .map_err(|_| ChannelError::MetadataName(name.clone()))?;
        let mut value = AsciiMetadataValue::try_from(value.as_str())
            .map_err(|_| ChannelError::MetadataValue(name.clone()))?;
        // Kept out of Debug output: headers often carry credentials.
        value.set_sensitive(true);
        metadata.insert(key, value);
    }
    Ok(metadata)
}
