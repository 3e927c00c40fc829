//! What every client that connects somewhere needs, from the options
//! `settings::client` declares: endpoint schemes, whether a connection
//! uses TLS and the PEM files it reads (tls.rs), a connector that skips
//! verification for gRPC (skip_verify.rs), and the reqwest client HTTP
//! clients send with (http.rs).

pub(crate) mod http;
pub(crate) mod kafka;
pub(crate) mod skip_verify;
pub(crate) mod tls;
