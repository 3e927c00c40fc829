//! Request bodies: Content-Encoding undone within the body limit.

use std::io::Read;

use axum::http::{header, HeaderMap};
use flate2::Decompress;
use profbridge_pprof::{gunzip_into, GunzipError};

use super::reply::Failure;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentEncoding {
    Identity,
    Gzip,
    Zstd,
}

/// The request's Content-Encoding, or a 415 for one we do not decode.
pub(crate) fn content_encoding(headers: &HeaderMap) -> Result<ContentEncoding, Failure> {
    let Some(value) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(ContentEncoding::Identity);
    };
    let text = value.to_str().unwrap_or("?").trim().to_ascii_lowercase();
    match text.as_str() {
        "" | "identity" => Ok(ContentEncoding::Identity),
        "gzip" | "x-gzip" => Ok(ContentEncoding::Gzip),
        "zstd" => Ok(ContentEncoding::Zstd),
        other => Err(Failure::UnsupportedEncoding(format!(
            "Content-Encoding {other:?} is not supported; use gzip, zstd or none"
        ))),
    }
}

/// The body with its Content-Encoding undone, at most `limit` bytes.
pub(crate) fn decode_body(
    encoding: ContentEncoding,
    bytes: &[u8],
    limit: usize,
) -> Result<Vec<u8>, Failure> {
    let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut out = Vec::new();
    let too_large = || {
        Failure::TooLarge(format!(
            "the body decompresses to more than max_request_body_size ({limit} bytes)"
        ))
    };
    let (name, result) = match encoding {
        ContentEncoding::Identity => return Ok(bytes.to_vec()),
        // An empty body holds no gzip member, and so nothing.
        ContentEncoding::Gzip if bytes.is_empty() => return Ok(Vec::new()),
        ContentEncoding::Gzip => (
            "gzip",
            match gunzip_into(bytes, &mut out, limit, &mut Decompress::new(false)) {
                Ok(()) => Ok(0),
                Err(GunzipError::TooLarge) => return Err(too_large()),
                Err(GunzipError::Corrupt(error)) => Err(error),
            },
        ),
        ContentEncoding::Zstd => (
            "zstd",
            zstd::stream::read::Decoder::new(bytes)
                .and_then(|decoder| decoder.take(read_limit).read_to_end(&mut out)),
        ),
    };
    result.map_err(|e| Failure::BadRequest(format!("Content-Encoding {name}: {e}")))?;
    if out.len() > limit {
        return Err(too_large());
    }
    Ok(out)
}
