use std::time::SystemTime;

use profbridge_translate::otlp::ExportProfilesServiceRequest;

/// What flows through a pipeline: one received request (its invalid
/// profiles already removed) and what the pipeline needs to know about it.
#[derive(Debug, Clone)]
pub struct Batch {
    pub request: ExportProfilesServiceRequest,
    pub received_at: SystemTime,
    /// Its protobuf size.
    pub encoded_size: usize,
    /// The memory it holds decoded (estimated), which queue budgets count.
    pub memory_size: usize,
}

impl Batch {
    pub fn new(request: ExportProfilesServiceRequest, encoded_size: usize) -> Self {
        let memory_size = super::memory_estimate(&request).max(encoded_size);
        Self {
            request,
            received_at: SystemTime::now(),
            encoded_size,
            memory_size,
        }
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
