//! Server-side rustls configuration from PEM files, with the ring
//! provider, rebuilt when the files change.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{VerifierBuilderError, WebPkiClientVerifier};
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use super::reload::Reloading;
use crate::settings::tls::ServerTlsConfig;

/// The application protocol a listener speaks, offered with ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// gRPC: HTTP/2 only.
    Grpc,
    /// The HTTP receivers: HTTP/1.1.
    Http1,
}

impl Alpn {
    fn protocols(self) -> Vec<Vec<u8>> {
        match self {
            Self::Grpc => vec![b"h2".to_vec()],
            Self::Http1 => vec![b"http/1.1".to_vec()],
        }
    }
}

/// Why a server TLS configuration cannot be built from its files; each
/// names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cert_file and key_file are both needed")]
    MissingCertOrKey,
    #[error("{path}: no usable private key: {error}")]
    Key { path: String, error: pem::Error },
    #[error("{0}")]
    Protocols(tokio_rustls::rustls::Error),
    #[error("{path}: {error}")]
    ClientCa {
        path: String,
        error: tokio_rustls::rustls::Error,
    },
    #[error("{path}: {error}")]
    ClientVerifier {
        path: String,
        error: VerifierBuilderError,
    },
    #[error("{cert_file} and {key_file}: {error}")]
    CertificateAndKey {
        cert_file: String,
        key_file: String,
        error: tokio_rustls::rustls::Error,
    },
    #[error("cannot read {path}: {error}")]
    ReadCertificates { path: String, error: pem::Error },
    #[error("{path}: {error}")]
    Certificates { path: String, error: pem::Error },
    #[error("{0} holds no PEM certificate")]
    NoCertificate(String),
}

/// Hands out a TLS acceptor for the current files.
pub struct ReloadingAcceptor {
    config: Reloading<TlsAcceptor, TlsError>,
}

impl ReloadingAcceptor {
    pub fn new(tls: &ServerTlsConfig, alpn: Alpn) -> Result<Self, TlsError> {
        let (Some(cert), Some(key)) = (tls.cert_file.clone(), tls.key_file.clone()) else {
            return Err(TlsError::MissingCertOrKey);
        };
        let client_ca = tls.client_ca_file.clone();
        let mut paths = vec![PathBuf::from(&cert), PathBuf::from(&key)];
        paths.extend(client_ca.iter().map(PathBuf::from));
        let load = move || {
            server_config(&cert, &key, client_ca.as_deref(), alpn)
                .map(|config| TlsAcceptor::from(Arc::new(config)))
        };
        let config = Reloading::new("server TLS", paths, tls.reload_interval.0, Box::new(load))?;
        Ok(Self { config })
    }

    /// The acceptor for a new connection.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::clone(&self.config.current())
    }
}

/// A rustls server configuration from PEM files.
pub(crate) fn server_config(
    cert_file: &str,
    key_file: &str,
    client_ca_file: Option<&str>,
    alpn: Alpn,
) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(ring::default_provider());
    let chain = read_certificates(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|error| TlsError::Key {
        path: key_file.to_owned(),
        error,
    })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Protocols)?;
    let builder = match client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca_file) => {
            let mut roots = RootCertStore::empty();
            for certificate in read_certificates(ca_file)? {
                roots.add(certificate).map_err(|error| TlsError::ClientCa {
                    path: ca_file.to_owned(),
                    error,
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| TlsError::ClientVerifier {
                    path: ca_file.to_owned(),
                    error,
                })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config =
        builder
            .with_single_cert(chain, key)
            .map_err(|error| TlsError::CertificateAndKey {
                cert_file: cert_file.to_owned(),
                key_file: key_file.to_owned(),
                error,
            })?;
    config.alpn_protocols = alpn.protocols();
    Ok(config)
}

fn read_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|error| TlsError::ReadCertificates {
            path: path.to_owned(),
            error,
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::Certificates {
            path: path.to_owned(),
            error,
        })?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate(path.to_owned()));
    }
    Ok(certificates)
}
