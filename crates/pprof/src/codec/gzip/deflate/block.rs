//! One deflate block with dynamic Huffman codes (RFC 1951, 3.2.7): the
//! codes from the block's frequencies, the header that describes them,
//! then the sequences.

use super::bits::{BitWriter, BITS_PER_FLUSH};
use super::huffman::{canonical_codes, code_lengths, Code};
use super::matches::{Frequencies, Sequence};
use super::symbols::{
    distance_symbol, DISTANCE_SYMBOLS, END_OF_BLOCK, LENGTHS, LITLEN_SYMBOLS, MAX_MATCH,
};

/// Literal/length and distance codes are at most 15 bits, code length
/// codes 7.
const MAX_CODE_LEN: u8 = 15;
const MAX_CODE_LENGTH_CODE_LEN: u8 = 7;
/// The order code length codes' lengths are written in.
const CODE_LENGTH_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];
/// Code length symbols: 16 repeats the previous length 3–6 times, 17
/// writes 3–10 zeros, 18 writes 11–138.
const REPEAT_PREVIOUS: u8 = 16;
const SHORT_ZEROS: u8 = 17;
const LONG_ZEROS: u8 = 18;
/// BTYPE 10: dynamic Huffman codes.
const DYNAMIC_BLOCK: u64 = 0b10;

/// Memory kept from one block to the next.
#[derive(Debug, Clone)]
pub(super) struct BlockWriter {
    litlen_lengths: [u8; LITLEN_SYMBOLS],
    distance_lengths: [u8; DISTANCE_SYMBOLS],
    litlen_codes: [Code; LITLEN_SYMBOLS],
    distance_codes: [Code; DISTANCE_SYMBOLS],
    /// Each match length's symbol code with its extra bits appended.
    length_codes: [(u32, u8); MAX_MATCH + 1],
    /// The code length symbols of the header, each with its extra bits.
    header_symbols: Vec<(u8, u8)>,
    sort_scratch: Vec<u64>,
    /// As many literals as fit between two flushes with this block's
    /// longest literal code.
    literals_per_flush: usize,
}

impl BlockWriter {
    pub fn new() -> Self {
        Self {
            litlen_lengths: [0; LITLEN_SYMBOLS],
            distance_lengths: [0; DISTANCE_SYMBOLS],
            litlen_codes: [Code::default(); LITLEN_SYMBOLS],
            distance_codes: [Code::default(); DISTANCE_SYMBOLS],
            length_codes: [(0, 0); MAX_MATCH + 1],
            header_symbols: Vec::new(),
            sort_scratch: Vec::new(),
            literals_per_flush: 1,
        }
    }

    /// Writes `sequences`, whose literals start at `raw`'s beginning, as
    /// one block; `last` sets BFINAL.
    pub fn write(
        &mut self,
        raw: &[u8],
        sequences: &[Sequence],
        frequencies: &mut Frequencies,
        last: bool,
        bits: &mut BitWriter<'_>,
    ) {
        if let Some(count) = frequencies.litlen.get_mut(END_OF_BLOCK) {
            *count += 1;
        }
        self.build_codes(frequencies);
        bits.add(u64::from(last) | DYNAMIC_BLOCK << 1, 3);
        self.write_header(bits);
        self.write_sequences(raw, sequences, bits);
        let end = self
            .litlen_codes
            .get(END_OF_BLOCK)
            .copied()
            .unwrap_or_default();
        bits.add(u64::from(end.bits), u32::from(end.len));
        bits.flush();
    }

    fn build_codes(&mut self, frequencies: &Frequencies) {
        code_lengths(
            &frequencies.litlen,
            MAX_CODE_LEN,
            &mut self.litlen_lengths,
            &mut self.sort_scratch,
        );
        code_lengths(
            &frequencies.distance,
            MAX_CODE_LEN,
            &mut self.distance_lengths,
            &mut self.sort_scratch,
        );
        canonical_codes(&self.litlen_lengths, &mut self.litlen_codes);
        canonical_codes(&self.distance_lengths, &mut self.distance_codes);
        let longest_literal = self.litlen_lengths.iter().take(256).max().copied();
        self.literals_per_flush =
            (BITS_PER_FLUSH / u32::from(longest_literal.unwrap_or(1).max(1))) as usize;
        for (length, slot) in self.length_codes.iter_mut().enumerate() {
            let Some(symbol) = LENGTHS.get(length) else {
                continue;
            };
            let code = self
                .litlen_codes
                .get(257 + usize::from(symbol.index))
                .copied()
                .unwrap_or_default();
            *slot = (
                u32::from(code.bits) | u32::from(symbol.extra) << code.len,
                code.len + symbol.extra_len,
            );
        }
    }

    /// HLIT, HDIST, HCLEN, the code length code, then the code lengths.
    fn write_header(&mut self, bits: &mut BitWriter<'_>) {
        let litlen_count = used_prefix(&self.litlen_lengths, 257);
        let distance_count = used_prefix(&self.distance_lengths, 1);
        let all_lengths = self
            .litlen_lengths
            .iter()
            .take(litlen_count)
            .chain(self.distance_lengths.iter().take(distance_count))
            .copied();
        run_length_encode(all_lengths, &mut self.header_symbols);
        let mut frequencies = [0_u32; 19];
        for &(symbol, _) in &self.header_symbols {
            if let Some(count) = frequencies.get_mut(usize::from(symbol)) {
                *count += 1;
            }
        }
        let mut lengths = [0_u8; 19];
        code_lengths(
            &frequencies,
            MAX_CODE_LENGTH_CODE_LEN,
            &mut lengths,
            &mut self.sort_scratch,
        );
        let mut codes = [Code::default(); 19];
        canonical_codes(&lengths, &mut codes);
        let ordered = CODE_LENGTH_ORDER.map(|symbol| lengths.get(symbol).copied().unwrap_or(0));
        let code_length_count = used_prefix(&ordered, 4);

        bits.add((litlen_count - 257) as u64, 5);
        bits.add((distance_count - 1) as u64, 5);
        bits.add((code_length_count - 4) as u64, 4);
        bits.flush();
        for &length in ordered.iter().take(code_length_count) {
            bits.add(u64::from(length), 3);
            bits.flush();
        }
        for &(symbol, extra) in &self.header_symbols {
            let code = codes.get(usize::from(symbol)).copied().unwrap_or_default();
            bits.add(u64::from(code.bits), u32::from(code.len));
            match symbol {
                REPEAT_PREVIOUS => bits.add(u64::from(extra), 2),
                SHORT_ZEROS => bits.add(u64::from(extra), 3),
                LONG_ZEROS => bits.add(u64::from(extra), 7),
                _ => {}
            }
            bits.flush();
        }
    }

    fn write_sequences(&self, raw: &[u8], sequences: &[Sequence], bits: &mut BitWriter<'_>) {
        let mut at = 0;
        for sequence in sequences {
            let literals_end = at + sequence.literals as usize;
            let literals = raw.get(at..literals_end).unwrap_or_default();
            let mut groups = literals.chunks_exact(self.literals_per_flush);
            for group in &mut groups {
                for &byte in group {
                    self.add_literal(byte, bits);
                }
                bits.flush();
            }
            for &byte in groups.remainder() {
                self.add_literal(byte, bits);
            }
            bits.flush();
            at = literals_end;
            if sequence.length == 0 {
                continue;
            }
            let (length_bits, length_len) = self
                .length_codes
                .get(usize::from(sequence.length))
                .copied()
                .unwrap_or_default();
            let (symbol, extra_len, extra) = distance_symbol(usize::from(sequence.distance));
            let distance = self.distance_codes.get(symbol).copied().unwrap_or_default();
            bits.add(u64::from(length_bits), u32::from(length_len));
            bits.add(
                u64::from(distance.bits) | u64::from(extra) << distance.len,
                u32::from(distance.len) + extra_len,
            );
            bits.flush();
            at += usize::from(sequence.length);
        }
    }

    #[inline(always)]
    fn add_literal(&self, byte: u8, bits: &mut BitWriter<'_>) {
        let code = self
            .litlen_codes
            .get(usize::from(byte))
            .copied()
            .unwrap_or_default();
        bits.add(u64::from(code.bits), u32::from(code.len));
    }
}

/// How many of `lengths` to write: up to the last non-zero one, at least
/// `least`.
fn used_prefix(lengths: &[u8], least: usize) -> usize {
    lengths
        .iter()
        .rposition(|&length| length != 0)
        .map_or(0, |last| last + 1)
        .max(least)
}

/// Code lengths as code length symbols, each with its extra bits' value.
fn run_length_encode(lengths: impl Iterator<Item = u8>, symbols: &mut Vec<(u8, u8)>) {
    symbols.clear();
    let mut lengths = lengths.peekable();
    while let Some(length) = lengths.next() {
        let mut run = 1_usize;
        while lengths.next_if_eq(&length).is_some() {
            run += 1;
        }
        if length == 0 {
            while run >= 11 {
                let count = run.min(138);
                symbols.push((LONG_ZEROS, (count - 11) as u8));
                run -= count;
            }
            if run >= 3 {
                symbols.push((SHORT_ZEROS, (run - 3) as u8));
                run = 0;
            }
        } else {
            symbols.push((length, 0));
            run -= 1;
            while run >= 3 {
                let count = run.min(6);
                symbols.push((REPEAT_PREVIOUS, (count - 3) as u8));
                run -= count;
            }
        }
        symbols.extend(std::iter::repeat_n((length, 0), run));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_become_repeat_symbols() {
        let lengths = [8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 5, 0, 0];
        let mut symbols = Vec::new();
        run_length_encode(lengths.into_iter(), &mut symbols);
        // 8, then 7 repeats as 6 + 1; four zeros; 5; two zeros.
        assert_eq!(
            symbols,
            [(8, 0), (16, 3), (8, 0), (17, 1), (5, 0), (0, 0), (0, 0)]
        );
        let mut zeros = Vec::new();
        run_length_encode(std::iter::repeat_n(0, 150), &mut zeros);
        assert_eq!(zeros, [(18, 127), (18, 1)]);
    }
}
