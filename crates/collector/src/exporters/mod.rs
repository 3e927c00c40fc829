//! Exporters: where profiles leave.

mod attributes;
pub mod debug;
pub mod file;
/// The exporter helper: every exporter's sending queue, retries and
/// dead letters.
pub use crate::pipeline::sending as helper;
mod http_reply;
pub mod kafka;
pub mod nop;
pub mod otlp;
pub mod otlp_http;
mod partial_success;
pub mod pyroscope;
mod to_pprof;

pub use crate::pipeline::{BoxError, ExportCause, ExportError};

/// An exporter's `compression` as receivers name what arrives, to match
/// the bytes a request arrived as.
fn on_the_wire(
    compression: crate::settings::client::Compression,
) -> crate::protocol::compression::Compression {
    use crate::protocol::compression::Compression as Wire;
    use crate::settings::client::Compression;
    match compression {
        Compression::Gzip => Wire::Gzip,
        Compression::Zstd => Wire::Zstd,
        Compression::None => Wire::Identity,
    }
}
