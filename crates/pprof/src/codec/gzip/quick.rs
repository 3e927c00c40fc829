//! A single-pass deflate compressor for gzip level 1, built for speed on
//! profiles: one fixed-Huffman block, greedy matches found through a small
//! hash table of the last position each 4-byte sequence was seen at, and
//! fewer lookups the longer a run without matches lasts. On pprof files it
//! takes about 60% of zlib-rs' level-1 time for about 3% more bytes
//! (docs/benchmarks.md).

use super::bits::{BitWriter, FLUSH_SLACK};
use super::fixed_codes::{
    distance_code, literal, Code, END_OF_BLOCK, LENGTHS, LITERALS, MAX_MATCH, WINDOW,
};

/// 2^12 two-byte entries: small enough to stay in the L1 cache. Larger
/// tables find a few more matches but cost more time than they save.
const HASH_BITS: u32 = 12;
/// Matches are looked for by their first four bytes.
const PROBE_LEN: usize = 4;
/// After 2^6 positions without a match, every other position is probed;
/// after 2^7, every third; and so on until the next match.
const SKIP_SHIFT: usize = 6;
/// Literals gathered per flush: 6 × 9 bits, plus 7 pending, fits 64.
const LITERALS_PER_FLUSH: usize = 6;
/// BFINAL = 1, BTYPE = 01 (fixed Huffman codes).
const FINAL_FIXED_BLOCK: Code = Code {
    bits: 0b011,
    len: 3,
};

#[derive(Debug, Clone)]
pub(super) struct QuickDeflate {
    /// The low 16 bits of the last position each hash was seen at.
    last_seen: Vec<u16>,
}

impl QuickDeflate {
    pub fn new() -> Self {
        Self {
            last_seen: vec![0; 1 << HASH_BITS],
        }
    }

    /// Appends `raw` as raw deflate data to `out`; `false` (with `out` as
    /// it was) if the fixed codes would take more room than storing.
    pub fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) -> bool {
        self.last_seen.fill(0);
        let start = out.len();
        // Fixed codes take at most 9 bits a byte; matches take fewer.
        out.resize(start + raw.len() + raw.len() / 8 + FLUSH_SLACK + 8, 0);
        let Some(area) = out.get_mut(start..) else {
            return false;
        };
        let mut bits = BitWriter::new(area);
        bits.add(FINAL_FIXED_BLOCK);
        self.write_symbols(raw, &mut bits);
        bits.add(LITERALS[END_OF_BLOCK]);
        bits.flush();
        match bits.finish() {
            Some(written) if written < raw.len() => {
                out.truncate(start + written);
                true
            }
            _ => {
                out.truncate(start);
                false
            }
        }
    }

    fn write_symbols(&mut self, raw: &[u8], bits: &mut BitWriter<'_>) {
        let last_probe = raw.len().saturating_sub(PROBE_LEN);
        let mut here = 0;
        let mut literals_from = 0;
        let mut misses = 0;
        while here < last_probe {
            let sequence = read_u32(raw, here);
            let slot = hash(sequence);
            let distance = self
                .last_seen
                .get(slot)
                .map_or(0, |&seen| usize::from((here as u16).wrapping_sub(seen)));
            self.remember(slot, here);
            if distance == 0
                || distance > WINDOW
                || distance > here
                || read_u32(raw, here - distance) != sequence
            {
                misses += 1;
                here += 1 + (misses >> SKIP_SHIFT);
                continue;
            }
            let length = match_length(raw, here - distance, here);
            write_literals(bits, raw.get(literals_from..here).unwrap_or_default());
            bits.add(LENGTHS.get(length).copied().unwrap_or_default());
            bits.add(distance_code(distance));
            bits.flush();
            here += length;
            literals_from = here;
            misses = 0;
            // Seeding the table just before the match's end lets a
            // following repeat continue where this one stopped.
            if here < last_probe {
                let before = here - 2;
                self.remember(hash(read_u32(raw, before)), before);
            }
        }
        write_literals(bits, raw.get(literals_from..).unwrap_or_default());
    }

    #[inline(always)]
    fn remember(&mut self, slot: usize, position: usize) {
        if let Some(entry) = self.last_seen.get_mut(slot) {
            // Only the low bits are kept; distances come from differences.
            *entry = position as u16;
        }
    }
}

#[inline(always)]
fn hash(sequence: u32) -> usize {
    (sequence.wrapping_mul(0x9e37_79b1) >> (32 - HASH_BITS)) as usize
}

#[inline(always)]
fn read_u32(raw: &[u8], at: usize) -> u32 {
    raw.get(at..at + 4)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

#[inline(always)]
fn read_u64(raw: &[u8], at: usize) -> Option<u64> {
    raw.get(at..at + 8)
        .and_then(|bytes| bytes.try_into().ok())
        .map(u64::from_le_bytes)
}

/// How far the bytes at `earlier` and `here` agree, from [`PROBE_LEN`]
/// (already known to agree) up to [`MAX_MATCH`].
fn match_length(raw: &[u8], earlier: usize, here: usize) -> usize {
    let longest = MAX_MATCH.min(raw.len() - here);
    let mut length = PROBE_LEN;
    while length + 8 <= longest {
        match (
            read_u64(raw, earlier + length),
            read_u64(raw, here + length),
        ) {
            (Some(a), Some(b)) if a == b => length += 8,
            (Some(a), Some(b)) => return length + (a ^ b).trailing_zeros() as usize / 8,
            _ => break,
        }
    }
    while length < longest && raw.get(earlier + length) == raw.get(here + length) {
        length += 1;
    }
    length
}

fn write_literals(bits: &mut BitWriter<'_>, run: &[u8]) {
    let mut groups = run.chunks_exact(LITERALS_PER_FLUSH);
    for group in &mut groups {
        for &byte in group {
            bits.add(literal(byte));
        }
        bits.flush();
    }
    for &byte in groups.remainder() {
        bits.add(literal(byte));
    }
    bits.flush();
}
