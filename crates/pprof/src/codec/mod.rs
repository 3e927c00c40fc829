//! Bytes ⇄ [`Profile`]: gzip detection, size limits, protobuf, validation.

mod gzip;
pub mod wire;

use prost::Message;
use thiserror::Error;

use crate::validate::{validate, ValidationError};
use crate::Profile;

pub use gzip::{is_gzip, GzipCompressor};

/// Largest accepted input, compressed or not: 64 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 64 << 20;
/// Largest accepted protobuf after gunzip: 512 MiB.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 512 << 20;
/// gzip level used unless the caller picks one. Level 1 is what Go's
/// runtime/pprof writes with; it is several times faster than level 6 and
/// costs about a fifth more bytes on typical profiles (docs/benchmarks.md).
pub const DEFAULT_GZIP_LEVEL: u32 = 1;

/// Limits that keep hostile input from exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    pub max_input_bytes: usize,
    pub max_decompressed_bytes: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    /// gzip at a level from 0 (store) to 9 (smallest).
    Gzip {
        level: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOptions {
    pub compression: Compression,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        Self {
            compression: Compression::Gzip {
                level: DEFAULT_GZIP_LEVEL,
            },
        }
    }
}

#[derive(Debug, Error)]
pub enum DecodeError {
    #[error("input is empty")]
    Empty,
    #[error("input has {size} bytes, over the limit of {limit}")]
    InputTooLarge { size: usize, limit: usize },
    #[error("gzip data decompresses to more than the limit of {limit} bytes")]
    DecompressedTooLarge { limit: usize },
    #[error("gzip: {0}")]
    Gzip(std::io::Error),
    #[error("protobuf: {0}")]
    Protobuf(#[from] prost::DecodeError),
    #[error("invalid profile: {0}")]
    Invalid(#[from] ValidationError),
}

/// Decodes and validates a pprof profile, gzipped or raw.
pub fn decode(input: &[u8], options: &DecodeOptions) -> Result<Profile, DecodeError> {
    let profile = decode_unvalidated(input, options)?;
    validate(&profile)?;
    Ok(profile)
}

/// Decodes without validating: for tools that must show broken profiles.
pub fn decode_unvalidated(input: &[u8], options: &DecodeOptions) -> Result<Profile, DecodeError> {
    if input.is_empty() {
        return Err(DecodeError::Empty);
    }
    if input.len() > options.max_input_bytes {
        return Err(DecodeError::InputTooLarge {
            size: input.len(),
            limit: options.max_input_bytes,
        });
    }
    if is_gzip(input) {
        Ok(Profile::decode(gunzip(input, options)?.as_slice())?)
    } else {
        Ok(Profile::decode(input)?)
    }
}

/// Gunzips within the limits; the result is never empty.
pub fn gunzip(input: &[u8], options: &DecodeOptions) -> Result<Vec<u8>, DecodeError> {
    if input.len() > options.max_input_bytes {
        return Err(DecodeError::InputTooLarge {
            size: input.len(),
            limit: options.max_input_bytes,
        });
    }
    let raw = gzip::decompress(input, options.max_decompressed_bytes)?;
    if raw.is_empty() {
        return Err(DecodeError::Empty);
    }
    Ok(raw)
}

/// Encodes a profile as protobuf, gzipped unless `Compression::None`.
pub fn encode(profile: &Profile, options: &EncodeOptions) -> Vec<u8> {
    let mut raw = Vec::new();
    wire::write_profile(profile, &mut raw);
    compress(raw, options)
}

/// Protobuf bytes as `options` want them written.
pub fn compress(raw: Vec<u8>, options: &EncodeOptions) -> Vec<u8> {
    match options.compression {
        Compression::None => raw,
        Compression::Gzip { level } => gzip::compress(raw, level),
    }
}
