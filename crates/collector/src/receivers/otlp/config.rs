use serde::Deserialize;

use crate::settings::server::{GrpcServerSettings, HttpListener, ListenerCap};
use crate::settings::{deserialize_embedding, options_key_paths};
use crate::settings::{ExtensionRef, NestedSection};
use crate::settings::{Options, Problem};

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
    pub grpc: Option<GrpcServerSettings>,
    pub http: Option<HttpConfig>,
}

/// `protocols: http:`: the path profiles are POSTed to, beside an HTTP
/// listener's settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// The path profiles are POSTed to.
    pub profiles_url_path: String,
    /// `endpoint` (127.0.0.1:4318 by default), `max_request_body_size`
    /// (as sent and after decompression), `read_timeout`, `tls`, `auth`,
    /// `read_header_timeout`, `idle_timeout` and `max_connections`.
    #[serde(skip)]
    pub listener: HttpListener,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            profiles_url_path: "/v1development/profiles".to_owned(),
            listener: HttpListener::at("127.0.0.1:4318"),
        }
    }
}

impl Options for HttpConfig {
    fn http_listener(&self) -> Option<&HttpListener> {
        Some(&self.listener)
    }

    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        Some(&mut self.listener)
    }
}

impl Options for OtlpReceiverConfig {
    fn extension_refs(&self) -> Vec<ExtensionRef> {
        let grpc = self.protocols.grpc.as_ref();
        let http = self.protocols.http.as_ref();
        let grpc = grpc.and_then(|grpc| grpc.extension_ref("protocols.grpc"));
        let http = http.and_then(|http| http.listener.server.extension_ref("protocols.http"));
        grpc.into_iter().chain(http).collect()
    }

    fn nested_sections() -> Vec<NestedSection<Self>> {
        vec![NestedSection {
            path: &["protocols", "http"],
            fill: |options, value, path| {
                options.protocols.http = Some(deserialize_embedding(value, path)?);
                Ok(())
            },
            key_paths: options_key_paths::<HttpConfig>,
        }]
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
        }
        if let Some(http) = &protocols.http {
            found.extend(prefixed("protocols.http", http.listener.problems()));
        }
        found
    }

    fn listeners(&self) -> Vec<(String, String)> {
        let grpc = self
            .protocols
            .grpc
            .iter()
            .map(|grpc| ("protocols.grpc.endpoint".to_owned(), grpc.endpoint.clone()));
        let http = self.protocols.http.iter().map(|http| {
            (
                "protocols.http.endpoint".to_owned(),
                http.listener.server.endpoint.clone(),
            )
        });
        grpc.chain(http).collect()
    }

    fn connection_caps(&self) -> Vec<ListenerCap> {
        let grpc = self
            .protocols
            .grpc
            .iter()
            .map(|grpc| ListenerCap::at("protocols.grpc", grpc.max_connections));
        let http = self.protocols.http.iter().map(|http| {
            ListenerCap::at("protocols.http", http.listener.connection.max_connections)
        });
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
