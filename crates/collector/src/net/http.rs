//! The HTTP listeners' server: hyper-util's connection builder (HTTP/1,
//! and HTTP/2 with prior knowledge) over [`Incoming`], with hyper's timer
//! so that a request head must arrive within `read_header_timeout`, and
//! graceful shutdown: idle connections close at once, requests in flight
//! finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

use super::in_flight::TrackRequests;
use super::incoming::Incoming;
use super::ConnectionLimits;
use crate::settings::server::HttpConnectionSettings;
use crate::tls::Security;

/// Largest read buffer of an HTTP/1 connection, which also bounds a
/// request's head. hyper's default (about 400 KiB) is reached by every
/// connection streaming a large body, and stays for as long as it is open:
/// 40 stalled uploads held about 18 MiB more than with this.
const HTTP1_READ_BUFFER: usize = 64 << 10;

/// HTTP-level limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// How long a client gets to send a request's head (from when the
    /// server starts reading it).
    pub read_header_timeout: Duration,
    /// HTTP/2 streams one connection may have open at once.
    pub max_concurrent_streams: u32,
}

impl HttpLimits {
    /// The limits an HTTP listener's settings set, with HTTP/2 streams
    /// capped at `max_concurrent_streams`.
    pub(crate) fn of(settings: &HttpConnectionSettings, max_concurrent_streams: u32) -> Self {
        Self {
            read_header_timeout: settings.read_header_timeout.0,
            max_concurrent_streams,
        }
    }
}

/// Serves `router` over plain TCP or TLS until `shutdown` resolves, with
/// the listener's connection and HTTP limits.
pub(crate) async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    security: Security,
    (connections, http): (ConnectionLimits, HttpLimits),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = security.tls.map(|acceptor| (acceptor, security.handshakes));
    let incoming = Incoming::new(listener, connections, tls);
    serve_http(incoming, router, http, shutdown).await
}

/// Serves `router` on every connection `incoming` yields, until
/// `shutdown` resolves; then stops accepting and waits for the requests
/// in flight (the caller bounds how long).
pub(crate) async fn serve_http(
    mut incoming: Incoming,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.read_header_timeout)
        .max_buf_size(HTTP1_READ_BUFFER);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_concurrent_streams);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let conn = tokio::select! {
            conn = incoming.next() => conn,
            () = &mut shutdown => break,
        };
        let Some(conn) = conn else {
            break;
        };
        let peer = conn.peer();
        let service = TowerToHyperService::new(TrackRequests::on(conn.activity(), router.clone()));
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(conn), service)
            .into_owned();
        let served = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = served.await {
                tracing::debug!(%peer, %error, "HTTP connection ended with an error");
            }
        });
    }
    // No new connections; those open finish their requests.
    drop(incoming);
    graceful.shutdown().await;
    Ok(())
}
