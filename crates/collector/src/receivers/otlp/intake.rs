//! What both OTLP protocols do with a decoded request: validate it, drop
//! the invalid profiles, and queue the rest on every pipeline.

use std::sync::Arc;

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{validate_request, ProfileRef};

use crate::pipeline::{Batch, PipelineHandle, Refused};

/// How a request went; the protocols turn it into their status codes.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Queued; `rejected` invalid profiles were left out, for `reason`.
    Accepted { rejected: usize, reason: String },
    /// Nothing in it can be used.
    Invalid(String),
    /// A pipeline is full or stopping: retry later.
    Unavailable,
}

/// Validates, filters and queues; blocking work, run off the async workers.
pub fn intake(
    mut request: ExportProfilesServiceRequest,
    encoded_size: usize,
    pipelines: &[PipelineHandle],
) -> Outcome {
    let validated = match validate_request(&request) {
        Ok(validated) => validated,
        Err(error) => return Outcome::Invalid(error.to_string()),
    };
    let rejected = validated.invalid.len();
    let reason = validated
        .invalid
        .iter()
        .map(|(_, error)| error.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if rejected > 0 && rejected == validated.total_profiles {
        return Outcome::Invalid(reason);
    }
    if rejected > 0 {
        remove_profiles(
            &mut request,
            validated.invalid.iter().map(|(at, _)| *at).collect(),
        );
    }
    let batch = Arc::new(Batch::new(request, encoded_size));
    for pipeline in pipelines {
        if let Err(refused) = pipeline.try_submit(Arc::clone(&batch)) {
            tracing::warn!(pipeline = %pipeline.name, ?refused, "refusing a request");
            return Outcome::Unavailable;
        }
    }
    let _ = Refused::Full;
    Outcome::Accepted { rejected, reason }
}

/// Removes the listed profiles, and scopes and resources left empty.
fn remove_profiles(request: &mut ExportProfilesServiceRequest, mut invalid: Vec<ProfileRef>) {
    invalid.sort_unstable();
    for (r, resource) in request.resource_profiles.iter_mut().enumerate() {
        for (s, scope) in resource.scope_profiles.iter_mut().enumerate() {
            let mut p = 0;
            scope.profiles.retain(|_| {
                let at = ProfileRef {
                    resource: r,
                    scope: s,
                    profile: p,
                };
                p += 1;
                invalid.binary_search(&at).is_err()
            });
        }
        resource
            .scope_profiles
            .retain(|scope| !scope.profiles.is_empty());
    }
    request
        .resource_profiles
        .retain(|resource| !resource.scope_profiles.is_empty());
}
