//! Decoded requests kept, once their batches are done with, for the OTLP
//! receivers to decode the next requests into: a collector that allocated
//! a fresh request for each would allocate, fault in and free tens of
//! thousands of entries and megabytes of tables every time.

use profbridge_translate::otlp::ExportProfilesServiceRequest;

use crate::kept::Kept;

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

static SPARE_REQUESTS: SpareRequests = SpareRequests::new();

/// A request to decode a request of `encoded_size` protobuf bytes into with
/// `decode_request_reusing`: a kept one, or an empty one when the kept one
/// is far larger than this request needs (it is dropped) or none is kept.
pub fn spare_request(encoded_size: usize) -> ExportProfilesServiceRequest {
    SPARE_REQUESTS.take(encoded_size)
}

/// Keeps a request nothing needs any more, holding `memory_size` bytes,
/// unless enough are kept or it is large.
pub(super) fn keep(request: ExportProfilesServiceRequest, memory_size: usize) {
    SPARE_REQUESTS.keep(request, memory_size);
}

/// Kept requests, each with the bytes it holds.
struct SpareRequests(Kept<(ExportProfilesServiceRequest, usize)>);

impl SpareRequests {
    const fn new() -> Self {
        Self(Kept::new(MAX_KEPT))
    }

    fn take(&self, encoded_size: usize) -> ExportProfilesServiceRequest {
        let most = encoded_size
            .saturating_mul(MAX_BYTES_PER_PROTOBUF_BYTE)
            .saturating_add(SMALL_REQUEST_BYTES);
        match self.0.take() {
            Some((request, size)) if size <= most => request,
            _ => ExportProfilesServiceRequest::default(),
        }
    }

    fn keep(&self, request: ExportProfilesServiceRequest, memory_size: usize) {
        let empty = request.dictionary.is_none() && request.resource_profiles.capacity() == 0;
        if empty || memory_size > MAX_KEPT_BYTES {
            return;
        }
        self.0.keep_if((request, memory_size), |kept| {
            let kept_bytes: usize = kept.iter().map(|(_, size)| size).sum();
            kept_bytes + memory_size <= MAX_KEPT_TOTAL_BYTES
        });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_kept_are_given_out_and_large_or_surplus_ones_are_not_kept() {
        let spare = SpareRequests::new();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        spare.keep(request.clone(), MAX_KEPT_BYTES + 1);
        spare.keep(ExportProfilesServiceRequest::default(), 0);
        assert_eq!(spare.len(), 0);
        for _ in 0..MAX_KEPT + 1 {
            spare.keep(request.clone(), 1000);
        }
        assert_eq!(spare.len(), MAX_KEPT);
        assert_eq!(spare.take(1000), request);
        assert_eq!(spare.len(), MAX_KEPT - 1);
    }

    #[test]
    fn requests_kept_hold_a_bounded_total() {
        let spare = SpareRequests::new();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        for _ in 0..MAX_KEPT {
            spare.keep(request.clone(), MAX_KEPT_BYTES);
        }
        assert_eq!(spare.len(), MAX_KEPT_TOTAL_BYTES / MAX_KEPT_BYTES);
        spare.take(MAX_KEPT_BYTES);
        spare.keep(request, MAX_KEPT_BYTES);
        assert_eq!(spare.len(), MAX_KEPT_TOTAL_BYTES / MAX_KEPT_BYTES);
    }

    #[test]
    fn a_request_far_larger_than_needed_is_dropped_not_decoded_into() {
        let spare = SpareRequests::new();
        let request = profbridge_testkit::ebpf_like_request(20, 1);
        spare.keep(request.clone(), 10 << 20);
        assert_eq!(spare.take(1000), ExportProfilesServiceRequest::default());
        assert_eq!(spare.len(), 0);
        spare.keep(request.clone(), 10 << 20);
        assert_eq!(spare.take(2 << 20), request);
    }
}
