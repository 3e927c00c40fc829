//! A bit writer that gathers codes in a 64-bit word and stores the whole
//! word at once, so that writing a code takes no branch on its length.

/// Bytes past the last whole byte that a flush stores.
const FLUSH_BYTES: usize = 8;
/// Bits that may be added between flushes: a flush leaves at most 7.
pub(super) const BITS_PER_FLUSH: u32 = 56;

pub(super) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Whole bytes of `out` written so far; `out` may be longer, its tail
    /// room to store words into.
    written: usize,
    pending: u64,
    pending_len: u32,
}

impl<'a> BitWriter<'a> {
    /// Appends to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self {
            written: out.len(),
            out,
            pending: 0,
            pending_len: 0,
        }
    }

    /// Makes room for about `bytes` more, so that flushes store in place.
    pub fn reserve(&mut self, bytes: usize) {
        let wanted = self.written + bytes + FLUSH_BYTES;
        if self.out.len() < wanted {
            self.out.resize(wanted, 0);
        }
    }

    /// Adds `len` bits (the low ones of `bits`, nothing above them)
    /// without storing them.
    #[inline(always)]
    pub fn add(&mut self, bits: u64, len: u32) {
        self.pending |= bits << self.pending_len;
        self.pending_len += len;
    }

    /// Stores the whole bytes gathered so far.
    #[inline(always)]
    pub fn flush(&mut self) {
        let word = self.pending.to_le_bytes();
        match self.out.get_mut(self.written..self.written + FLUSH_BYTES) {
            Some(slot) => slot.copy_from_slice(&word),
            None => self.store_growing(word),
        }
        let whole_bytes = self.pending_len / 8;
        self.written += whole_bytes as usize;
        self.pending = self.pending.checked_shr(whole_bytes * 8).unwrap_or(0);
        self.pending_len %= 8;
    }

    #[cold]
    fn store_growing(&mut self, word: [u8; FLUSH_BYTES]) {
        self.out.truncate(self.written);
        self.out.extend_from_slice(&word);
    }

    /// Pads the last byte with zero bits and cuts `out` after it.
    pub fn finish(mut self) {
        self.pending_len += 7;
        self.flush();
        self.out.truncate(self.written);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_packed_least_significant_first_across_flushes() {
        let mut out = vec![0xaa];
        let mut bits = BitWriter::new(&mut out);
        bits.add(0b1, 1);
        bits.add(0b10, 2);
        bits.flush();
        bits.add(0x1ff, 9);
        bits.flush();
        bits.finish();
        // 1, then 0 1, then nine ones: 0b1111_1101, 0b0000_1111.
        assert_eq!(out, [0xaa, 0b1111_1101, 0b0000_1111]);
    }

    #[test]
    fn grows_when_not_reserved() {
        let mut out = Vec::new();
        let mut bits = BitWriter::new(&mut out);
        for _ in 0..100 {
            bits.add(0xffff_ffff, 32);
            bits.flush();
        }
        bits.finish();
        assert_eq!(out, vec![0xff; 400]);
    }
}
