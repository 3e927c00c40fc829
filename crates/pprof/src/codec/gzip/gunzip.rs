//! gzip (RFC 1952) decompressed straight into the output buffer: each
//! member's header is read here and its deflate data inflated in a few
//! large steps by an inflate state the caller may keep. About a fifth less
//! time than reading through `flate2::read::MultiGzDecoder`, which inflates
//! in small reads through an intermediate buffer and allocates a fresh
//! state for every request. Every gzip profbridge reads comes through here.

use std::io;

use flate2::{Decompress, FlushDecompress, Status};

/// ID1, ID2 and CM (8: deflate) of every member.
const MAGIC: [u8; 3] = [0x1f, 0x8b, 8];
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
/// ID1, ID2, CM, FLG, MTIME (4), XFL, OS.
const FIXED_HEADER_LEN: usize = 10;
/// CRC32 and ISIZE.
const TRAILER_LEN: usize = 8;
/// Deflate's largest expansion: a length-258 match costs at least two bits.
const MAX_DEFLATE_RATIO: usize = 1032;
/// The least the output grows by when it is full.
const MIN_GROWTH: usize = 64 << 10;
/// How many times its size the deflate data left is expected to inflate
/// to, for the size of the next step.
const LIKELY_RATIO: usize = 4;

/// Why gzip data was not decompressed. `Corrupt`'s text does not name
/// gzip: callers say what was being gunzipped.
#[derive(Debug, thiserror::Error)]
pub enum GunzipError {
    #[error("it decompresses to more than the limit")]
    TooLarge,
    #[error("{0}")]
    Corrupt(io::Error),
}

fn corrupt(what: impl Into<String>) -> GunzipError {
    GunzipError::Corrupt(io::Error::new(io::ErrorKind::InvalidData, what.into()))
}

/// Appends the decompressed contents of `input`, one gzip member or
/// several one after another, to `out`; fails with `TooLarge` as soon as
/// more than `limit` bytes have come out. `inflater` is working memory.
pub fn gunzip_into(
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
    inflater: &mut Decompress,
) -> Result<(), GunzipError> {
    let start = out.len();
    let mut rest = input;
    loop {
        let deflated = after_header(rest)?;
        let member_start = out.len();
        let used = inflate(deflated, out, start.saturating_add(limit), inflater)?;
        let member = out.get(member_start..).unwrap_or_default();
        let after = deflated.get(used..).unwrap_or_default();
        let Some((trailer, next)) = after.split_first_chunk::<TRAILER_LEN>() else {
            return Err(corrupt("the member's trailer is cut off"));
        };
        let [c0, c1, c2, c3, s0, s1, s2, s3] = *trailer;
        let (crc, size) = (
            u32::from_le_bytes([c0, c1, c2, c3]),
            u32::from_le_bytes([s0, s1, s2, s3]),
        );
        if crc32fast::hash(member) != crc {
            return Err(corrupt("CRC32 mismatch"));
        }
        if member.len() as u32 != size {
            return Err(corrupt("ISIZE mismatch"));
        }
        if next.is_empty() {
            return Ok(());
        }
        rest = next;
    }
}

/// The ISIZE field that ends `gzipped`: what its last member says it
/// decompresses to (mod 2^32). A hint only: a stream may lie, and a
/// cut-off one ends in deflate data, not in a trailer.
pub fn gzip_trailer_size(gzipped: &[u8]) -> Option<usize> {
    let isize = gzipped.last_chunk::<4>()?;
    Some(usize::try_from(u32::from_le_bytes(*isize)).unwrap_or(usize::MAX))
}

/// How much room to set aside for gunzipping `gzipped`: its trailer's
/// size unless that is more than deflate could expand it to.
pub(super) fn likely_gunzipped_size(gzipped: &[u8]) -> usize {
    gzip_trailer_size(gzipped)
        .filter(|&size| size <= gzipped.len().saturating_mul(MAX_DEFLATE_RATIO))
        .unwrap_or(0)
}

/// The deflate data after the member header at the start of `member`.
fn after_header(member: &[u8]) -> Result<&[u8], GunzipError> {
    let cut_off = || corrupt("the member header is cut off");
    let (fixed, mut rest) = member
        .split_first_chunk::<FIXED_HEADER_LEN>()
        .ok_or_else(cut_off)?;
    if fixed.get(..3) != Some(&MAGIC[..]) {
        return Err(corrupt("not a gzip member (bad magic or method)"));
    }
    let flags = fixed.get(3).copied().unwrap_or(0);
    if flags & FEXTRA != 0 {
        let (length, after) = rest.split_first_chunk::<2>().ok_or_else(cut_off)?;
        rest = after
            .get(usize::from(u16::from_le_bytes(*length))..)
            .ok_or_else(cut_off)?;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let end = rest.iter().position(|&b| b == 0).ok_or_else(cut_off)?;
            rest = rest.get(end + 1..).ok_or_else(cut_off)?;
        }
    }
    if flags & FHCRC != 0 {
        let (crc, after) = rest.split_first_chunk::<2>().ok_or_else(cut_off)?;
        let header = member.get(..member.len() - rest.len()).unwrap_or_default();
        if crc32fast::hash(header) as u16 != u16::from_le_bytes(*crc) {
            return Err(corrupt("header CRC mismatch"));
        }
        rest = after;
    }
    Ok(rest)
}

/// Inflates the deflate stream at the start of `deflated` onto `out`,
/// failing once `out` would pass `out_limit` bytes; returns how many
/// bytes of `deflated` the stream took.
///
/// Each step hands zlib a zeroed window the size of the output so far, or
/// of [`LIKELY_RATIO`] times the deflate data left if that is more, never
/// all of `out`'s spare capacity: flate2 zeroes whatever room it is given,
/// and a reused buffer or a size hint from a cut-off trailer can leave
/// tens of MiB of room.
fn inflate(
    deflated: &[u8],
    out: &mut Vec<u8>,
    out_limit: usize,
    inflater: &mut Decompress,
) -> Result<usize, GunzipError> {
    inflater.reset(false);
    loop {
        let produced = out.len();
        // One byte past the limit tells a stream that reaches it from one
        // that passes it.
        let room = out_limit.saturating_add(1).saturating_sub(produced);
        if room == 0 {
            return Err(GunzipError::TooLarge);
        }
        let taken = inflater.total_in();
        let remaining = deflated.get(taken as usize..).unwrap_or_default();
        let wanted = room.min(
            produced
                .max(MIN_GROWTH)
                .max(remaining.len().saturating_mul(LIKELY_RATIO)),
        );
        let spare = out.capacity() - produced;
        let step = if spare == 0 {
            out.reserve_exact(wanted);
            wanted
        } else {
            spare.min(wanted)
        };
        out.resize(produced + step, 0);
        let written_before = inflater.total_out();
        let window = out.get_mut(produced..).unwrap_or_default();
        let status = inflater.decompress(remaining, window, FlushDecompress::Finish);
        let written = (inflater.total_out() - written_before) as usize;
        out.truncate(produced + written);
        let status = status.map_err(|error| corrupt(error.to_string()))?;
        if out.len() > out_limit {
            return Err(GunzipError::TooLarge);
        }
        match status {
            Status::StreamEnd => return Ok(inflater.total_in() as usize),
            Status::Ok | Status::BufError => {
                if inflater.total_in() == taken && written == 0 {
                    return Err(corrupt("the deflate data is cut off"));
                }
            }
        }
    }
}
