//! Server-side rustls configuration from PEM files, with the ring
//! provider, rebuilt when the files change.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use super::config::ServerTlsConfig;
use super::reload::Reloading;

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

/// Hands out a TLS acceptor for the current files.
pub struct ReloadingAcceptor {
    config: Reloading<TlsAcceptor>,
}

impl ReloadingAcceptor {
    pub fn new(tls: &ServerTlsConfig, alpn: Alpn) -> Result<Self, String> {
        let (Some(cert), Some(key)) = (tls.cert_file.clone(), tls.key_file.clone()) else {
            return Err("cert_file and key_file are both needed".to_owned());
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
) -> Result<ServerConfig, String> {
    let provider = Arc::new(ring::default_provider());
    let chain = read_certificates(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|error| format!("{key_file}: no usable private key: {error}"))?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?;
    let builder = match client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca_file) => {
            let mut roots = RootCertStore::empty();
            for certificate in read_certificates(ca_file)? {
                roots
                    .add(certificate)
                    .map_err(|error| format!("{ca_file}: {error}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| format!("{ca_file}: {error}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|error| format!("{cert_file} and {key_file}: {error}"))?;
    config.alpn_protocols = alpn.protocols();
    Ok(config)
}

fn read_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|error| format!("cannot read {path}: {error}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{path}: {error}"))?;
    if certificates.is_empty() {
        return Err(format!("{path} holds no PEM certificate"));
    }
    Ok(certificates)
}
