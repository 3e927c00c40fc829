//! One scrape of one job: fetch within the timeout, hold room in the
//! pipelines, decode, turn a cumulative profile into its delta, and hand
//! it over.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use tokio::time::Instant;

use profbridge_pprof::DEFAULT_FOLDED_SAMPLE_TYPE;
use profbridge_pprof::{load_profile, DecodeError, DetectError, ParseError, Profile};
use profbridge_translate::otlp::ExportProfilesServiceRequest;

use super::delta::{DeltaOutcome, DeltaTracker, ResetReason};
use super::fetch::Fetcher;
use super::metrics::{JobMetrics, ScrapeFailure};
use super::resource::resource_attributes;
use super::target::Job;
use crate::pipeline::PipelineHandle;
use crate::receivers::from_pprof::{
    decode_limits, hand_over, nanos_since_epoch, parse_estimate, profile_request,
};
use crate::receivers::intake::{settle, Admission, Decision, Outcome};
use crate::telemetry::ReceiverMetrics;

/// The first wait before asking a full pipeline again.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// What every job's scrapes share.
pub struct Shared {
    pub fetcher: Fetcher,
    /// `max_concurrent_scrapes` permits.
    pub permits: Arc<Semaphore>,
    pub pipelines: Arc<[PipelineHandle]>,
    pub metrics: ReceiverMetrics,
    pub max_profile_size: usize,
}

/// What a job keeps between its scrapes.
#[derive(Debug, Default)]
pub struct JobState {
    tracker: DeltaTracker,
    baseline_logged: bool,
}

/// One scrape; `next_turn` is when the job's next scrape is due, until
/// which a full pipeline is asked again.
pub async fn scrape(
    job: Arc<Job>,
    shared: Arc<Shared>,
    state: Arc<Mutex<JobState>>,
    metrics: JobMetrics,
    timeout: Duration,
    next_turn: Instant,
) {
    let Ok(_permit) = shared.permits.acquire().await else {
        return;
    };
    metrics.started();
    let started = Instant::now();
    let failed = |reason: ScrapeFailure, detail: &str| {
        metrics.failed(started.elapsed(), reason);
        shared.metrics.note_error(&format!(
            "scrape of {} ({}): {detail}",
            job.url, job.spec.name
        ));
        let Some(not_logged) = metrics.may_log_failure() else {
            return;
        };
        tracing::warn!(
            receiver = %shared.metrics.receiver,
            target = %job.instance,
            profile = %job.spec.name,
            url = %job.url,
            reason = reason.as_str(),
            detail,
            similar_failures_not_logged = not_logged,
            "scrape failed (logged at most once a minute per target and profile; profbridge_scraper_errors_total counts every one)"
        );
    };
    let fetch = shared.fetcher.fetch(
        &job.url,
        shared.max_profile_size,
        (&shared.pipelines, &shared.metrics),
        |bytes| metrics.read(bytes),
    );
    let (body, admission) = match tokio::time::timeout(timeout, fetch).await {
        Err(_) => {
            return failed(
                ScrapeFailure::Timeout,
                &format!("no profile within {timeout:?}"),
            )
        }
        Ok(Err(error)) => return failed(error.reason(), &error.to_string()),
        Ok(Ok(body)) => body,
    };
    let Some(admission) = covered(&shared, admission, parse_estimate(body.len()), next_turn).await
    else {
        return failed(
            ScrapeFailure::Refused,
            "the pipelines had no room until the next scrape; the profile was dropped",
        );
    };
    let limit = shared.max_profile_size;
    let (decoding_job, decoding_shared) = (Arc::clone(&job), Arc::clone(&shared));
    let ready = tokio::task::spawn_blocking(move || {
        let ready = prepare(&decoding_job, &state, &body, limit)?;
        drop(body);
        Ok(match ready {
            Ready::Request(request) => {
                let samples = sample_count(&request);
                let decision = hand_over(
                    *request,
                    &decoding_shared.pipelines,
                    &decoding_shared.metrics,
                    admission,
                );
                Handed::Decided(decision, samples)
            }
            other => Handed::Not(other),
        })
    })
    .await;
    let (decision, samples) = match ready {
        Err(error) => return failed(ScrapeFailure::Decode, &error.to_string()),
        Ok(Err((reason, detail))) => return failed(reason, &detail),
        Ok(Ok(Handed::Not(Ready::Baseline { first }))) => {
            if first {
                tracing::info!(receiver = %shared.metrics.receiver, target = %job.instance, profile = %job.spec.name, "first scrape of a cumulative profile: kept as the delta baseline, not sent");
            }
            return metrics.succeeded(started.elapsed(), 0);
        }
        Ok(Ok(Handed::Not(Ready::Reset(detail)))) => {
            metrics.reset();
            tracing::info!(receiver = %shared.metrics.receiver, target = %job.instance, profile = %job.spec.name, detail, "a new delta baseline; this scrape is not sent");
            return metrics.succeeded(started.elapsed(), 0);
        }
        Ok(Ok(Handed::Not(Ready::Unchanged | Ready::Request(_)))) => {
            return metrics.succeeded(started.elapsed(), 0)
        }
        Ok(Ok(Handed::Decided(decision, samples))) => (decision, samples),
    };
    match settle(decision, &shared.metrics).await {
        Outcome::Accepted { .. } => metrics.succeeded(started.elapsed(), samples),
        Outcome::Invalid(reason) => failed(ScrapeFailure::Decode, &reason),
        Outcome::Unavailable => failed(
            ScrapeFailure::Refused,
            "a pipeline or an exporter's queue refused the profile; it was dropped",
        ),
    }
}

/// A decoded scrape, on its way to the pipelines.
enum Ready {
    Request(Box<ExportProfilesServiceRequest>),
    /// The first scrape of a cumulative profile (`first`: of this job).
    Baseline {
        first: bool,
    },
    Reset(&'static str),
    /// A delta without rows: nothing happened since the previous scrape.
    Unchanged,
}

/// A scrape after the blocking work: handed to the intake, or not sent.
enum Handed {
    Decided(Decision, usize),
    Not(Ready),
}

type Failed = (ScrapeFailure, String);

/// Decodes `body` and, for a cumulative profile, takes its delta; then
/// makes the request. Blocking work.
fn prepare(job: &Job, state: &Mutex<JobState>, body: &[u8], limit: usize) -> Result<Ready, Failed> {
    let mut profile = decode(body, limit)?;
    if job.spec.delta {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let outcome = state
            .tracker
            .next(profile)
            .map_err(|error| (ScrapeFailure::Delta, error.to_string()))?;
        profile = match outcome {
            DeltaOutcome::Baseline => {
                let first = !std::mem::replace(&mut state.baseline_logged, true);
                return Ok(Ready::Baseline { first });
            }
            DeltaOutcome::Reset(ResetReason::ValueDecreased) => {
                return Ok(Ready::Reset("a value went down: the target restarted"))
            }
            DeltaOutcome::Reset(ResetReason::SampleTypesChanged) => {
                return Ok(Ready::Reset("the sample types changed"))
            }
            DeltaOutcome::Delta(delta) if delta.sample.is_empty() => return Ok(Ready::Unchanged),
            DeltaOutcome::Delta(delta) => *delta,
        };
    }
    profile_request(&profile, &resource_attributes(job))
        .map(|request| Ready::Request(Box::new(request)))
        .map_err(|error| (ScrapeFailure::Decode, error.to_string()))
}

fn decode(body: &[u8], limit: usize) -> Result<Profile, Failed> {
    let (mut profile, _) = load_profile(
        body,
        None,
        DEFAULT_FOLDED_SAMPLE_TYPE,
        &decode_limits(limit),
    )
    .map_err(|error| {
        let reason = match &error {
            ParseError::Pprof(decode) | ParseError::Detect(DetectError::Decode(decode))
                if too_large(decode) =>
            {
                ScrapeFailure::TooLarge
            }
            _ => ScrapeFailure::Decode,
        };
        (reason, error.to_string())
    })?;
    if profile.time_nanos == 0 {
        profile.time_nanos = nanos_since_epoch(SystemTime::now());
    }
    Ok(profile)
}

fn too_large(error: &DecodeError) -> bool {
    matches!(
        error,
        DecodeError::InputTooLarge { .. } | DecodeError::DecompressedTooLarge { .. }
    )
}

fn sample_count(request: &ExportProfilesServiceRequest) -> usize {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum()
}

/// `admission` (which holds the body) grown to `estimate` bytes, the
/// decoded profile's, in every pipeline; asked again with backoff until
/// `next_turn`.
async fn covered(
    shared: &Shared,
    mut admission: Admission,
    estimate: usize,
    next_turn: Instant,
) -> Option<Admission> {
    let mut wait = FIRST_RETRY;
    loop {
        if admission.cover(estimate, &shared.metrics) {
            return Some(admission);
        }
        if Instant::now() + wait >= next_turn {
            return None;
        }
        tokio::time::sleep(wait).await;
        wait = wait.saturating_mul(2);
    }
}
