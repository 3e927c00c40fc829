//! What every listener shares below HTTP and gRPC: the accept loop
//! (incoming.rs), the I/O idle timeout (idle.rs) and the HTTP/1 and
//! HTTP/2 server the HTTP listeners run (http.rs).

mod http;
mod idle;
mod incoming;

use std::time::Duration;

pub(crate) use crate::tls::HandshakeLimits;
pub(crate) use http::{serve_http, HttpLimits};
pub(crate) use incoming::Incoming;

/// Limits on the connections of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; at the cap the listener stops accepting
    /// until one closes.
    pub max_connections: usize,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
}

/// A `u32` count from the configuration as a `usize`.
pub(crate) fn count(value: u32) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}
