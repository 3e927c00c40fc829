//! Bytes ⇄ [`Profile`]: gzip detection, size limits, protobuf, validation.

mod gzip;
mod packed;
mod presized;
mod raw_strings;
pub mod wire;

use prost::Message;
use thiserror::Error;

use crate::validate::{validate, ValidationError};
use crate::Profile;

pub use gzip::{gunzip_into, gzip_trailer_size, is_gzip, GunzipError, GzipCompressor};
pub use packed::{decode_packed_gunzipped, decode_packed_keeping_raw, PackedProfile, SampleSource};
pub use raw_strings::RawStrings;

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

/// Why bytes are not a pprof profile. The text of each variant includes
/// the detail it wraps, which is therefore not also its `source()`
/// (docs/architecture.md, "Errors say everything once").
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
    /// prost's message, whole: `protobuf: failed to decode Protobuf
    /// message: Profile.sample: buffer underflow`.
    #[error("protobuf: {0}")]
    Protobuf(prost::DecodeError),
    #[error("invalid profile: {0}")]
    Invalid(ValidationError),
}

impl From<prost::DecodeError> for DecodeError {
    fn from(error: prost::DecodeError) -> Self {
        Self::Protobuf(error)
    }
}

impl From<ValidationError> for DecodeError {
    fn from(error: ValidationError) -> Self {
        Self::Invalid(error)
    }
}

/// Decodes and validates a pprof profile, gzipped or raw. Strings that are
/// not UTF-8 hold U+FFFD in place of each invalid sequence; see
/// [`decode_keeping_raw`] for their original bytes.
pub fn decode(input: &[u8], options: &DecodeOptions) -> Result<Profile, DecodeError> {
    decode_keeping_raw(input, options).map(|(profile, _)| profile)
}

/// [`decode`], and the original bytes of the strings that were not UTF-8
/// (google/pprof reads strings as bytes): what [`encode_keeping_raw`] and
/// [`crate::dump_bytes`] take to write them back.
pub fn decode_keeping_raw(
    input: &[u8],
    options: &DecodeOptions,
) -> Result<(Profile, RawStrings), DecodeError> {
    let (profile, raw) = decode_unvalidated_keeping_raw(input, options)?;
    validate(&profile)?;
    Ok((profile, raw))
}

/// [`decode_keeping_raw`] of protobuf that [`gunzip`] already took out of
/// gzip, within the limits: the input limit was the compressed size's.
pub(crate) fn decode_gunzipped_keeping_raw(
    protobuf: &[u8],
) -> Result<(Profile, RawStrings), DecodeError> {
    let (profile, raw) = decode_protobuf(protobuf)?;
    validate(&profile)?;
    Ok((profile, raw))
}

/// Decodes without validating: for tools that must show broken profiles.
pub fn decode_unvalidated(input: &[u8], options: &DecodeOptions) -> Result<Profile, DecodeError> {
    decode_unvalidated_keeping_raw(input, options).map(|(profile, _)| profile)
}

/// [`decode_unvalidated`], and the original bytes of the strings that
/// were not UTF-8.
pub fn decode_unvalidated_keeping_raw(
    input: &[u8],
    options: &DecodeOptions,
) -> Result<(Profile, RawStrings), DecodeError> {
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
        decode_protobuf(gunzip(input, options)?.as_slice())
    } else {
        decode_protobuf(input)
    }
}

/// prost's decode; when prost refuses the bytes, the lenient path for
/// strings that are not UTF-8, which returns `None` (and so prost's error)
/// for any other fault.
fn decode_protobuf(bytes: &[u8]) -> Result<(Profile, RawStrings), DecodeError> {
    let mut profile = presized::profile_for(bytes);
    match profile.merge(bytes).map(|()| profile) {
        Ok(profile) => Ok((profile, RawStrings::default())),
        Err(error) => decode_refused(bytes, error),
    }
}

/// The slow path, out of the way of the fast one.
#[cold]
#[inline(never)]
fn decode_refused(
    bytes: &[u8],
    error: prost::DecodeError,
) -> Result<(Profile, RawStrings), DecodeError> {
    match raw_strings::decode_lossy(bytes) {
        Some(decoded) => Ok(decoded?),
        None => Err(error.into()),
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
    if input.is_empty() {
        return Err(DecodeError::Empty);
    }
    let raw = gzip::decompress(input, options.max_decompressed_bytes)?;
    if raw.is_empty() {
        return Err(DecodeError::Empty);
    }
    Ok(raw)
}

/// Encodes a profile as protobuf, gzipped unless `Compression::None`.
pub fn encode(profile: &Profile, options: &EncodeOptions) -> Vec<u8> {
    let mut raw = encode_buffer(profile);
    wire::write_profile(profile, &mut raw);
    compress(raw, options)
}

/// [`encode`], writing the original bytes of the strings `raw` kept (those
/// the profile still holds in their U+FFFD form), so that pprof → pprof
/// keeps strings that are not UTF-8.
pub fn encode_keeping_raw(profile: &Profile, raw: &RawStrings, options: &EncodeOptions) -> Vec<u8> {
    let mut out = encode_buffer(profile);
    wire::write_profile_keeping_raw(profile, raw, &mut out);
    compress(out, options)
}

/// [`encode_keeping_raw`] of a packed profile, which is freed once its
/// protobuf is written, before it is compressed.
pub fn encode_packed(profile: PackedProfile, raw: &RawStrings, options: &EncodeOptions) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed::encoded_len_hint(&profile));
    wire::write_source_keeping_raw(&profile, raw, &mut out);
    drop(profile);
    compress(out, options)
}

/// Room for `profile`'s encoding, so that it is written once rather than
/// copied at every doubling (docs/benchmarks.md, "Where convert's memory
/// goes"): prost's length of the same fields; raw strings longer than
/// their U+FFFD forms grow it once.
fn encode_buffer(profile: &Profile) -> Vec<u8> {
    Vec::with_capacity(profile.encoded_len())
}

/// Protobuf bytes as `options` want them written.
pub fn compress(raw: Vec<u8>, options: &EncodeOptions) -> Vec<u8> {
    match options.compression {
        Compression::None => raw,
        Compression::Gzip { level } => gzip::compress(raw, level),
    }
}
