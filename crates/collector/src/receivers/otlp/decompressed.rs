//! The buffers compressed requests are decompressed into, and the inflate
//! states, kept for later requests: a fresh megabyte buffer for each
//! request is faulted in page by page, and given back to the system soon
//! after it is freed.

use std::ops::Deref;

use bytes::Bytes;
use flate2::Decompress;

use crate::pipeline::{Keep, Received};
use crate::protocol::compression::Compression;
use crate::shared::reuse::ReusePool;

/// Buffers kept: about as many as requests are decoded at once.
const MAX_KEPT: usize = 2;
/// A buffer grown past this by an unusually large request is not kept.
const MAX_KEPT_CAPACITY: usize = 8 << 20;

/// A decompressed request: the body itself when it was not compressed,
/// else a buffer to give back to its [`DecompressedBuffers`] once decoded.
#[derive(Debug)]
pub enum Decompressed {
    Body(Bytes),
    Buffer(Vec<u8>),
}

impl Decompressed {
    /// The bytes, kept with the request they decode to: a buffer is not
    /// given back then.
    pub fn into_bytes(self) -> Bytes {
        match self {
            Self::Body(body) => body,
            Self::Buffer(buffer) => Bytes::from(buffer),
        }
    }
}

impl Deref for Decompressed {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Body(body) => body,
            Self::Buffer(buffer) => buffer,
        }
    }
}

/// Emptied decompression buffers, and inflate states; a receiver shares
/// one set between its requests.
pub struct DecompressedBuffers {
    buffers: ReusePool<Vec<u8>>,
    inflaters: ReusePool<Decompress>,
}

impl Default for DecompressedBuffers {
    fn default() -> Self {
        Self {
            buffers: ReusePool::new(MAX_KEPT),
            inflaters: ReusePool::new(MAX_KEPT),
        }
    }
}

impl std::fmt::Debug for DecompressedBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecompressedBuffers")
            .field("buffers", &self.buffers.len())
            .finish_non_exhaustive()
    }
}

impl DecompressedBuffers {
    /// An empty buffer, kept from an earlier request if there is one.
    pub fn take(&self) -> Vec<u8> {
        self.buffers.take().unwrap_or_default()
    }

    /// What to keep of a decoded request, as `keep` says: `message` as
    /// it came, compressed with `arrived`, and its protobuf `raw`. A
    /// buffer whose protobuf is not kept is kept for a later request.
    pub fn keep_received(
        &self,
        keep: Keep,
        arrived: Compression,
        message: Bytes,
        raw: Decompressed,
    ) -> Received {
        let protobuf = if keep.protobuf {
            Some(raw.into_bytes())
        } else {
            self.give_back(raw);
            None
        };
        Received::compressed(arrived, keep.compressed.then_some(message), protobuf)
    }

    /// Keeps `decompressed`'s buffer for a later request, unless enough
    /// are kept or it is unusually large.
    pub fn give_back(&self, decompressed: Decompressed) {
        if let Decompressed::Buffer(buffer) = decompressed {
            self.keep(buffer);
        }
    }

    /// A raw-deflate inflate state, kept from an earlier request if there
    /// is one.
    pub(super) fn take_inflater(&self) -> Decompress {
        self.inflaters
            .take()
            .unwrap_or_else(|| Decompress::new(false))
    }

    pub(super) fn keep_inflater(&self, inflater: Decompress) {
        self.inflaters.keep(inflater);
    }

    pub(super) fn keep(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() == 0 || buffer.capacity() > MAX_KEPT_CAPACITY {
            return;
        }
        buffer.clear();
        self.buffers.keep(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_given_back_are_reused_emptied_and_oversized_or_surplus_ones_are_not() {
        let buffers = DecompressedBuffers::default();
        let mut first = buffers.take();
        first.extend_from_slice(b"request");
        let kept = first.as_ptr();
        buffers.give_back(Decompressed::Buffer(first));
        let again = buffers.take();
        assert_eq!(again.as_ptr(), kept);
        assert!(again.is_empty());

        buffers.give_back(Decompressed::Buffer(Vec::with_capacity(
            MAX_KEPT_CAPACITY + 1,
        )));
        assert_eq!(buffers.take().capacity(), 0);

        for _ in 0..MAX_KEPT + 2 {
            buffers.give_back(Decompressed::Buffer(Vec::with_capacity(10)));
        }
        let kept = std::iter::repeat_with(|| buffers.take())
            .take(MAX_KEPT + 2)
            .filter(|buffer| buffer.capacity() > 0)
            .count();
        assert_eq!(kept, MAX_KEPT);
    }
}
