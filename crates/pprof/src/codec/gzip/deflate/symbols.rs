//! Deflate's length and distance alphabets (RFC 1951, 3.2.5): which symbol
//! a match length or distance takes, and its extra bits.

/// The shortest match deflate can express.
pub(super) const MIN_MATCH: usize = 3;
/// The longest match deflate can express.
pub(super) const MAX_MATCH: usize = 258;
/// Farthest back a match may reach.
pub(super) const WINDOW: usize = 32 * 1024;

/// Literal bytes 0–255, end of block, lengths 257–285.
pub(super) const LITLEN_SYMBOLS: usize = 286;
pub(super) const END_OF_BLOCK: usize = 256;
/// Distance symbols 0–29.
pub(super) const DISTANCE_SYMBOLS: usize = 30;

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA_BITS: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// A match length's symbol (counted from 257), extra bits and their value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LengthSymbol {
    pub index: u8,
    pub extra_len: u8,
    pub extra: u8,
}

/// Indexed by length, [`MIN_MATCH`] to [`MAX_MATCH`].
pub(super) const LENGTHS: [LengthSymbol; MAX_MATCH + 1] = length_symbols();

// Evaluated at compile time, where an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn length_symbols() -> [LengthSymbol; MAX_MATCH + 1] {
    let mut symbols = [LengthSymbol {
        index: 0,
        extra_len: 0,
        extra: 0,
    }; MAX_MATCH + 1];
    let mut length = MIN_MATCH;
    let mut index = 0;
    while length <= MAX_MATCH {
        while index + 1 < LENGTH_BASE.len() && LENGTH_BASE[index + 1] as usize <= length {
            index += 1;
        }
        symbols[length] = LengthSymbol {
            index: index as u8,
            extra_len: LENGTH_EXTRA_BITS[index],
            extra: (length - LENGTH_BASE[index] as usize) as u8,
        };
        length += 1;
    }
    symbols
}

/// A distance's symbol, extra bits and their value, for a distance from 1
/// to [`WINDOW`].
#[inline(always)]
pub(super) fn distance_symbol(distance: usize) -> (usize, u32, u32) {
    let offset = (distance.saturating_sub(1) & (WINDOW - 1)) as u32;
    if offset < 4 {
        return (offset as usize, 0, 0);
    }
    let top_bit = 31 - offset.leading_zeros();
    let extra_len = top_bit - 1;
    let symbol = 2 * top_bit + ((offset >> extra_len) & 1);
    (symbol as usize, extra_len, offset & ((1 << extra_len) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_follow_the_rfc_table() {
        // RFC 1951 3.2.5: 257 is 3, 265 is 11–12 (1 extra bit), 284 is
        // 227–257 (5 extra bits), 285 is 258.
        assert_eq!(
            LENGTHS[3],
            LengthSymbol {
                index: 0,
                extra_len: 0,
                extra: 0
            }
        );
        assert_eq!(
            LENGTHS[12],
            LengthSymbol {
                index: 8,
                extra_len: 1,
                extra: 1
            }
        );
        assert_eq!(
            LENGTHS[257],
            LengthSymbol {
                index: 27,
                extra_len: 5,
                extra: 30
            }
        );
        assert_eq!(
            LENGTHS[258],
            LengthSymbol {
                index: 28,
                extra_len: 0,
                extra: 0
            }
        );
    }

    #[test]
    fn distances_follow_the_rfc_table() {
        // 0–3 are 1–4; 4 is 5–6 (1 extra bit); 29 is 24577–32768 (13).
        assert_eq!(distance_symbol(1), (0, 0, 0));
        assert_eq!(distance_symbol(4), (3, 0, 0));
        assert_eq!(distance_symbol(6), (4, 1, 1));
        assert_eq!(distance_symbol(7), (5, 1, 0));
        assert_eq!(distance_symbol(24577), (29, 13, 0));
        assert_eq!(distance_symbol(32768), (29, 13, 8191));
    }
}
