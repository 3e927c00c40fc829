use serde::Deserialize;

use crate::config::units::{ByteSize, Duration};
use crate::tls::config::{AuthConfig, ServerTlsConfig};

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
}

impl Default for Keepalive {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(120),
            timeout: Duration::from_secs(20),
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
    /// Server TLS; plaintext when absent.
    pub tls: Option<Box<ServerTlsConfig>>,
    /// Bearer-token authentication; none when absent.
    pub auth: Option<Box<AuthConfig>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            endpoint: "127.0.0.1:4318".to_owned(),
            profiles_url_path: "/v1development/profiles".to_owned(),
            max_request_body_size: ByteSize(20 << 20),
            tls: None,
            auth: None,
        }
    }
}
