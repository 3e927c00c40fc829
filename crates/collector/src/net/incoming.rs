//! The one accept loop every listener runs (gRPC, HTTP, telemetry; plain
//! or TLS): accept errors (out of file descriptors and the like) back off
//! instead of spinning; at `max_connections` the least active connection
//! gives way ([`super::admission`]); each connection gets TCP_NODELAY,
//! its greeting and idle timeouts ([`Watched`]); TLS handshakes run off
//! the loop, limited in number and time, the oldest one evicted when a
//! new one would pass the limit.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rustix::io::Errno;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};

use super::admission::{Admission, Ticket};
use super::conn::{Conn, ConnIo, Greeting};
use super::watch::Watched;
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
    let address = listener
        .local_addr()
        .map_or_else(|_| "a listener".to_owned(), |address| address.to_string());
    let admission = Admission::new(address, limits.max_connections);
    let handshakes = Arc::new(Handshakes::default());
    loop {
        // Accepting waits only while every connection has a request in
        // flight: otherwise one gives way to the next client.
        admission.room().await;
        let (stream, peer) = accept(&listener, &admission).await;
        let ticket = loop {
            match admission.admit(peer) {
                Some(ticket) => break ticket,
                None => admission.room().await,
            }
        };
        // Without TCP_NODELAY, a reply written in pieces waits for the
        // client's delayed ACK (40 ms on Linux).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let io = Watched::new(
            stream,
            Arc::clone(ticket.activity()),
            limits.idle_timeout,
            limits.greeting_timeout,
        );
        match &tls {
            None => {
                let conn = Conn::new(ConnIo::Plain(io), peer, ticket, limits.greeting);
                if ready.send(conn).await.is_err() {
                    return;
                }
            }
            Some((acceptor, handshake_limits)) => {
                handshakes.start(
                    acceptor.acceptor(),
                    *handshake_limits,
                    Accepted {
                        io,
                        peer,
                        ticket,
                        greeting: limits.greeting,
                    },
                    ready.clone(),
                );
            }
        }
    }
}

/// The next connection, backing off while accepting fails. Out of
/// descriptors, the least active connection is closed first, so that the
/// listener does not wait for connections to time out.
async fn accept(listener: &TcpListener, admission: &Admission) -> (TcpStream, SocketAddr) {
    let mut pause = FIRST_PAUSE;
    let mut failing = false;
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(error) => {
                let out_of_descriptors = [Errno::MFILE, Errno::NFILE]
                    .iter()
                    .any(|errno| error.raw_os_error() == Some(errno.raw_os_error()));
                let made_room = out_of_descriptors && admission.make_room();
                if !failing {
                    tracing::warn!(%error, made_room, "cannot accept a connection; backing off");
                    failing = true;
                }
                tokio::time::sleep(pause).await;
                pause = pause.saturating_mul(2).min(MAX_PAUSE);
            }
        }
    }
}

/// A TCP connection admitted, before its TLS handshake.
struct Accepted {
    io: Watched<TcpStream>,
    peer: SocketAddr,
    ticket: Ticket,
    greeting: Greeting,
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
        accepted: Accepted,
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
            let Accepted {
                io,
                peer,
                ticket,
                greeting,
            } = accepted;
            let handshake = tokio::time::timeout(limits.timeout, acceptor.accept(io)).await;
            this.finished(id);
            match handshake {
                Ok(Ok(stream)) => {
                    let conn = Conn::new(ConnIo::Tls(Box::new(stream)), peer, ticket, greeting);
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
}
