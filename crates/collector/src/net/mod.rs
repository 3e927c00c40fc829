//! What every listener shares below HTTP and gRPC: the accept loop
//! (incoming.rs), fair admission at `max_connections` (admission.rs, with
//! each connection's activity.rs, requests counted by in_flight.rs), the
//! I/O limits of a connection (watch.rs, preface.rs, conn.rs) and the
//! HTTP/1 and HTTP/2 server the HTTP listeners run (http.rs); listeners
//! are bound with the kernel's largest accept queue (bind.rs).

mod activity;
mod admission;
mod bind;
mod conn;
mod http;
mod in_flight;
mod incoming;
mod preface;
mod watch;

use std::time::Duration;

use crate::settings::server::{
    GrpcServerSettings, HttpConnectionSettings, ENDPOINT_MAX_CONNECTIONS,
};

pub(crate) use crate::tls::HandshakeLimits;
pub(crate) use bind::bind;
pub(crate) use conn::Greeting;
pub(crate) use http::{serve_http, serve_router, HttpLimits};
pub(crate) use in_flight::TrackRequestsLayer;
pub(crate) use incoming::Incoming;

/// Limits on the connections of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; at the cap, the least active one gives
    /// way to a new one.
    pub max_connections: usize,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
    /// What a new connection must send to count as a client...
    pub greeting: Greeting,
    /// ...and how long after it was accepted.
    pub greeting_timeout: Duration,
}

impl ConnectionLimits {
    /// The limits an HTTP listener's settings set; `unwritten` is its cap
    /// when they leave `max_connections` out.
    pub(crate) fn of_http(settings: &HttpConnectionSettings, unwritten: usize) -> Self {
        Self {
            max_connections: settings.max_connections.map_or(unwritten, count),
            idle_timeout: settings.idle_timeout.0,
            greeting: Greeting::RequestHead,
            greeting_timeout: settings.read_header_timeout.0,
        }
    }

    /// The limits a gRPC listener's settings set; `unwritten` is its cap
    /// when they leave `max_connections` out.
    pub(crate) fn of_grpc(settings: &GrpcServerSettings, unwritten: usize) -> Self {
        Self {
            max_connections: settings.max_connections.map_or(unwritten, count),
            idle_timeout: settings.keepalive.max_connection_idle.0,
            greeting: Greeting::Http2Preface,
            greeting_timeout: settings.connection_timeout.0,
        }
    }
}

/// HTTP/2 streams one connection to an HTTP receiver may have open.
const RECEIVER_MAX_CONCURRENT_STREAMS: u32 = 100;

/// The connection and HTTP limits of an HTTP receiver's listener, whose
/// cap is `unwritten` when its settings leave `max_connections` out.
pub(crate) fn receiver_limits(
    settings: &HttpConnectionSettings,
    unwritten: usize,
) -> (ConnectionLimits, HttpLimits) {
    (
        ConnectionLimits::of_http(settings, unwritten),
        HttpLimits::of(settings, RECEIVER_MAX_CONCURRENT_STREAMS),
    )
}

/// HTTP/2 streams one connection to the telemetry endpoint or an
/// extension may have open.
const ENDPOINT_MAX_CONCURRENT_STREAMS: u32 = 16;

/// The connection and HTTP limits of the telemetry endpoint's or an HTTP
/// extension's listener.
pub(crate) fn endpoint_limits(settings: &HttpConnectionSettings) -> (ConnectionLimits, HttpLimits) {
    (
        ConnectionLimits::of_http(settings, count(ENDPOINT_MAX_CONNECTIONS)),
        HttpLimits::of(settings, ENDPOINT_MAX_CONCURRENT_STREAMS),
    )
}

/// A `u32` count from the configuration as a `usize`.
pub(crate) fn count(value: u32) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}
