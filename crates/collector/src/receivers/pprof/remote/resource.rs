//! The resource attributes of a job's profiles.

use profbridge_translate::otlp::KeyValue;

use super::target::Job;
use crate::receivers::from_pprof::string_attributes;

/// The resource attribute naming the profile pulled (`cpu`, `heap`, a
/// custom name): Go's heap and allocs profiles share their sample types.
pub const PROFILE_NAME: &str = "profbridge.profile.name";

/// Every label of the job; `service.name` from the label `service_name`,
/// else `job`, else the target's host:port; `service.instance.id`, the
/// target as written; and the profile's name.
pub fn resource_attributes(job: &Job) -> Vec<KeyValue> {
    let service = job
        .labels
        .get("service_name")
        .or_else(|| job.labels.get("job"))
        .cloned()
        .unwrap_or_else(|| job.host_port());
    let labels = job
        .labels
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()));
    let derived = [
        ("service.name", service),
        ("service.instance.id", job.instance.clone()),
        (PROFILE_NAME, job.spec.name.clone()),
    ]
    .map(|(key, value)| (key.to_owned(), value));
    string_attributes(labels.chain(derived))
}
