mod deflate;
mod gunzip;

use flate2::{Compress, Decompress, FlushCompress, Status};

use super::DecodeError;
use deflate::FastDeflate;
use gunzip::likely_gunzipped_size;
pub use gunzip::{gunzip_into, gzip_trailer_size, GunzipError};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Pre-allocation from the gzip trailer's size hint is capped so that a lying
/// trailer cannot reserve much memory up front.
const MAX_PREALLOCATION: usize = 64 << 20;
/// zlib's window of 32 KiB; zlib adds 16 to ask for a gzip wrapper.
const GZIP_WINDOW_BITS: u8 = 15;
/// Room for the gzip header and trailer, and the least to grow output by.
const GZIP_OVERHEAD: usize = 4096;

/// True when `data` starts with the gzip magic bytes.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&GZIP_MAGIC)
}

/// Gunzips every member of `data`, failing once output would exceed `limit`.
pub(super) fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(
        likely_gunzipped_size(data)
            .min(limit)
            .min(MAX_PREALLOCATION),
    );
    match gunzip_into(data, &mut out, limit, &mut Decompress::new(false)) {
        Ok(()) => Ok(out),
        Err(GunzipError::TooLarge) => Err(DecodeError::DecompressedTooLarge { limit }),
        Err(GunzipError::Corrupt(error)) => Err(DecodeError::Gzip(error)),
    }
}

/// `raw` gzipped; `raw` itself, which pprof readers take as well, in the
/// case zlib fails on a state it has just set up.
pub(super) fn compress(raw: Vec<u8>, level: u32) -> Vec<u8> {
    let mut out = Vec::new();
    match GzipCompressor::new(level).compress_into(&raw, &mut out) {
        Ok(()) => out,
        Err(_) => raw,
    }
}

/// A gzip compressor that keeps its state from one input to the next. At
/// level 1 it is our own deflate (see [`deflate`]), which is faster than
/// zlib-rs' level 1 on profiles and writes fewer bytes; at other levels
/// zlib-rs' (through flate2), whose state is costly to set up afresh
/// (allocating and clearing its hash tables costs about a fifth of
/// gzipping a 1 MB profile).
pub struct GzipCompressor {
    state: Deflater,
}

enum Deflater {
    Fast(Box<FastDeflate>),
    Zlib(Compress),
}

impl std::fmt::Debug for GzipCompressor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GzipCompressor")
            .finish_non_exhaustive()
    }
}

/// The level our own deflate serves.
const FAST_LEVEL: u32 = 1;

impl GzipCompressor {
    /// A compressor at `level`, from 0 (store) to 9 (smallest); above 9 is 9.
    pub fn new(level: u32) -> Self {
        let level = level.min(9);
        let state = if level == FAST_LEVEL {
            Deflater::Fast(Box::new(FastDeflate::new()))
        } else {
            Deflater::Zlib(Compress::new_gzip(
                flate2::Compression::new(level),
                GZIP_WINDOW_BITS,
            ))
        };
        Self { state }
    }

    /// Replaces the contents of `out` with `raw` as one gzip member; stored
    /// blocks when deflate would make it larger (zlib-rs' level 1 writes
    /// fixed codes whatever the input, which expands random bytes by 5%;
    /// dynamic codes, a little less).
    pub fn compress_into(&mut self, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        match &mut self.state {
            Deflater::Fast(deflate) => {
                out.extend_from_slice(&GZIP_HEADER);
                deflate.compress(raw, out);
                write_gzip_trailer(raw, out);
            }
            Deflater::Zlib(state) => zlib_compress_into(state, raw, out)?,
        }
        if out.len() > stored_member_len(raw.len()) {
            out.clear();
            out.extend_from_slice(&GZIP_HEADER);
            write_stored_blocks(raw, out);
            write_gzip_trailer(raw, out);
        }
        Ok(())
    }
}

/// CRC32 and ISIZE, the input's size modulo 2^32.
fn write_gzip_trailer(raw: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&crc32fast::hash(raw).to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
}

/// ID1 ID2, CM = deflate, no flags, no modification time, XFL = fastest,
/// OS = unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255];
/// The most a stored deflate block holds.
const STORED_BLOCK_MAX: usize = 65_535;
/// A stored block's header: BFINAL and BTYPE in a byte, LEN and NLEN.
const STORED_BLOCK_HEADER: usize = 5;
/// CRC32 and ISIZE.
const GZIP_TRAILER: usize = 8;

/// The size of a gzip member holding `len` bytes in stored blocks.
fn stored_member_len(len: usize) -> usize {
    let blocks = len.div_ceil(STORED_BLOCK_MAX).max(1);
    GZIP_HEADER.len() + len + blocks * STORED_BLOCK_HEADER + GZIP_TRAILER
}

/// `raw` as stored (uncompressed) deflate blocks, the last one final.
fn write_stored_blocks(raw: &[u8], out: &mut Vec<u8>) {
    let mut blocks = raw.chunks(STORED_BLOCK_MAX).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        let is_final = u8::from(blocks.peek().is_none());
        // At most STORED_BLOCK_MAX, so it fits.
        let len = block.len() as u16;
        out.push(is_final);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
}

fn zlib_compress_into(state: &mut Compress, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    state.reset();
    // The stored form's size bounds what is kept; pages reserved and not
    // written are never touched, and growing by doubling copied the output.
    out.reserve(stored_member_len(raw.len()) + GZIP_OVERHEAD);
    loop {
        let progress = (state.total_in(), state.total_out());
        let consumed = usize::try_from(state.total_in()).unwrap_or(usize::MAX);
        let rest = raw.get(consumed..).unwrap_or_default();
        let status = state
            .compress_vec(rest, out, FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        if status == Status::StreamEnd {
            return Ok(());
        }
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(GZIP_OVERHEAD));
        } else if progress == (state.total_in(), state.total_out()) {
            return Err(std::io::Error::other("gzip made no progress"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::MultiGzDecoder;

    use super::*;

    fn gunzipped(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        MultiGzDecoder::new(data).read_to_end(&mut out).unwrap();
        out
    }

    /// Bytes that deflate cannot shrink (a xorshift stream).
    fn incompressible(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect()
    }

    #[test]
    fn one_compressor_gzips_input_after_input() {
        let inputs = [
            b"profile ".repeat(100_000),
            Vec::new(),
            incompressible(300_000),
            b"x".to_vec(),
        ];
        for level in [0, 1, 6, 9] {
            let mut compressor = GzipCompressor::new(level);
            let mut out = Vec::new();
            for input in &inputs {
                compressor.compress_into(input, &mut out).unwrap();
                assert!(is_gzip(&out), "level {level}");
                assert_eq!(&gunzipped(&out), input, "level {level}");
            }
        }
    }

    #[test]
    fn output_grows_past_the_first_reservation() {
        // Stored blocks are larger than their input: the loop must grow `out`.
        let input = incompressible(1 << 20);
        let mut out = Vec::new();
        GzipCompressor::new(0)
            .compress_into(&input, &mut out)
            .unwrap();
        assert!(out.len() > input.len());
        assert_eq!(gunzipped(&out), input);
    }

    #[test]
    fn matches_the_one_shot_compress() {
        let input = b"stack;frame ".repeat(50_000);
        let mut out = Vec::new();
        GzipCompressor::new(1)
            .compress_into(&input, &mut out)
            .unwrap();
        assert_eq!(gunzipped(&compress(input.clone(), 1)), gunzipped(&out));
        assert!(out.len() < input.len() / 10);
    }
}
