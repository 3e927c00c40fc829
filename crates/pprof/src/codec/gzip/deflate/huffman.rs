//! Length-limited canonical Huffman codes from symbol frequencies.

/// A code to write least significant bit first: deflate's Huffman codes,
/// bit-reversed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Code {
    pub bits: u16,
    pub len: u8,
}

/// The code lengths of a prefix code for `frequencies`, none longer than
/// `max_len`, in `lengths` (0 for symbols that never occur). With fewer
/// than two symbols that occur, some that do not get a length too, so that
/// the code is complete: inflaters reject incomplete ones.
pub(super) fn code_lengths(
    frequencies: &[u32],
    max_len: u8,
    lengths: &mut [u8],
    scratch: &mut Vec<u64>,
) {
    lengths.fill(0);
    // Ascending by frequency, then by symbol: (frequency << 16) | symbol.
    scratch.clear();
    scratch.extend(
        frequencies
            .iter()
            .enumerate()
            .filter(|(_, &frequency)| frequency > 0)
            .map(|(symbol, &frequency)| u64::from(frequency) << 16 | symbol as u64),
    );
    let mut filler = 0_u64;
    while scratch.len() < 2 {
        // Unused symbols of frequency 0 below every used one: a code of two.
        if !scratch.iter().any(|&entry| entry & 0xffff == filler) {
            scratch.insert(0, filler);
        }
        filler += 1;
    }
    scratch.sort_unstable();
    let mut depths: Vec<u32> = scratch.iter().map(|&entry| (entry >> 16) as u32).collect();
    minimum_redundancy(&mut depths);
    let mut per_length = [0_u32; 64];
    for &depth in &depths {
        if let Some(count) = per_length.get_mut(depth.min(63) as usize) {
            *count += 1;
        }
    }
    limit_lengths(&mut per_length, max_len);
    // The longest codes go to the rarest symbols.
    let mut symbols = scratch.iter().map(|&entry| (entry & 0xffff) as usize);
    for length in (1..=max_len).rev() {
        for _ in 0..per_length.get(usize::from(length)).copied().unwrap_or(0) {
            if let Some(slot) = symbols.next().and_then(|symbol| lengths.get_mut(symbol)) {
                *slot = length;
            }
        }
    }
}

/// Moffat and Katajainen's in-place computation of minimum-redundancy code
/// lengths: `weights`, ascending, at least two, become code lengths
/// (non-increasing).
fn minimum_redundancy(weights: &mut [u32]) {
    let n = weights.len();
    if n < 2 {
        weights.fill(1);
        return;
    }
    let get = |a: &[u32], i: usize| a.get(i).copied().unwrap_or(u32::MAX);
    let set = |a: &mut [u32], i: usize, value: u32| {
        if let Some(slot) = a.get_mut(i) {
            *slot = value;
        }
    };
    // Left to right: each internal node's weight, and its parent's index
    // in place of the weights of the nodes it combines.
    set(weights, 0, get(weights, 0).saturating_add(get(weights, 1)));
    let mut root = 0;
    let mut leaf = 2;
    for next in 1..n - 1 {
        if leaf >= n || get(weights, root) < get(weights, leaf) {
            set(weights, next, get(weights, root));
            set(weights, root, next as u32);
            root += 1;
        } else {
            set(weights, next, get(weights, leaf));
            leaf += 1;
        }
        if leaf >= n || (root < next && get(weights, root) < get(weights, leaf)) {
            let sum = get(weights, next).saturating_add(get(weights, root));
            set(weights, next, sum);
            set(weights, root, next as u32);
            root += 1;
        } else {
            let sum = get(weights, next).saturating_add(get(weights, leaf));
            set(weights, next, sum);
            leaf += 1;
        }
    }
    // Right to left: internal nodes' depths.
    set(weights, n - 2, 0);
    for next in (0..n - 2).rev() {
        let parent = get(weights, next) as usize;
        set(weights, next, get(weights, parent) + 1);
    }
    // Right to left: leaves' depths.
    let mut available = 1_u32;
    let mut used = 0_u32;
    let mut depth = 0_u32;
    let mut root = n as isize - 2;
    let mut next = n as isize - 1;
    while available > 0 {
        while root >= 0 && get(weights, root as usize) == depth {
            used += 1;
            root -= 1;
        }
        while available > used {
            set(weights, next as usize, depth);
            next -= 1;
            available -= 1;
        }
        available = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Makes the code lengths counted in `per_length` fit `max_len`, keeping
/// the code complete: codes longer than it are shortened to it, then
/// leaves are moved one level down from the deepest level that has room
/// until the code's Kraft sum is one again.
fn limit_lengths(per_length: &mut [u32; 64], max_len: u8) {
    let max_len = usize::from(max_len);
    let overlong: u32 = per_length.iter().skip(max_len + 1).sum();
    if overlong == 0 {
        return;
    }
    for count in per_length.iter_mut().skip(max_len + 1) {
        *count = 0;
    }
    if let Some(count) = per_length.get_mut(max_len) {
        *count += overlong;
    }
    let full = 1_u64 << max_len;
    let mut kraft: u64 = (1..=max_len)
        .map(|length| u64::from(per_length.get(length).copied().unwrap_or(0)) << (max_len - length))
        .sum();
    while kraft > full {
        if let Some(count) = per_length.get_mut(max_len) {
            *count -= 1;
        }
        // A leaf one level above the deepest that has one becomes a node
        // with two leaves: one more leaf, as many as the one removed.
        for length in (1..max_len).rev() {
            if per_length.get(length).copied().unwrap_or(0) > 0 {
                if let Some(count) = per_length.get_mut(length) {
                    *count -= 1;
                }
                if let Some(count) = per_length.get_mut(length + 1) {
                    *count += 2;
                }
                break;
            }
        }
        kraft -= 1;
    }
}

/// Canonical codes for `lengths` (RFC 1951, 3.2.2), bit-reversed.
pub(super) fn canonical_codes(lengths: &[u8], codes: &mut [Code]) {
    let mut per_length = [0_u16; 16];
    for &length in lengths {
        if let Some(count) = per_length.get_mut(usize::from(length)) {
            *count += 1;
        }
    }
    per_length[0] = 0;
    // The first code of each length: the codes of the shorter lengths
    // counted up, one more bit each time.
    let mut next_code = [0_u16; 16];
    let mut code = 0_u16;
    for (next, &shorter) in next_code.iter_mut().skip(1).zip(&per_length) {
        code = (code + shorter) << 1;
        *next = code;
    }
    for (&length, slot) in lengths.iter().zip(codes.iter_mut()) {
        *slot = match next_code.get_mut(usize::from(length)) {
            Some(next) if length > 0 => {
                let code = *next;
                *next += 1;
                Code {
                    bits: code.reverse_bits() >> (16 - length),
                    len: length,
                }
            }
            _ => Code::default(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kraft_sum(lengths: &[u8], max_len: u8) -> u64 {
        lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1_u64 << (max_len - l))
            .sum()
    }

    fn lengths_of(frequencies: &[u32], max_len: u8) -> Vec<u8> {
        let mut lengths = vec![0; frequencies.len()];
        code_lengths(frequencies, max_len, &mut lengths, &mut Vec::new());
        lengths
    }

    #[test]
    fn a_textbook_example() {
        // Frequencies 1, 1, 2, 4: lengths 3, 3, 2, 1.
        assert_eq!(lengths_of(&[4, 2, 1, 1], 15), [1, 2, 3, 3]);
    }

    #[test]
    fn one_or_no_symbol_still_gives_a_complete_code() {
        for frequencies in [vec![0, 0, 7, 0], vec![0, 0, 0, 0], vec![9, 0, 0]] {
            let lengths = lengths_of(&frequencies, 7);
            assert_eq!(kraft_sum(&lengths, 7), 1 << 7, "{frequencies:?}");
            for (f, l) in frequencies.iter().zip(&lengths) {
                assert!(*f == 0 || *l > 0);
            }
        }
    }

    #[test]
    fn fibonacci_frequencies_are_limited_and_complete() {
        // Fibonacci weights make the deepest unlimited tree: 30 symbols
        // would need 29 bits.
        let mut frequencies = vec![1_u32, 1];
        while frequencies.len() < 30 {
            let n = frequencies.len();
            frequencies.push(frequencies[n - 1] + frequencies[n - 2]);
        }
        for max_len in [7, 15] {
            let lengths = lengths_of(&frequencies, max_len);
            assert!(lengths.iter().all(|&l| (1..=max_len).contains(&l)));
            assert_eq!(kraft_sum(&lengths, max_len), 1 << max_len);
            // Rarer symbols never get shorter codes.
            assert!(lengths.windows(2).all(|w| w[0] >= w[1]));
        }
    }

    #[test]
    fn canonical_codes_follow_the_rfc_example() {
        // RFC 1951 3.2.2: lengths (3, 3, 3, 3, 3, 2, 4, 4) give 010, 011,
        // 100, 101, 110, 00, 1110, 1111.
        let lengths = [3, 3, 3, 3, 3, 2, 4, 4];
        let mut codes = [Code::default(); 8];
        canonical_codes(&lengths, &mut codes);
        let expected = [0b010, 0b011, 0b100, 0b101, 0b110, 0b00, 0b1110, 0b1111];
        for ((code, &length), want) in codes.iter().zip(&lengths).zip(expected) {
            assert_eq!(code.len, length);
            assert_eq!(code.bits, (want as u16).reverse_bits() >> (16 - length));
        }
    }
}
