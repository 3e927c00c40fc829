//! What every receiver does with a decoded request: validate it, drop
//! the invalid profiles, and queue the rest on every pipeline.

use std::sync::Arc;

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{validate_request, ProfileRef};

use crate::pipeline::{Confirmation, PipelineHandle, Profiles, Received, Reservation};
use crate::telemetry::recent_errors::profiles_phrase;
use crate::telemetry::{ReceiverMetrics, RefusedReason};

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

/// Bytes of memory held per byte of protobuf while a request is decoded.
/// The decoded request itself estimates at about 4 (every location, sample
/// and string is an allocation of its own); the rest covers the encoded
/// and decompressed buffers alive meanwhile.
pub const DECODED_BYTES_PER_PROTOBUF_BYTE: usize = 6;

/// Room held in every pipeline for a request while it is decoded, so that
/// what is being decoded counts against the queue budgets too.
pub struct Admission {
    held: Vec<Reservation>,
    /// What each of `held` was admitted for.
    bytes: usize,
}

impl Admission {
    /// Makes sure `decoded_estimate` bytes are held in every pipeline: a
    /// request admitted on an estimate of its decompressed size may turn out
    /// larger. Refuses (counted and logged) when a pipeline has no room for
    /// the difference.
    pub fn cover(&mut self, decoded_estimate: usize, metrics: &ReceiverMetrics) -> bool {
        let more = decoded_estimate.saturating_sub(self.bytes);
        if more == 0 {
            return true;
        }
        if !self.held.iter_mut().all(|held| held.try_grow(more)) {
            refused_before_decoding(metrics, FULL);
            return false;
        }
        self.bytes = decoded_estimate;
        true
    }

    /// [`Self::cover`], refusing first, as [`admit`] does, when every
    /// exporter of a pipeline lacks room for `decoded_estimate`.
    pub fn cover_in(
        &mut self,
        pipelines: &[PipelineHandle],
        decoded_estimate: usize,
        metrics: &ReceiverMetrics,
    ) -> bool {
        if let Some(refusal) = gate_refusal(pipelines) {
            refused_before_decoding(metrics, &refusal);
            return false;
        }
        if !pipelines
            .iter()
            .all(|pipeline| pipeline.exporters_have_room_for(decoded_estimate))
        {
            refused_before_decoding(metrics, FULL);
            return false;
        }
        self.cover(decoded_estimate, metrics)
    }
}

/// Whether a pipeline holds all it may already, its exporters all drop
/// what they are offered, or a gate at its intake (a `memory_limiter`)
/// refuses: then a request is refused before it is even read.
pub fn any_full(pipelines: &[PipelineHandle]) -> bool {
    pipelines.iter().any(|pipeline| {
        pipeline.budget().used() >= pipeline.budget().limit()
            || !pipeline.exporters_have_room_for(0)
            || pipeline.refusal().is_some()
    })
}

/// Why a gate at a pipeline's intake refuses new data now, if one does.
fn gate_refusal(pipelines: &[PipelineHandle]) -> Option<String> {
    pipelines.iter().find_map(|pipeline| {
        pipeline
            .refusal()
            .map(|refusal| format!("pipeline {}: {refusal}", pipeline.name))
    })
}

const FULL: &str = "a pipeline, or every exporter of it, is full";

/// Holds `decoded_estimate` bytes in every pipeline, or refuses (counted and
/// logged) when one is full, has no exporter with room for the request, or
/// has a gate that refuses: then the request is not decoded at all.
pub fn admit(
    pipelines: &[PipelineHandle],
    decoded_estimate: usize,
    metrics: &ReceiverMetrics,
) -> Option<Admission> {
    if let Some(refusal) = gate_refusal(pipelines) {
        refused_before_decoding(metrics, &refusal);
        return None;
    }
    let held: Option<Vec<Reservation>> = pipelines
        .iter()
        .map(|pipeline| {
            pipeline
                .exporters_have_room_for(decoded_estimate)
                .then(|| pipeline.budget().try_reserve(decoded_estimate))
                .flatten()
        })
        .collect();
    if held.is_none() {
        refused_before_decoding(metrics, FULL);
    }
    held.map(|held| Admission {
        held,
        bytes: decoded_estimate,
    })
}

fn refused_before_decoding(metrics: &ReceiverMetrics, detail: &str) {
    metrics.refused_request(RefusedReason::Unavailable);
    metrics.note_refusal(
        RefusedReason::Unavailable,
        &format!("refused a request before decoding it: {detail}"),
    );
    tracing::warn!(
        receiver = %metrics.receiver,
        transport = metrics.transport,
        reason = RefusedReason::Unavailable.as_str(),
        detail,
        "refused a request before decoding it"
    );
}

/// Validates, filters and queues; blocking work, run off the async workers.
/// Counts what was accepted and refused, and logs each refusal once. The
/// admission is given back just before the request is queued, which then
/// holds its own, measured, share of the budgets. `received`, the bytes
/// the request arrived as, goes with it when nothing in it is rejected,
/// for exporters to send as they are.
pub fn intake(
    mut request: ExportProfilesServiceRequest,
    encoded_size: usize,
    received: Option<Received>,
    pipelines: &[PipelineHandle],
    metrics: &ReceiverMetrics,
    admission: Admission,
) -> Decision {
    let validated = match validate_request(&request) {
        Ok(validated) => validated,
        Err(error) => {
            let reason = error.to_string();
            let all = Counts::all_of(&request);
            refuse(metrics, RefusedReason::Invalid, all, &reason);
            metrics.refused_request(RefusedReason::Invalid);
            return Decision::done(Outcome::Invalid(reason));
        }
    };
    let rejected = validated.invalid.len();
    let rejected_counts = Counts::of(&request, validated.invalid.iter().map(|(at, _)| *at));
    let reason = validated
        .invalid
        .iter()
        .map(|(_, error)| error.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if rejected > 0 && rejected == validated.total_profiles {
        refuse(metrics, RefusedReason::Invalid, rejected_counts, &reason);
        metrics.refused_request(RefusedReason::Invalid);
        return Decision::done(Outcome::Invalid(reason));
    }
    let batch = if rejected > 0 {
        remove_profiles(
            &mut request,
            validated.invalid.iter().map(|(at, _)| *at).collect(),
        );
        Profiles::new(request, encoded_size)
    } else if let Some(received) = received {
        Profiles::received(request, encoded_size, received, Some(validated))
    } else {
        // Exactly the request that passed: exporters need not validate it.
        Profiles::validated(request, encoded_size, validated)
    };
    let batch = Arc::new(batch.returning_to(pipelines.first().map(PipelineHandle::request_pool)));
    drop(admission);
    let mut confirmations = Vec::with_capacity(pipelines.len());
    for pipeline in pipelines {
        match pipeline.try_submit_confirmed(Arc::clone(&batch)) {
            Ok(confirmation) => confirmations.push(confirmation),
            Err(refused) => {
                metrics.refused(
                    RefusedReason::Invalid,
                    rejected_counts.profiles,
                    rejected_counts.samples,
                );
                let reason = format!("pipeline {}: {refused:?}", pipeline.name);
                let counts = Counts {
                    profiles: batch.profile_count(),
                    samples: batch.sample_count(),
                };
                refuse(metrics, RefusedReason::Unavailable, counts, &reason);
                metrics.refused_request(RefusedReason::Unavailable);
                return Decision::done(Outcome::Unavailable);
            }
        }
    }
    if rejected > 0 {
        refuse(metrics, RefusedReason::Invalid, rejected_counts, &reason);
    }
    Decision {
        outcome: Outcome::Accepted { rejected, reason },
        confirmations,
        profiles: batch.profile_count(),
        samples: batch.sample_count(),
    }
}

/// What [`intake`] made of a request. An accepted one is counted only once
/// [`settle`] knows the exporters' queues took it.
pub struct Decision {
    outcome: Outcome,
    confirmations: Vec<Confirmation>,
    profiles: usize,
    samples: usize,
}

impl Decision {
    /// A decision with nothing left to wait for.
    pub fn done(outcome: Outcome) -> Self {
        Self {
            outcome,
            confirmations: Vec::new(),
            profiles: 0,
            samples: 0,
        }
    }
}

/// Waits until every pipeline has offered the request to its exporters
/// (for persistent queues: until it is on disk), and counts it. A request
/// an exporter's queue could not take is answered as unavailable, so that
/// the client retries it.
pub async fn settle(decision: Decision, metrics: &ReceiverMetrics) -> Outcome {
    let Decision {
        outcome,
        confirmations,
        profiles,
        samples,
    } = decision;
    if !matches!(outcome, Outcome::Accepted { .. }) {
        return outcome;
    }
    let mut all_queued = true;
    for confirmation in confirmations {
        all_queued &= confirmation.queued().await;
    }
    if all_queued {
        metrics.accepted(profiles, samples);
        return outcome;
    }
    refuse(
        metrics,
        RefusedReason::Unavailable,
        Counts { profiles, samples },
        "an exporter's sending queue is full",
    );
    metrics.refused_request(RefusedReason::Unavailable);
    Outcome::Unavailable
}

/// Profiles and the samples they hold.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    pub profiles: usize,
    pub samples: usize,
}

impl Counts {
    fn all_of(request: &ExportProfilesServiceRequest) -> Self {
        Self {
            profiles: profile_count(request),
            samples: request
                .resource_profiles
                .iter()
                .flat_map(|r| &r.scope_profiles)
                .flat_map(|s| &s.profiles)
                .map(|p| p.samples.len())
                .sum(),
        }
    }

    /// The profiles of `request` at `refs`.
    fn of(request: &ExportProfilesServiceRequest, refs: impl Iterator<Item = ProfileRef>) -> Self {
        refs.fold(Self::default(), |counts, at| {
            let samples = request
                .resource_profiles
                .get(at.resource)
                .and_then(|r| r.scope_profiles.get(at.scope))
                .and_then(|s| s.profiles.get(at.profile))
                .map_or(0, |p| p.samples.len());
            Self {
                profiles: counts.profiles + 1,
                samples: counts.samples + samples,
            }
        })
    }
}

/// Counts profiles refused for `reason` and logs the request once.
pub(super) fn refuse(
    metrics: &ReceiverMetrics,
    reason: RefusedReason,
    counts: Counts,
    detail: &str,
) {
    let profiles = counts.profiles;
    metrics.refused(reason, profiles, counts.samples);
    metrics.note_refusal(reason, &format!("{}: {detail}", profiles_phrase(profiles)));
    tracing::warn!(
        receiver = %metrics.receiver,
        transport = metrics.transport,
        reason = reason.as_str(),
        refused_profiles = profiles,
        detail,
        "refused profiles"
    );
}

fn profile_count(request: &ExportProfilesServiceRequest) -> usize {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .map(|s| s.profiles.len())
        .sum()
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
