use std::io::{Read, Write};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::DecodeError;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Pre-allocation from the gzip trailer's size hint is capped so that a lying
/// trailer cannot reserve much memory up front.
const MAX_PREALLOCATION: usize = 64 << 20;

/// True when `data` starts with the gzip magic bytes.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&GZIP_MAGIC)
}

/// Gunzips every member of `data`, failing once output would exceed `limit`.
pub(super) fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(size_hint(data).min(limit).min(MAX_PREALLOCATION));
    let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    MultiGzDecoder::new(data)
        .take(read_limit)
        .read_to_end(&mut out)
        .map_err(DecodeError::Gzip)?;
    if out.len() > limit {
        return Err(DecodeError::DecompressedTooLarge { limit });
    }
    Ok(out)
}

/// The ISIZE field of the last gzip member: the uncompressed size mod 2^32.
fn size_hint(data: &[u8]) -> usize {
    let Some(tail) = data
        .len()
        .checked_sub(4)
        .and_then(|start| data.get(start..))
    else {
        return 0;
    };
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(tail);
    usize::try_from(u32::from_le_bytes(bytes)).unwrap_or(0)
}

pub(super) fn compress(raw: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(raw.len() / 4 + 64),
        flate2::Compression::new(level.min(9)),
    );
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(raw);
    encoder.finish().unwrap_or_default()
}
