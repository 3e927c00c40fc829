//! What listeners are configured with, in the shapes of the OpenTelemetry
//! Collector's `confighttp.ServerConfig` and `configgrpc.ServerConfig`:
//! [`HttpServerSettings`] and [`HttpConnectionSettings`], which every HTTP
//! receiver embeds (the telemetry endpoint and the HTTP extensions embed
//! the connection settings only), and [`GrpcServerSettings`].

use serde::Deserialize;

use super::parts::{Embedded, Written};
use super::problems::Problem;
use super::refs::ExtensionRef;
use super::tls::{security_problems, AuthConfig, ServerTlsConfig};
use super::units::{ByteSize, Duration};
use crate::keep_unwritten;

/// Connections a receiver's listener holds at once, by default: the most
/// a `max_connections` left unwritten is derived as (`descriptors`).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 1024;
/// Connections the telemetry endpoint and each HTTP extension hold at
/// once, by default.
pub const ENDPOINT_MAX_CONNECTIONS: u32 = 64;
/// How long a request's head may take (confighttp's default).
pub const DEFAULT_READ_HEADER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a request's body may take, by default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an HTTP connection may stay silent (confighttp's default).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a new gRPC connection has to send the HTTP/2 preface, by
/// default (grpc-go's is 120 s).
pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest accepted request body by default.
pub const DEFAULT_MAX_REQUEST_BODY_SIZE: ByteSize = ByteSize(20 << 20);

/// Where an HTTP receiver listens, how it is secured, and what a request
/// may cost it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpServerSettings {
    /// host:port to listen on.
    pub endpoint: String,
    /// Largest accepted body: as sent, and after decompression.
    pub max_request_body_size: ByteSize,
    /// How long a request's body may take to arrive, from when its head
    /// was read.
    pub read_timeout: Duration,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl HttpServerSettings {
    /// Settings listening on `endpoint`, with every other default.
    pub fn at(endpoint: &str) -> Self {
        Self {
            endpoint: endpoint.to_owned(),
            max_request_body_size: DEFAULT_MAX_REQUEST_BODY_SIZE,
            read_timeout: DEFAULT_READ_TIMEOUT,
            tls: None,
            auth: None,
        }
    }

    /// Every problem, at paths under the embedding section.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.max_request_body_size.0 == 0 {
            problems.push(Problem::new("max_request_body_size", "must be more than 0"));
        }
        positive_duration(&mut problems, "read_timeout", self.read_timeout);
        problems.extend(security_problems(self.tls.as_deref(), self.auth.as_deref()));
        problems
    }

    /// The authenticator extension `auth` names, with `auth`'s key path
    /// under `prefix` (empty for the component's own section).
    pub fn extension_ref(&self, prefix: &str) -> Option<ExtensionRef> {
        let auth = self.auth.as_deref()?;
        auth.extension_ref(&super::problems::join(prefix, "auth"))
    }
}

impl Default for HttpServerSettings {
    fn default() -> Self {
        Self::at("")
    }
}

impl Embedded for HttpServerSettings {
    fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
        keep_unwritten!(self, defaults, written;
            endpoint, max_request_body_size, read_timeout, tls, auth);
    }
}

/// An HTTP receiver's listener: [`HttpServerSettings`] and
/// [`HttpConnectionSettings`], both embedded at the top of its options
/// ([`super::Options::http_listener`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpListener {
    pub server: HttpServerSettings,
    pub connection: HttpConnectionSettings,
}

impl HttpListener {
    /// A listener on `endpoint`, with every other default.
    pub fn at(endpoint: &str) -> Self {
        Self {
            server: HttpServerSettings::at(endpoint),
            connection: HttpConnectionSettings::default(),
        }
    }

    /// Every problem, at paths under the embedding section.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = self.server.problems();
        problems.extend(self.connection.problems());
        problems
    }
}

/// How long an HTTP listener waits for a silent client, and how many it
/// holds at once: every HTTP listener has these.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConnectionSettings {
    /// How long a request's head may take to arrive.
    pub read_header_timeout: Duration,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
    /// Connections open at once; at the cap, the least active one gives
    /// way to a new one. A receiver's is derived at start when not
    /// written.
    pub max_connections: Option<u32>,
}

impl Default for HttpConnectionSettings {
    fn default() -> Self {
        Self {
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: None,
        }
    }
}

impl HttpConnectionSettings {
    /// The defaults of the telemetry endpoint and the HTTP extensions:
    /// few connections, heads within 10 s, and `idle_timeout`.
    pub const fn for_endpoint(idle_timeout: Duration) -> Self {
        Self {
            read_header_timeout: Duration::from_secs(10),
            idle_timeout,
            max_connections: Some(ENDPOINT_MAX_CONNECTIONS),
        }
    }

    /// Every problem, at paths under the embedding section.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        positive_duration(
            &mut problems,
            "read_header_timeout",
            self.read_header_timeout,
        );
        positive_duration(&mut problems, "idle_timeout", self.idle_timeout);
        positive_cap(&mut problems, self.max_connections);
        problems
    }
}

impl Embedded for HttpConnectionSettings {
    fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
        keep_unwritten!(self, defaults, written;
            read_header_timeout, idle_timeout, max_connections);
    }
}

/// `protocols: grpc:` of the OTLP receiver.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpcServerSettings {
    /// host:port to listen on.
    pub endpoint: String,
    /// Largest accepted message, in MiB, after decompression.
    pub max_recv_msg_size_mib: u64,
    /// Concurrent HTTP/2 streams per connection.
    pub max_concurrent_streams: u32,
    /// Connections open at once; at the cap, the least active one gives
    /// way to a new one. Derived at start when not written.
    pub max_connections: Option<u32>,
    /// How long a request's message may take to arrive, from when its
    /// headers were read (or the client's `grpc-timeout`, if shorter).
    pub read_timeout: Duration,
    /// How long a new connection has to finish its TLS handshake and send
    /// the HTTP/2 preface and SETTINGS (grpc-go's `ConnectionTimeout`).
    pub connection_timeout: Duration,
    pub keepalive: Keepalive,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl Default for GrpcServerSettings {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4317".to_owned(),
            max_recv_msg_size_mib: 16,
            max_concurrent_streams: 100,
            max_connections: None,
            read_timeout: DEFAULT_READ_TIMEOUT,
            connection_timeout: DEFAULT_CONNECTION_TIMEOUT,
            keepalive: Keepalive::default(),
            tls: None,
            auth: None,
        }
    }
}

impl GrpcServerSettings {
    /// Every problem, at paths under the section.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        positive_count(
            &mut problems,
            "max_concurrent_streams",
            self.max_concurrent_streams,
        );
        positive_cap(&mut problems, self.max_connections);
        positive_duration(&mut problems, "read_timeout", self.read_timeout);
        positive_duration(&mut problems, "connection_timeout", self.connection_timeout);
        positive_duration(
            &mut problems,
            "keepalive.max_connection_idle",
            self.keepalive.max_connection_idle,
        );
        problems.extend(security_problems(self.tls.as_deref(), self.auth.as_deref()));
        problems
    }

    /// The authenticator extension `auth` names, with `auth`'s key path
    /// under `prefix`.
    pub fn extension_ref(&self, prefix: &str) -> Option<ExtensionRef> {
        let auth = self.auth.as_deref()?;
        auth.extension_ref(&super::problems::join(prefix, "auth"))
    }
}

/// `keepalive:` of a gRPC server, as grpc-go names its parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Keepalive {
    /// How often the server pings an idle connection.
    pub time: Duration,
    /// How long it waits for the ping's answer.
    pub timeout: Duration,
    /// A connection on which no byte moved either way for this long is
    /// closed (grpc-go's keepalive server parameter of this name).
    pub max_connection_idle: Duration,
}

impl Default for Keepalive {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(120),
            timeout: Duration::from_secs(20),
            max_connection_idle: Duration::from_secs(180),
        }
    }
}

fn positive_duration(problems: &mut Vec<Problem>, path: &str, value: Duration) {
    if value.0.is_zero() {
        problems.push(Problem::new(path, "must be more than 0"));
    }
}

fn positive_count(problems: &mut Vec<Problem>, path: &str, value: u32) {
    if value == 0 {
        problems.push(Problem::new(path, "must be more than 0"));
    }
}

fn positive_cap(problems: &mut Vec<Problem>, max_connections: Option<u32>) {
    if let Some(value) = max_connections {
        positive_count(problems, "max_connections", value);
    }
}

/// One listener's `max_connections`, as the configuration has it: where
/// its section is, under the component's own key (empty for the
/// component's own keys), and the value written, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerCap {
    pub section: String,
    pub max_connections: Option<u32>,
}

impl ListenerCap {
    /// The cap of the listener whose keys sit at `section`.
    pub fn at(section: &str, max_connections: Option<u32>) -> Self {
        Self {
            section: section.to_owned(),
            max_connections,
        }
    }
}
