//! Converters, compressors and output buffers that pprof exports reuse. A
//! fresh conversion's tables, gzip state and megabyte buffers for every
//! request cost allocation, page faults and zeroing each time.

use profbridge_pprof::GzipCompressor;
use profbridge_translate::{PprofConverter, ToPprofOptions};

use crate::shared::reuse::ReusePool;

/// Scratch kept for later exports; more exports at once allocate more.
const MAX_KEPT: usize = 4;
/// A buffer (or a converter's memory) grown past this by an unusually
/// large profile is not kept.
const MAX_KEPT_CAPACITY: usize = 16 << 20;

#[derive(Debug)]
pub(super) struct Scratch {
    /// Converts with default options.
    pub converter: PprofConverter,
    pub compressor: GzipCompressor,
    /// A pprof's protobuf, then the same gzipped.
    pub encoded: Vec<u8>,
    pub gzipped: Vec<u8>,
}

impl Scratch {
    fn largest_capacity(&self) -> usize {
        self.encoded
            .capacity()
            .max(self.gzipped.capacity())
            .max(self.converter.capacity_bytes())
    }
}

#[derive(Debug)]
pub(super) struct ScratchPool {
    gzip_level: u32,
    free: ReusePool<Scratch>,
}

impl ScratchPool {
    pub fn new(gzip_level: u32) -> Self {
        Self {
            gzip_level,
            free: ReusePool::new(MAX_KEPT),
        }
    }

    pub fn take(&self) -> Scratch {
        self.free.take().unwrap_or_else(|| Scratch {
            converter: PprofConverter::new(ToPprofOptions::default()),
            compressor: GzipCompressor::new(self.gzip_level),
            encoded: Vec::new(),
            gzipped: Vec::new(),
        })
    }

    pub fn give_back(&self, scratch: Scratch) {
        if scratch.largest_capacity() <= MAX_KEPT_CAPACITY {
            self.free.keep(scratch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_scratch_is_reused_and_oversized_buffers_are_not() {
        let pool = ScratchPool::new(1);
        let mut scratch = pool.take();
        scratch.gzipped.reserve(1000);
        let kept = scratch.gzipped.as_ptr();
        pool.give_back(scratch);
        assert_eq!(pool.take().gzipped.as_ptr(), kept);

        let mut huge = pool.take();
        huge.encoded.reserve(MAX_KEPT_CAPACITY + 1);
        pool.give_back(huge);
        assert_eq!(pool.take().encoded.capacity(), 0);
    }

    #[test]
    fn keeps_at_most_a_few() {
        let pool = ScratchPool::new(1);
        let taken: Vec<_> = (0..MAX_KEPT + 3).map(|_| pool.take()).collect();
        for scratch in taken {
            pool.give_back(scratch);
        }
        assert_eq!(pool.free.len(), MAX_KEPT);
    }
}
