//! The one accept loop every listener runs (gRPC, HTTP, telemetry; plain
//! or TLS): accept errors (out of file descriptors and the like) back off
//! instead of spinning; at `max_connections` it stops accepting until a
//! connection closes; each connection gets TCP_NODELAY and the idle
//! timeout; TLS handshakes run off the loop, limited in number and time,
//! the oldest one evicted when a new connection needs its place.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_rustls::server::TlsStream;

use super::idle::IdleTimeout;
use super::{ConnectionLimits, HandshakeLimits};
use crate::tls::ReloadingAcceptor;

/// Connections accepted (and through their handshake), waiting for the
/// server to take them.
const READY_BACKLOG: usize = 64;

/// The first pause after an accept error, doubled up to [`MAX_PAUSE`]
/// while errors go on (as Go's net/http does).
const FIRST_PAUSE: Duration = Duration::from_millis(5);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Accepted connections, ready to serve.
pub struct Incoming {
    ready: mpsc::Receiver<Conn>,
    accept_loop: JoinHandle<()>,
}

impl Incoming {
    /// Starts accepting on `listener`, with TLS when `tls` is set; stops
    /// when this is dropped.
    pub fn new(
        listener: TcpListener,
        limits: ConnectionLimits,
        tls: Option<(Arc<ReloadingAcceptor>, HandshakeLimits)>,
    ) -> Self {
        let (sender, ready) = mpsc::channel(READY_BACKLOG);
        let accept_loop = tokio::spawn(accept_loop(listener, limits, tls, sender));
        Self { ready, accept_loop }
    }

    /// The next connection; `None` once the accept loop is gone.
    pub async fn next(&mut self) -> Option<Conn> {
        self.ready.recv().await
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl tonic::codegen::tokio_stream::Stream for Incoming {
    type Item = io::Result<Conn>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.ready.poll_recv(cx).map(|next| next.map(Ok))
    }
}

async fn accept_loop(
    listener: TcpListener,
    limits: ConnectionLimits,
    tls: Option<(Arc<ReloadingAcceptor>, HandshakeLimits)>,
    ready: mpsc::Sender<Conn>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let handshakes = Arc::new(Handshakes::default());
    let mut pause = FIRST_PAUSE;
    let mut failing = false;
    loop {
        let (stream, peer) = loop {
            match listener.accept().await {
                Ok(accepted) => {
                    pause = FIRST_PAUSE;
                    failing = false;
                    break accepted;
                }
                Err(error) => {
                    if !failing {
                        tracing::warn!(%error, "cannot accept a connection; backing off");
                        failing = true;
                    }
                    tokio::time::sleep(pause).await;
                    pause = pause.saturating_mul(2).min(MAX_PAUSE);
                }
            }
        };
        // A slot is taken once a client is there, so that a silent
        // handshake is evicted only for a client that waits.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // At the cap: a silent handshake gives its place up first.
                if handshakes.evict_oldest() {
                    tracing::debug!("at max_connections: evicted the oldest TLS handshake");
                }
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                    return;
                };
                slot
            }
        };
        // Without TCP_NODELAY, a reply written in pieces waits for the
        // client's delayed ACK (40 ms on Linux).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let io = IdleTimeout::new(stream, limits.idle_timeout);
        match &tls {
            None => {
                let conn = Conn {
                    io: ConnIo::Plain(io),
                    peer,
                    _slot: slot,
                };
                if ready.send(conn).await.is_err() {
                    return;
                }
            }
            Some((acceptor, handshake_limits)) => {
                handshakes.start(
                    acceptor.acceptor(),
                    *handshake_limits,
                    io,
                    peer,
                    slot,
                    ready.clone(),
                );
            }
        }
    }
}

/// The TLS handshakes in progress, oldest first.
#[derive(Default)]
struct Handshakes {
    running: Mutex<VecDeque<(u64, AbortHandle)>>,
    next_id: AtomicU64,
}

impl Handshakes {
    fn start(
        self: &Arc<Self>,
        acceptor: tokio_rustls::TlsAcceptor,
        limits: HandshakeLimits,
        io: IdleTimeout<TcpStream>,
        peer: SocketAddr,
        slot: OwnedSemaphorePermit,
        ready: mpsc::Sender<Conn>,
    ) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        while running.len() >= limits.max_in_progress.max(1) {
            // Silent clients cannot keep real ones out: the oldest
            // handshake, the likeliest to be one of them, gives way.
            if let Some((_, oldest)) = running.pop_front() {
                oldest.abort();
                tracing::debug!("TLS handshake limit reached: evicted the oldest");
            }
        }
        let this = Arc::clone(self);
        let task = tokio::spawn(async move {
            let handshake = tokio::time::timeout(limits.timeout, acceptor.accept(io)).await;
            this.finished(id);
            match handshake {
                Ok(Ok(stream)) => {
                    let conn = Conn {
                        io: ConnIo::Tls(Box::new(stream)),
                        peer,
                        _slot: slot,
                    };
                    // Fails only when the server has stopped.
                    let _ = ready.send(conn).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
        // Still under the lock: `finished` cannot run before this entry
        // is in place.
        running.push_back((id, task.abort_handle()));
    }

    fn finished(&self, id: u64) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = running.iter().position(|(entry, _)| *entry == id) {
            running.remove(at);
        }
    }

    /// Aborts the oldest handshake in progress; false when there is none.
    fn evict_oldest(&self) -> bool {
        let oldest = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        oldest.map(|(_, task)| task.abort()).is_some()
    }
}

/// An accepted connection: counted against `max_connections` until it is
/// dropped, closed by the idle timeout when nothing moves.
pub struct Conn {
    io: ConnIo,
    peer: SocketAddr,
    _slot: OwnedSemaphorePermit,
}

enum ConnIo {
    Plain(IdleTimeout<TcpStream>),
    Tls(Box<TlsStream<IdleTimeout<TcpStream>>>),
}

impl Conn {
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}

/// What tonic puts in each request's extensions (so that
/// `Request::remote_addr` works as with its own listener).
impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        let local_addr = match &self.io {
            ConnIo::Plain(io) => io.get_ref().local_addr().ok(),
            ConnIo::Tls(io) => io.get_ref().0.get_ref().local_addr().ok(),
        };
        tonic::transport::server::TcpConnectInfo {
            local_addr,
            remote_addr: Some(self.peer),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_read(cx, buf),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_write(cx, buf),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            ConnIo::Plain(io) => io.is_write_vectored(),
            ConnIo::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_flush(cx),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            ConnIo::Plain(io) => Pin::new(io).poll_shutdown(cx),
            ConnIo::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}
