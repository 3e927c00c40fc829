use std::sync::Arc;
use std::time::SystemTime;

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::Validated;

use super::RequestPool;

/// What flows through a pipeline (the Collector's pdata calls it
/// `Profiles` too): one received request, its invalid profiles already
/// removed, and what the pipeline needs to know about it.
#[derive(Debug, Clone)]
pub struct Profiles {
    request: ExportProfilesServiceRequest,
    /// What `validate_request` found for `request` exactly as it is, when
    /// whoever made the batch validated it; changing the request drops it.
    validation: Option<Validated>,
    pub received_at: SystemTime,
    /// Its protobuf size.
    pub encoded_size: usize,
    /// The memory it holds decoded (estimated), which queue budgets count.
    pub memory_size: usize,
    /// Where the request goes when the batch is dropped.
    request_pool: Option<Arc<RequestPool>>,
}

impl Profiles {
    /// A batch of a request that has not been validated as it is: its
    /// exporters validate it.
    pub fn new(request: ExportProfilesServiceRequest, encoded_size: usize) -> Self {
        let memory_size = super::memory_estimate(&request).max(encoded_size);
        Self {
            request,
            validation: None,
            received_at: SystemTime::now(),
            encoded_size,
            memory_size,
            request_pool: None,
        }
    }

    /// The batch, giving its request to `pool` when it is dropped.
    #[must_use]
    pub fn returning_to(mut self, pool: Option<&Arc<RequestPool>>) -> Self {
        self.request_pool = pool.cloned();
        self
    }

    /// The pool the request goes back to, for batches made from this one.
    pub fn request_pool(&self) -> Option<&Arc<RequestPool>> {
        self.request_pool.as_ref()
    }

    /// A batch of a request that `validate_request` checked: `validation`
    /// must be what it returned for `request`, unchanged since. Exporters
    /// then skip validating it again.
    pub fn validated(
        request: ExportProfilesServiceRequest,
        encoded_size: usize,
        validation: Validated,
    ) -> Self {
        let mut batch = Self::new(request, encoded_size);
        batch.validation = Some(validation);
        batch
    }

    pub fn request(&self) -> &ExportProfilesServiceRequest {
        &self.request
    }

    /// The request, to change: the batch no longer counts as validated.
    pub fn request_mut(&mut self) -> &mut ExportProfilesServiceRequest {
        self.validation = None;
        &mut self.request
    }

    pub fn into_request(mut self) -> ExportProfilesServiceRequest {
        std::mem::take(&mut self.request)
    }

    /// The validation the request passed as it is, if the batch was made
    /// with one ([`Profiles::validated`]).
    pub fn validation(&self) -> Option<&Validated> {
        self.validation.as_ref()
    }

    pub fn profile_count(&self) -> usize {
        self.request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .map(|s| s.profiles.len())
            .sum()
    }

    pub fn sample_count(&self) -> usize {
        self.request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
            .map(|p| p.samples.len())
            .sum()
    }
}

/// The request goes back to its pool, if it came from one, for a receiver
/// to decode a later request into.
impl Drop for Profiles {
    fn drop(&mut self) {
        if let Some(pool) = &self.request_pool {
            pool.keep(std::mem::take(&mut self.request), self.memory_size);
        }
    }
}

#[cfg(test)]
mod tests {
    use profbridge_translate::validate_request;

    use super::*;

    fn validated_batch() -> Profiles {
        let request = profbridge_testkit::ebpf_like_request(10, 1);
        let validation = validate_request(&request).unwrap_or_default();
        Profiles::validated(request, 100, validation)
    }

    #[test]
    fn a_validated_batch_keeps_its_validation_until_its_request_is_changed() {
        let mut batch = validated_batch();
        assert!(batch.validation().is_some());
        assert!(batch.clone().validation().is_some());
        batch.request_mut().resource_profiles.clear();
        assert!(batch.validation().is_none());
        assert!(Profiles::new(batch.into_request(), 100)
            .validation()
            .is_none());
    }
}
