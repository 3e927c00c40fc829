use std::time::SystemTime;

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::Validated;

/// What flows through a pipeline: one received request (its invalid
/// profiles already removed) and what the pipeline needs to know about it.
#[derive(Debug, Clone)]
pub struct Batch {
    request: ExportProfilesServiceRequest,
    /// What `validate_request` found for `request` exactly as it is, when
    /// whoever made the batch validated it; changing the request drops it.
    validation: Option<Validated>,
    pub received_at: SystemTime,
    /// Its protobuf size.
    pub encoded_size: usize,
    /// The memory it holds decoded (estimated), which queue budgets count.
    pub memory_size: usize,
}

impl Batch {
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
        }
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
    /// with one ([`Batch::validated`]).
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

/// The request goes to the receivers' spare requests, to decode a later
/// request into.
impl Drop for Batch {
    fn drop(&mut self) {
        super::spare_requests::keep(std::mem::take(&mut self.request), self.memory_size);
    }
}

#[cfg(test)]
mod tests {
    use profbridge_translate::validate_request;

    use super::*;

    fn validated_batch() -> Batch {
        let request = profbridge_testkit::ebpf_like_request(10, 1);
        let validation = validate_request(&request).unwrap_or_default();
        Batch::validated(request, 100, validation)
    }

    #[test]
    fn a_validated_batch_keeps_its_validation_until_its_request_is_changed() {
        let mut batch = validated_batch();
        assert!(batch.validation().is_some());
        assert!(batch.clone().validation().is_some());
        batch.request_mut().resource_profiles.clear();
        assert!(batch.validation().is_none());
        assert!(Batch::new(batch.into_request(), 100).validation().is_none());
    }
}
