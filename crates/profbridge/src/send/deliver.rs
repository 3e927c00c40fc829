//! Delivering one batch: export, and retry retryable failures with
//! exponential backoff (or the wait the destination asked for) within a
//! number of retries and a time budget.

use std::time::{Duration, Instant};

use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::exporters::otlp_http::OtlpHttpExporter;
use profbridge_collector::exporters::ExportError;
use profbridge_collector::pipeline::Profiles;

/// The first wait between attempts; each next one doubles, up to the cap.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub enum Destination {
    Grpc(Box<OtlpGrpcExporter>),
    Http(Box<OtlpHttpExporter>),
}

impl Destination {
    async fn export(&self, batch: &Profiles) -> Result<(), ExportError> {
        let sent = match self {
            Self::Grpc(exporter) => exporter.export(batch).await,
            Self::Http(exporter) => exporter.export(batch).await,
        };
        sent.map(|_| ())
    }
}

/// When to stop retrying.
#[derive(Debug, Clone, Copy)]
pub struct RetryLimits {
    pub retries: u32,
    pub max_elapsed: Duration,
}

/// Why a batch was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum NotDelivered {
    /// The destination refused it for good (its text as the exporter's).
    #[error("{0}")]
    Refused(ExportError),
    #[error("{error}; gave up after {attempts} {}", tries(.attempts))]
    GaveUp { error: ExportError, attempts: u32 },
}

fn tries(attempts: &u32) -> &'static str {
    if *attempts == 1 {
        "try"
    } else {
        "tries"
    }
}

/// Sends `batch`, retrying; the error says why it was not delivered.
pub async fn deliver(
    destination: &Destination,
    batch: &Profiles,
    limits: RetryLimits,
) -> Result<(), NotDelivered> {
    let started = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut attempts: u32 = 0;
    loop {
        attempts = attempts.saturating_add(1);
        let error = match destination.export(batch).await {
            Ok(()) => return Ok(()),
            Err(error) if !error.is_retryable() => return Err(NotDelivered::Refused(error)),
            Err(error) => error,
        };
        let wait = match &error {
            ExportError::Retryable {
                retry_after: Some(after),
                ..
            } => *after,
            _ => backoff,
        };
        let out_of_time = started.elapsed().saturating_add(wait) > limits.max_elapsed;
        if attempts > limits.retries || out_of_time {
            return Err(NotDelivered::GaveUp { error, attempts });
        }
        tracing::debug!(%error, ?wait, "retrying");
        tokio::time::sleep(wait).await;
        backoff = backoff.saturating_mul(2).min(MAX_BACKOFF);
    }
}
