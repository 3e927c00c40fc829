//! Deflate's fixed Huffman codes (RFC 1951, 3.2.6), bit-reversed so that
//! they can be written least significant bit first, with each length's and
//! distance's extra bits already appended.

/// Bits to write, least significant first, and how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Code {
    pub bits: u32,
    pub len: u32,
}

pub(super) const END_OF_BLOCK: usize = 256;
pub(super) const MIN_MATCH: usize = 3;
pub(super) const MAX_MATCH: usize = 258;
/// Farthest back a match may reach.
pub(super) const WINDOW: usize = 32 * 1024;

const LENGTH_BASE: [u32; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA_BITS: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// The literal/length alphabet's codes, symbols 0 to 285.
pub(super) const LITERALS: [Code; 286] = literal_codes();

/// The code of a literal byte.
#[inline(always)]
pub(super) fn literal(byte: u8) -> Code {
    // Always in range: the table has 286 entries.
    LITERALS.get(usize::from(byte)).copied().unwrap_or_default()
}
/// Length symbol and extra bits for each match length, 3 to 258.
pub(super) const LENGTHS: [Code; MAX_MATCH + 1] = length_codes();

const fn reversed(code: u32, len: u32) -> u32 {
    code.reverse_bits() >> (32 - len)
}

const fn literal_code(symbol: u32) -> Code {
    let (code, len) = if symbol <= 143 {
        (0x30 + symbol, 8)
    } else if symbol <= 255 {
        (0x190 + symbol - 144, 9)
    } else if symbol <= 279 {
        (symbol - 256, 7)
    } else {
        (0xc0 + symbol - 280, 8)
    };
    Code {
        bits: reversed(code, len),
        len,
    }
}

// Evaluated at compile time, where an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn literal_codes() -> [Code; 286] {
    let mut codes = [Code { bits: 0, len: 0 }; 286];
    let mut symbol = 0;
    while symbol < codes.len() {
        codes[symbol] = literal_code(symbol as u32);
        symbol += 1;
    }
    codes
}

// Evaluated at compile time, where an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn length_codes() -> [Code; MAX_MATCH + 1] {
    let mut codes = [Code { bits: 0, len: 0 }; MAX_MATCH + 1];
    let mut length = MIN_MATCH;
    let mut index = 0;
    while length <= MAX_MATCH {
        while index + 1 < LENGTH_BASE.len() && LENGTH_BASE[index + 1] as usize <= length {
            index += 1;
        }
        let symbol = literal_code(257 + index as u32);
        let extra = length as u32 - LENGTH_BASE[index];
        codes[length] = Code {
            bits: symbol.bits | extra << symbol.len,
            len: symbol.len + LENGTH_EXTRA_BITS[index],
        };
        length += 1;
    }
    codes
}

/// The distance symbol (five bits, fixed) and its extra bits, for a
/// distance from 1 to [`WINDOW`].
#[inline(always)]
pub(super) fn distance_code(distance: usize) -> Code {
    let offset = (distance.saturating_sub(1) & (WINDOW - 1)) as u32;
    let (symbol, extra_len) = if offset < 4 {
        (offset, 0)
    } else {
        let top_bit = 31 - offset.leading_zeros();
        (2 * top_bit + ((offset >> (top_bit - 1)) & 1), top_bit - 1)
    };
    let extra = offset & ((1 << extra_len) - 1);
    Code {
        bits: reversed(symbol, 5) | extra << 5,
        len: 5 + extra_len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_codes_are_the_rfc_tables() {
        // RFC 1951 3.2.6: 0 is 00110000, 144 is 110010000, 256 is 0000000,
        // 280 is 11000000 (written most significant bit first).
        assert_eq!(
            LITERALS[0],
            Code {
                bits: 0b00001100,
                len: 8
            }
        );
        assert_eq!(
            LITERALS[144],
            Code {
                bits: 0b000010011,
                len: 9
            }
        );
        assert_eq!(LITERALS[END_OF_BLOCK], Code { bits: 0, len: 7 });
        assert_eq!(
            LITERALS[280],
            Code {
                bits: 0b00000011,
                len: 8
            }
        );
    }

    #[test]
    fn lengths_carry_their_extra_bits() {
        // 3 is symbol 257 without extra bits; 12 is symbol 265 (base 11)
        // with extra bit 1; 258 is symbol 285.
        assert_eq!(LENGTHS[3], LITERALS[257]);
        assert_eq!(LENGTHS[12].len, LITERALS[265].len + 1);
        assert_eq!(
            LENGTHS[12].bits,
            LITERALS[265].bits | 1 << LITERALS[265].len
        );
        assert_eq!(LENGTHS[258], LITERALS[285]);
    }

    #[test]
    fn distances_map_to_their_symbols() {
        // (distance, symbol, extra bits, extra value)
        let cases = [
            (1, 0, 0, 0),
            (4, 3, 0, 0),
            (5, 4, 1, 0),
            (6, 4, 1, 1),
            (7, 5, 1, 0),
            (24_577, 29, 13, 0),
            (32_768, 29, 13, 8191),
        ];
        for (distance, symbol, extra_len, extra) in cases {
            let code = distance_code(distance);
            assert_eq!(code.len, 5 + extra_len, "distance {distance}");
            assert_eq!(code.bits & 31, reversed(symbol, 5), "distance {distance}");
            assert_eq!(code.bits >> 5, extra, "distance {distance}");
        }
    }
}
