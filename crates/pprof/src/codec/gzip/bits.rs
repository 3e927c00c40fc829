//! A bit writer over a buffer sized in advance: codes are gathered in a
//! 64-bit word and the whole word is stored at once, so that writing a
//! code takes no branch.

use super::fixed_codes::Code;

/// Bytes past the last whole byte that a flush may store.
pub(super) const FLUSH_SLACK: usize = 8;

pub(super) struct BitWriter<'a> {
    out: &'a mut [u8],
    /// Whole bytes written so far.
    written: usize,
    pending: u64,
    pending_len: u32,
    /// Set if `out` turned out too small; what was written is then useless.
    overflowed: bool,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut [u8]) -> Self {
        Self {
            out,
            written: 0,
            pending: 0,
            pending_len: 0,
            overflowed: false,
        }
    }

    /// Adds a code without storing it; at most 56 bits may be added
    /// between flushes.
    #[inline(always)]
    pub fn add(&mut self, code: Code) {
        self.pending |= u64::from(code.bits) << self.pending_len;
        self.pending_len += code.len;
    }

    /// Stores the whole bytes gathered so far.
    #[inline(always)]
    pub fn flush(&mut self) {
        match self.out.get_mut(self.written..self.written + FLUSH_SLACK) {
            Some(slot) => slot.copy_from_slice(&self.pending.to_le_bytes()),
            None => self.overflowed = true,
        }
        let whole_bytes = self.pending_len / 8;
        self.written += whole_bytes as usize;
        self.pending >>= whole_bytes * 8;
        self.pending_len %= 8;
    }

    /// Flushes the last partial byte; the number of bytes written, or
    /// `None` if the buffer was too small.
    pub fn finish(mut self) -> Option<usize> {
        self.pending_len += 7;
        self.flush();
        (!self.overflowed).then_some(self.written)
    }
}
