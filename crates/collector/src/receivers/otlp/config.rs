use serde::Deserialize;

use crate::settings::tls::security_problems;
use crate::settings::tls::{AuthConfig, ServerTlsConfig};
use crate::settings::units::{ByteSize, Duration};
use crate::settings::Problem;
use crate::settings::{ExtensionRef, Options};

/// Connections a receiver's listener holds at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 1024;
/// How long a request's head may take (confighttp's default).
pub const DEFAULT_READ_HEADER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a request's body may take, by default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an HTTP connection may stay silent (confighttp's default).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// `receivers: otlp: protocols: {grpc, http}`. A protocol left out is off.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpReceiverConfig {
    #[serde(default)]
    pub protocols: Protocols,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocols {
    pub grpc: Option<GrpcConfig>,
    pub http: Option<HttpConfig>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpcConfig {
    /// host:port to listen on.
    pub endpoint: String,
    /// Largest accepted message, in MiB, after decompression.
    pub max_recv_msg_size_mib: u64,
    /// Concurrent HTTP/2 streams per connection.
    pub max_concurrent_streams: u32,
    /// Connections open at once; at the cap, accepting waits until one
    /// closes.
    pub max_connections: u32,
    /// How long a request's message may take to arrive, from when its
    /// headers were read (or the client's `grpc-timeout`, if shorter).
    pub read_timeout: Duration,
    pub keepalive: Keepalive,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4317".to_owned(),
            max_recv_msg_size_mib: 16,
            max_concurrent_streams: 100,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            read_timeout: DEFAULT_READ_TIMEOUT,
            keepalive: Keepalive::default(),
            tls: None,
            auth: None,
        }
    }
}

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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// host:port to listen on.
    pub endpoint: String,
    /// The path profiles are POSTed to.
    pub profiles_url_path: String,
    /// Largest accepted body, both as sent and after decompression.
    pub max_request_body_size: ByteSize,
    /// How long a request's head may take to arrive.
    pub read_header_timeout: Duration,
    /// How long a request's body may take to arrive, from when its head
    /// was read.
    pub read_timeout: Duration,
    /// A connection on which no byte moved either way for this long is
    /// closed.
    pub idle_timeout: Duration,
    /// Connections open at once; at the cap, accepting waits until one
    /// closes.
    pub max_connections: u32,
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl GrpcConfig {
    pub(crate) fn connection_limits(&self) -> crate::net::ConnectionLimits {
        crate::net::ConnectionLimits {
            max_connections: crate::net::count(self.max_connections),
            idle_timeout: self.keepalive.max_connection_idle.0,
        }
    }

    /// Every problem in the connection options.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        positive_count(
            &mut problems,
            "max_concurrent_streams",
            self.max_concurrent_streams,
        );
        positive_count(&mut problems, "max_connections", self.max_connections);
        positive_duration(&mut problems, "read_timeout", self.read_timeout);
        positive_duration(
            &mut problems,
            "keepalive.max_connection_idle",
            self.keepalive.max_connection_idle,
        );
        problems
    }
}

impl HttpConfig {
    pub(crate) fn connection_limits(&self) -> crate::net::ConnectionLimits {
        crate::net::ConnectionLimits {
            max_connections: crate::net::count(self.max_connections),
            idle_timeout: self.idle_timeout.0,
        }
    }

    pub(crate) fn http_limits(&self) -> crate::net::HttpLimits {
        crate::net::HttpLimits {
            read_header_timeout: self.read_header_timeout.0,
            max_concurrent_streams: 100,
        }
    }

    /// Every problem in the connection options.
    pub fn problems(&self) -> Vec<Problem> {
        http_listener_problems(
            self.read_header_timeout,
            self.read_timeout,
            self.idle_timeout,
            self.max_connections,
        )
    }
}

/// The problems in an HTTP listener's connection options.
pub(crate) fn http_listener_problems(
    read_header_timeout: Duration,
    read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: u32,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    positive_duration(&mut problems, "read_header_timeout", read_header_timeout);
    positive_duration(&mut problems, "read_timeout", read_timeout);
    positive_duration(&mut problems, "idle_timeout", idle_timeout);
    positive_count(&mut problems, "max_connections", max_connections);
    problems
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

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4318".to_owned(),
            profiles_url_path: "/v1development/profiles".to_owned(),
            max_request_body_size: ByteSize(20 << 20),
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            tls: None,
            auth: None,
        }
    }
}

impl Options for OtlpReceiverConfig {
    fn extension_refs(&self) -> Vec<ExtensionRef> {
        let grpc = self
            .protocols
            .grpc
            .as_ref()
            .and_then(|grpc| grpc.auth.as_deref());
        let http = self
            .protocols
            .http
            .as_ref()
            .and_then(|http| http.auth.as_deref());
        let grpc = grpc.and_then(|auth| auth.extension_ref("protocols.grpc.auth"));
        let http = http.and_then(|auth| auth.extension_ref("protocols.http.auth"));
        grpc.into_iter().chain(http).collect()
    }

    fn problems(&self) -> Vec<Problem> {
        let mut found = Vec::new();
        let protocols = &self.protocols;
        if protocols.grpc.is_none() && protocols.http.is_none() {
            found.push(Problem::new(
                "protocols",
                "no protocol is on; add grpc:, http: or both (with no options they listen on 127.0.0.1:4317 and :4318)",
            ));
        }
        if let Some(grpc) = &protocols.grpc {
            found.extend(prefixed("protocols.grpc", grpc.problems()));
            let security = security_problems(grpc.tls.as_deref(), grpc.auth.as_deref());
            found.extend(prefixed("protocols.grpc", security));
        }
        if let Some(http) = &protocols.http {
            found.extend(prefixed("protocols.http", http.problems()));
            let security = security_problems(http.tls.as_deref(), http.auth.as_deref());
            found.extend(prefixed("protocols.http", security));
        }
        found
    }

    fn listeners(&self) -> Vec<(String, String)> {
        let grpc = self
            .protocols
            .grpc
            .iter()
            .map(|grpc| ("protocols.grpc.endpoint".to_owned(), grpc.endpoint.clone()));
        let http = self
            .protocols
            .http
            .iter()
            .map(|http| ("protocols.http.endpoint".to_owned(), http.endpoint.clone()));
        grpc.chain(http).collect()
    }
}

/// `problems` with their paths under `prefix`.
fn prefixed(prefix: &str, problems: Vec<Problem>) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|problem| Problem::new(format!("{prefix}.{}", problem.path), problem.message))
        .collect()
}
