//! Greedy matches, found through a hash table of the last position each
//! 4-byte sequence was seen at; fewer lookups the longer a run without
//! matches lasts.

use super::symbols::{distance_symbol, LENGTHS, MAX_MATCH, WINDOW};

/// 2^HASH_BITS two-byte entries: small enough to stay in the L1 cache;
/// larger tables find more matches but cost more time than dynamic codes
/// gain from them.
const HASH_BITS: u32 = 12;
/// Matches are looked for by their first four bytes.
const PROBE_LEN: usize = 4;
/// After 2^SKIP_SHIFT positions without a match, every other position is
/// probed; after twice as many, every third; and so on until the next
/// match.
const SKIP_SHIFT: usize = 5;

/// Literals, then a match copying `length` bytes from `distance` back
/// (`length` 0: none, the input's last literals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sequence {
    pub literals: u32,
    pub length: u16,
    pub distance: u16,
}

/// How often each symbol occurs in a block.
#[derive(Debug, Clone)]
pub(super) struct Frequencies {
    pub litlen: [u32; super::symbols::LITLEN_SYMBOLS],
    pub distance: [u32; super::symbols::DISTANCE_SYMBOLS],
}

impl Default for Frequencies {
    fn default() -> Self {
        Self {
            litlen: [0; super::symbols::LITLEN_SYMBOLS],
            distance: [0; super::symbols::DISTANCE_SYMBOLS],
        }
    }
}

/// Where the search is in one input.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cursor {
    /// The next position to look for a match at.
    pub here: usize,
    /// The first byte not yet in a sequence.
    pub literals_from: usize,
}

#[derive(Debug, Clone)]
pub(super) struct MatchFinder {
    /// The low 16 bits of the last position each hash was seen at.
    last_seen: Box<[u16; 1 << HASH_BITS]>,
}

impl MatchFinder {
    pub fn new() -> Self {
        Self {
            last_seen: Box::new([0; 1 << HASH_BITS]),
        }
    }

    /// Forgets the previous input.
    pub fn reset(&mut self) {
        self.last_seen.fill(0);
    }

    /// Appends to `sequences` the sequences from `cursor` on until one ends
    /// at or past `block_end` (or the input ends: then the last holds the
    /// input's last literals), counting their symbols in `frequencies`.
    pub fn find(
        &mut self,
        raw: &[u8],
        cursor: &mut Cursor,
        block_end: usize,
        sequences: &mut Vec<Sequence>,
        frequencies: &mut Frequencies,
    ) {
        let last_probe = raw.len().saturating_sub(PROBE_LEN);
        let mut here = cursor.here;
        let mut misses = 0;
        while here < last_probe {
            let sequence = read_u32(raw, here);
            let slot = hash(sequence);
            let distance = self
                .last_seen
                .get(slot)
                .map_or(0, |&seen| usize::from((here as u16).wrapping_sub(seen)));
            self.remember(slot, here);
            // One branch, not four: which way it goes is hard to predict.
            let found = (distance != 0)
                & (distance <= WINDOW)
                & (distance <= here)
                & (read_u32(raw, here.saturating_sub(distance)) == sequence);
            if !found {
                misses += 1;
                here += 1 + (misses >> SKIP_SHIFT);
                continue;
            }
            let mut length = match_length(raw, here - distance, here);
            // A match found late, after skipped positions, may have begun
            // among the literals before it.
            while here > cursor.literals_from
                && here > distance
                && length < MAX_MATCH
                && raw.get(here - 1) == raw.get(here - 1 - distance)
            {
                here -= 1;
                length += 1;
            }
            let literals = raw.get(cursor.literals_from..here).unwrap_or_default();
            count_literals(literals, frequencies);
            count_match(length, distance, frequencies);
            sequences.push(Sequence {
                literals: literals.len() as u32,
                length: length as u16,
                distance: distance as u16,
            });
            here += length;
            cursor.literals_from = here;
            misses = 0;
            // Seeding the table just before the match's end lets a
            // following repeat continue where this one stopped.
            if here < last_probe {
                let before = here - 2;
                self.remember(hash(read_u32(raw, before)), before);
            }
            if here >= block_end {
                cursor.here = here;
                return;
            }
        }
        let literals = raw.get(cursor.literals_from..).unwrap_or_default();
        count_literals(literals, frequencies);
        sequences.push(Sequence {
            literals: literals.len() as u32,
            length: 0,
            distance: 0,
        });
        cursor.here = raw.len();
        cursor.literals_from = raw.len();
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
fn count_literals(literals: &[u8], frequencies: &mut Frequencies) {
    for &byte in literals {
        if let Some(count) = frequencies.litlen.get_mut(usize::from(byte)) {
            *count += 1;
        }
    }
}

#[inline(always)]
fn count_match(length: usize, distance: usize, frequencies: &mut Frequencies) {
    let index = LENGTHS.get(length).map_or(0, |symbol| symbol.index);
    if let Some(count) = frequencies.litlen.get_mut(257 + usize::from(index)) {
        *count += 1;
    }
    if let Some(count) = frequencies.distance.get_mut(distance_symbol(distance).0) {
        *count += 1;
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
