//! Request bodies: the batch as protobuf or OTLP/JSON, compressed; while
//! the batch is unchanged, protobuf is the bytes it arrived as, compressed
//! again only when it arrived with another compression.

use std::io::Write;

use bytes::Bytes;

use profbridge_translate::json::request_to_json_string;

use super::config::Encoding;
use crate::pipeline::{Body, Profiles, Sent};
use crate::settings::client::Compression;

/// zstd's default level.
const ZSTD_LEVEL: i32 = 3;

pub(super) fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Proto => "application/x-protobuf",
        Encoding::Json => "application/json",
    }
}

/// A batch that could not be compressed.
#[derive(Debug, thiserror::Error)]
#[error("{compression}: {error}")]
pub(super) struct CompressError {
    compression: &'static str,
    error: std::io::Error,
}

/// The body for `batch`, and how it was made.
pub(super) fn encode(
    batch: &Profiles,
    encoding: Encoding,
    compression: Compression,
) -> Result<(Bytes, Sent), CompressError> {
    let body = match encoding {
        Encoding::Proto => batch.body(crate::exporters::on_the_wire(compression)),
        Encoding::Json => Body::Encoded(Bytes::from(request_to_json_string(batch.request()))),
    };
    let sent = match encoding {
        Encoding::Proto => body.sent(),
        Encoding::Json => Sent::Other,
    };
    let bytes = match body {
        Body::AsReceived(bytes) => bytes,
        Body::Recompress(raw) | Body::Encoded(raw) => {
            compress(raw, compression).map_err(|error| CompressError {
                compression: compression.name(),
                error,
            })?
        }
    };
    Ok((bytes, sent))
}

fn compress(raw: Bytes, compression: Compression) -> std::io::Result<Bytes> {
    match compression {
        Compression::None => Ok(raw),
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(raw.len() / 4),
                flate2::Compression::fast(),
            );
            encoder.write_all(&raw)?;
            encoder.finish().map(Bytes::from)
        }
        Compression::Zstd => zstd::bulk::compress(&raw, ZSTD_LEVEL).map(Bytes::from),
    }
}
