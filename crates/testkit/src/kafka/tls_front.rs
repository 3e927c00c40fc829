//! TLS in front of a broker that has none: clients connect here with TLS
//! (a client certificate too, when asked for one), and each connection is
//! forwarded in plaintext to the broker's own port on loopback. The broker
//! advertises this port, so every connection a client makes comes through
//! here. Runs until dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::oneshot;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use super::secure::BrokerTls;

pub(super) struct TlsFront {
    port: u16,
    /// Why handshakes failed, in order.
    refused: Arc<Mutex<Vec<String>>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// The front's listening socket, bound before the broker starts so that
/// the broker can advertise its port.
pub(super) struct FrontSocket(TcpListener);

impl FrontSocket {
    pub(super) fn bind() -> Self {
        Self(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port"))
    }

    pub(super) fn port(&self) -> u16 {
        self.0.local_addr().expect("a bound address").port()
    }
}

impl TlsFront {
    /// Serves TLS on `socket`, forwarding to `127.0.0.1:backend`.
    pub(super) fn start(socket: FrontSocket, tls: &BrokerTls<'_>, backend: u16) -> Self {
        let acceptor = TlsAcceptor::from(Arc::new(server_config(tls)));
        let port = socket.port();
        socket
            .0
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let refused = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = oneshot::channel();
        let thread = {
            let refused = Arc::clone(&refused);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                    .expect("a Tokio runtime");
                runtime.block_on(serve(socket.0, acceptor, backend, refused, stopped));
            })
        };
        Self {
            port,
            refused,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub(super) fn port(&self) -> u16 {
        self.port
    }

    /// Why each refused handshake failed, as rustls says it.
    pub(super) fn refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .map(|list| list.clone())
            .unwrap_or_default()
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts until `stopped`; dropping the runtime then closes every
/// forwarded connection.
async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    backend: u16,
    refused: Arc<Mutex<Vec<String>>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a Tokio listener");
    let backend = SocketAddr::from((Ipv4Addr::LOCALHOST, backend));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stopped => return,
        };
        let Ok((client, _)) = accepted else {
            continue;
        };
        let acceptor = acceptor.clone();
        let refused = Arc::clone(&refused);
        tokio::spawn(async move {
            let mut client = match acceptor.accept(client).await {
                Ok(stream) => stream,
                Err(error) => {
                    if let Ok(mut list) = refused.lock() {
                        list.push(error.to_string());
                    }
                    return;
                }
            };
            let Ok(mut broker) = tokio::net::TcpStream::connect(backend).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut client, &mut broker).await;
        });
    }
}

fn server_config(tls: &BrokerTls<'_>) -> ServerConfig {
    let provider = Arc::new(ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("rustls's default protocol versions");
    let builder = match tls.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca_file) => {
            let mut roots = RootCertStore::empty();
            for certificate in certificates(ca_file) {
                roots.add(certificate).expect("a usable client CA");
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("a client certificate verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let key = PrivateKeyDer::from_pem_file(tls.key_file)
        .unwrap_or_else(|e| panic!("the key {}: {e}", tls.key_file.display()));
    builder
        .with_single_cert(certificates(tls.cert_file), key)
        .expect("the broker's certificate and key")
}

fn certificates(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect())
        .unwrap_or_else(|e| panic!("certificates in {}: {e}", path.display()))
}
