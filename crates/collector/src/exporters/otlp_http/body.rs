//! Request bodies: the batch as protobuf (the bytes it arrived as, while
//! unchanged) or OTLP/JSON, compressed.

use std::io::Write;

use bytes::Bytes;

use profbridge_translate::json::request_to_json_string;

use super::config::Encoding;
use crate::pipeline::Profiles;
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

pub(super) fn encode(
    batch: &Profiles,
    encoding: Encoding,
    compression: Compression,
) -> Result<Bytes, CompressError> {
    let raw = match encoding {
        Encoding::Proto => batch.protobuf(),
        Encoding::Json => Bytes::from(request_to_json_string(batch.request())),
    };
    compress(raw, compression).map_err(|error| CompressError {
        compression: compression.name(),
        error,
    })
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
