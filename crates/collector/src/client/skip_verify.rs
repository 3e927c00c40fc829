//! `tls.insecure_skip_verify` over gRPC: tonic's own TLS cannot skip
//! verification, so the channel gets a connector that does the TLS
//! handshake itself, with a verifier that accepts any server certificate.
//! Signatures in the handshake are still checked, so the server must hold
//! the key of the certificate it shows, but nothing says that certificate
//! is the right one: for tests only.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{
    ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{ClientConfig, DigitallySignedStruct, Error, SignatureScheme};
use tokio_rustls::TlsConnector;
use tonic::codegen::http::Uri;
use tonic::codegen::Service;

use super::tls::ClientTlsError;

/// Accepts every server certificate; checks handshake signatures only.
#[derive(Debug)]
struct AcceptAnyServerCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Connects over TCP and TLS without verifying the server's certificate.
#[derive(Clone)]
pub(crate) struct UnverifiedTlsConnector {
    tls: TlsConnector,
}

impl std::fmt::Debug for UnverifiedTlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnverifiedTlsConnector")
    }
}

impl UnverifiedTlsConnector {
    /// `identity`: a PEM client certificate chain and key, for mutual TLS.
    pub fn new(identity: Option<(Vec<u8>, Vec<u8>)>) -> Result<Self, ClientTlsError> {
        let provider = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(ClientTlsError::Protocols)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCertificate(provider)));
        let mut config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(&cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(ClientTlsError::Certificate)?;
                let key = PrivateKeyDer::from_pem_slice(&key).map_err(ClientTlsError::Key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(ClientTlsError::CertificateAndKey)?
            }
        };
        // gRPC servers may insist on HTTP/2 being negotiated.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Self {
            tls: TlsConnector::from(Arc::new(config)),
        })
    }
}

impl Service<Uri> for UnverifiedTlsConnector {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let tls = self.tls.clone();
        Box::pin(async move {
            let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
            let host = uri
                .host()
                .ok_or_else(|| invalid("the endpoint has no host"))?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(443);
            let name = ServerName::try_from(host.clone())
                .map_err(|_| invalid("the endpoint's host is not a valid server name"))?;
            let tcp = TcpStream::connect((host.as_str(), port)).await?;
            tcp.set_nodelay(true)?;
            Ok(TokioIo::new(tls.connect(name, tcp).await?))
        })
    }
}
