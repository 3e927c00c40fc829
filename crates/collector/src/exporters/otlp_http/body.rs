//! Request bodies: the batch encoded as protobuf or OTLP/JSON, compressed.

use std::io::Write;

use prost::Message;

use profbridge_translate::json::request_to_json_string;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

use super::config::Encoding;
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
    request: &ExportProfilesServiceRequest,
    encoding: Encoding,
    compression: Compression,
) -> Result<Vec<u8>, CompressError> {
    let raw = match encoding {
        Encoding::Proto => request.encode_to_vec(),
        Encoding::Json => request_to_json_string(request).into_bytes(),
    };
    compress(raw, compression).map_err(|error| CompressError {
        compression: compression.name(),
        error,
    })
}

fn compress(raw: Vec<u8>, compression: Compression) -> std::io::Result<Vec<u8>> {
    match compression {
        Compression::None => Ok(raw),
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(raw.len() / 4),
                flate2::Compression::fast(),
            );
            encoder.write_all(&raw)?;
            encoder.finish()
        }
        Compression::Zstd => zstd::bulk::compress(&raw, ZSTD_LEVEL),
    }
}
