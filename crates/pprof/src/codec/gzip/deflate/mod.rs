//! The deflate of gzip level 1, built for speed on profiles: greedy
//! matches from a small hash table (see [`matches`]), coded per block of
//! about [`BLOCK_INPUT`] bytes with Huffman codes made for that block.
//! Dynamic codes make up for the matches a single-entry table misses:
//! on the pprofs the file exporter writes, both faster and smaller than
//! zlib-rs' level 1, which writes fixed codes (docs/benchmarks.md).

mod bits;
mod block;
mod huffman;
mod matches;
mod symbols;

use bits::BitWriter;
use block::BlockWriter;
use matches::{Cursor, Frequencies, MatchFinder, Sequence};

/// Input bytes per block: smaller blocks follow a profile's sections
/// (samples, locations, strings) more closely, each costs a header.
const BLOCK_INPUT: usize = 64 * 1024;

/// Deflate state kept from one input to the next.
#[derive(Debug, Clone)]
pub(super) struct FastDeflate {
    matches: MatchFinder,
    blocks: BlockWriter,
    sequences: Vec<Sequence>,
}

impl FastDeflate {
    pub fn new() -> Self {
        Self {
            matches: MatchFinder::new(),
            blocks: BlockWriter::new(),
            sequences: Vec::new(),
        }
    }

    /// Appends `raw` as raw deflate data (no zlib or gzip wrapper) to `out`.
    pub fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        self.matches.reset();
        let mut bits = BitWriter::new(out);
        let mut cursor = Cursor {
            here: 0,
            literals_from: 0,
        };
        loop {
            let block_start = cursor.literals_from;
            let mut frequencies = Frequencies::default();
            self.sequences.clear();
            self.matches.find(
                raw,
                &mut cursor,
                block_start + BLOCK_INPUT,
                &mut self.sequences,
                &mut frequencies,
            );
            let block_raw = raw
                .get(block_start..cursor.literals_from)
                .unwrap_or_default();
            let last = cursor.literals_from >= raw.len();
            // At most 15 bits a byte, and a header.
            bits.reserve(block_raw.len() * 2 + 1024);
            self.blocks.write(
                block_raw,
                &self.sequences,
                &mut frequencies,
                last,
                &mut bits,
            );
            if last {
                break;
            }
        }
        bits.finish();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::DeflateDecoder;

    use super::*;

    fn inflated(deflated: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        DeflateDecoder::new(deflated).read_to_end(&mut out).unwrap();
        out
    }

    fn round_trip(raw: &[u8]) -> usize {
        let mut out = Vec::new();
        FastDeflate::new().compress(raw, &mut out);
        assert_eq!(inflated(&out), raw);
        out.len()
    }

    #[test]
    fn empty_and_tiny_inputs() {
        for raw in [&b""[..], b"a", b"ab", b"abc", b"abcd", b"aaaaaaaa"] {
            round_trip(raw);
        }
    }

    #[test]
    fn repeats_shrink() {
        let raw = b"location;function;line ".repeat(20_000);
        assert!(round_trip(&raw) < raw.len() / 50);
    }

    #[test]
    fn many_blocks_and_far_matches() {
        // More than a block, repeats farther back than the window.
        let mut raw = Vec::new();
        let mut state = 1_u32;
        for i in 0..400_000_u32 {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            raw.push(if i % 3 == 0 {
                (state >> 24) as u8
            } else {
                b'p'
            });
        }
        let copy = raw[..100_000].to_vec();
        raw.extend_from_slice(&copy);
        round_trip(&raw);
    }

    #[test]
    fn one_state_compresses_input_after_input() {
        let mut deflate = FastDeflate::new();
        for raw in [b"first input, first input".repeat(1000), b"second".to_vec()] {
            let mut out = Vec::new();
            deflate.compress(&raw, &mut out);
            assert_eq!(inflated(&out), raw);
        }
    }
}
