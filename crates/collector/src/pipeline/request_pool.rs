//! Decoded requests kept, once the pipeline is done with them, for the
//! OTLP receivers to decode the next requests into: a collector that
//! allocated a fresh request for each would allocate, fault in and free
//! tens of thousands of entries and megabytes of tables every time. The
//! service owns one pool and hands it to every pipeline; a [`Profiles`] made
//! from a pooled request goes back to the pool when it is dropped.
//!
//! [`Profiles`]: super::Profiles

use profbridge_translate::otlp::ExportProfilesServiceRequest;

use crate::shared::reuse::ReusePool;
use crate::telemetry::metrics::{Counter, Registry};

/// Requests kept: about as many as are decoded at once.
const MAX_KEPT: usize = 4;
/// A request holding more than this (by [`super::memory_estimate`]) is
/// not kept.
const MAX_KEPT_BYTES: usize = 16 << 20;
/// Nor is one that would make those kept hold more than this.
const MAX_KEPT_TOTAL_BYTES: usize = 32 << 20;
/// A kept request is only decoded into when it holds no more than this
/// many bytes per protobuf byte of the new request (plus
/// [`SMALL_REQUEST_BYTES`]): about twice what a decoded request takes.
/// Its vectors keep their capacity, which the queue budgets count, so a
/// small request in a large request's memory would count as large.
const MAX_BYTES_PER_PROTOBUF_BYTE: usize = 8;
const SMALL_REQUEST_BYTES: usize = 1 << 20;

/// Kept requests, each with the bytes it holds, and how often a request
/// asked for was a kept one.
#[derive(Debug)]
pub struct RequestPool {
    kept: ReusePool<(ExportProfilesServiceRequest, usize)>,
    hits: Counter,
    misses: Counter,
}

impl Default for RequestPool {
    fn default() -> Self {
        Self {
            kept: ReusePool::new(MAX_KEPT),
            hits: Counter::default(),
            misses: Counter::default(),
        }
    }
}

impl RequestPool {
    /// A pool whose hits and misses `/metrics` shows as
    /// `profbridge_request_pool_hits_total` and `..._misses_total`.
    pub fn registered(registry: &Registry) -> Self {
        Self {
            kept: ReusePool::new(MAX_KEPT),
            hits: registry.counter(
                "profbridge_request_pool_hits_total",
                "Requests decoded into memory kept from an earlier request.",
                Vec::new(),
            ),
            misses: registry.counter(
                "profbridge_request_pool_misses_total",
                "Requests decoded into new memory: none was kept, or what was kept was far larger than needed.",
                Vec::new(),
            ),
        }
    }

    /// A request to decode a request of `encoded_size` protobuf bytes into
    /// with `decode_request_reusing`: a kept one, or an empty one when the
    /// kept one is far larger than this request needs (it is dropped) or
    /// none is kept.
    pub fn take(&self, encoded_size: usize) -> ExportProfilesServiceRequest {
        let most = encoded_size
            .saturating_mul(MAX_BYTES_PER_PROTOBUF_BYTE)
            .saturating_add(SMALL_REQUEST_BYTES);
        match self.kept.take() {
            Some((request, size)) if size <= most => {
                self.hits.add(1);
                request
            }
            _ => {
                self.misses.add(1);
                ExportProfilesServiceRequest::default()
            }
        }
    }

    /// Keeps a request nothing needs any more, holding `memory_size` bytes,
    /// unless enough are kept or it is large.
    pub fn keep(&self, request: ExportProfilesServiceRequest, memory_size: usize) {
        let empty = request.dictionary.is_none() && request.resource_profiles.capacity() == 0;
        if empty || memory_size > MAX_KEPT_BYTES {
            return;
        }
        self.kept.keep_if((request, memory_size), |kept| {
            let kept_bytes: usize = kept.iter().map(|(_, size)| size).sum();
            kept_bytes + memory_size <= MAX_KEPT_TOTAL_BYTES
        });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_kept_are_given_out_and_large_or_surplus_ones_are_not_kept() {
        let pool = RequestPool::default();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        pool.keep(request.clone(), MAX_KEPT_BYTES + 1);
        pool.keep(ExportProfilesServiceRequest::default(), 0);
        assert_eq!(pool.len(), 0);
        for _ in 0..MAX_KEPT + 1 {
            pool.keep(request.clone(), 1000);
        }
        assert_eq!(pool.len(), MAX_KEPT);
        assert_eq!(pool.take(1000), request);
        assert_eq!(pool.len(), MAX_KEPT - 1);
    }

    #[test]
    fn requests_kept_hold_a_bounded_total() {
        let pool = RequestPool::default();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        for _ in 0..MAX_KEPT {
            pool.keep(request.clone(), MAX_KEPT_BYTES);
        }
        assert_eq!(pool.len(), MAX_KEPT_TOTAL_BYTES / MAX_KEPT_BYTES);
        pool.take(MAX_KEPT_BYTES);
        pool.keep(request, MAX_KEPT_BYTES);
        assert_eq!(pool.len(), MAX_KEPT_TOTAL_BYTES / MAX_KEPT_BYTES);
    }

    #[test]
    fn a_request_far_larger_than_needed_is_dropped_not_decoded_into() {
        let pool = RequestPool::default();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        pool.keep(request.clone(), 10 << 20);
        assert_eq!(pool.take(1000), ExportProfilesServiceRequest::default());
        assert_eq!(pool.len(), 0);
        pool.keep(request.clone(), 10 << 20);
        assert_eq!(pool.take(2 << 20), request);
    }

    #[test]
    fn hits_and_misses_are_counted_in_the_registry() {
        let registry = Registry::new();
        let pool = RequestPool::registered(&registry);
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        pool.take(1000);
        pool.keep(request.clone(), 1000);
        assert_eq!(pool.take(1000), request);
        pool.keep(request, 10 << 20);
        pool.take(1000);
        let metrics = registry.render();
        assert!(
            metrics.contains("profbridge_request_pool_hits_total 1\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("profbridge_request_pool_misses_total 2\n"),
            "{metrics}"
        );
    }

    #[test]
    fn two_pools_keep_their_own_requests() {
        let (first, second) = (RequestPool::default(), RequestPool::default());
        first.keep(profbridge_testkit::ebpf_like_request(20, 1), 1000);
        assert_eq!(second.take(1000), ExportProfilesServiceRequest::default());
        assert_eq!(first.len(), 1);
    }
}
