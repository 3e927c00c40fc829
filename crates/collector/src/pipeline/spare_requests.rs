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

static SPARE_REQUESTS: SpareRequests = SpareRequests::new();

/// A request to decode into with `decode_request_reusing`: a kept one, or
/// an empty one.
pub fn spare_request() -> ExportProfilesServiceRequest {
    SPARE_REQUESTS.take()
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

    fn take(&self) -> ExportProfilesServiceRequest {
        self.0
            .take()
            .map(|(request, _)| request)
            .unwrap_or_default()
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
        assert_eq!(spare.take(), request);
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
        spare.take();
        spare.keep(request, MAX_KEPT_BYTES);
        assert_eq!(spare.len(), MAX_KEPT_TOTAL_BYTES / MAX_KEPT_BYTES);
    }
}
