//! Accepts TCP connections and completes their TLS handshakes off the
//! accept loop, handing finished streams to tonic (as a `Stream`) or to
//! axum (as a `Listener`).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;

use super::server::ReloadingAcceptor;

/// How long a client gets to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections whose handshake is done, waiting for the server.
const READY_BACKLOG: usize = 64;

/// Handshakes in progress at once; past this, accepting waits, so that
/// clients that connect and stay silent cannot pile up without bound.
const MAX_HANDSHAKES: usize = 256;

/// TLS connections, each already through its handshake.
pub struct TlsIncoming {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local_addr: std::io::Result<SocketAddr>,
    accept_loop: JoinHandle<()>,
}

impl TlsIncoming {
    /// Starts accepting on `listener`; stops when this is dropped.
    pub fn new(listener: TcpListener, acceptor: Arc<ReloadingAcceptor>) -> Self {
        let local_addr = listener.local_addr();
        let (sender, ready) = mpsc::channel(READY_BACKLOG);
        let accept_loop = tokio::spawn(accept_loop(listener, acceptor, sender));
        Self {
            ready,
            local_addr,
            accept_loop,
        }
    }
}

impl Drop for TlsIncoming {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: Arc<ReloadingAcceptor>,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = Arc::clone(&handshakes).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::debug!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Without TCP_NODELAY, a reply written in pieces waits for the
        // client's delayed ACK (40 ms on Linux).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let tls = acceptor.acceptor();
        let ready = ready.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                Ok(Ok(stream)) => {
                    // Fails only when the server has stopped.
                    let _ = ready.send((stream, peer)).await;
                }
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                }
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

impl tonic::codegen::tokio_stream::Stream for TlsIncoming {
    type Item = std::io::Result<TlsStream<TcpStream>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.ready
            .poll_recv(cx)
            .map(|next| next.map(|(stream, _)| Ok(stream)))
    }
}

impl axum::serve::Listener for TlsIncoming {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept loop never ends on its own.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        match &self.local_addr {
            Ok(address) => Ok(*address),
            Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
        }
    }
}
