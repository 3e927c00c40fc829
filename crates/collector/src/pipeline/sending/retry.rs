//! Exporting one request: attempts limited by the timeout, retryable
//! failures retried with backoff until `max_elapsed_time`, and a stop
//! signal that ends the waiting at shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::backoff::Backoff;
use super::config::RetryConfig;
use crate::pipeline::{ExportCause, ExportError};
use crate::pipeline::{Exporter, Profiles, Sent};

/// How exporting a request ended.
#[derive(Debug)]
pub enum Delivery {
    Sent(Sent),
    /// A permanent failure, or a retryable one retried until the policy
    /// gave up (or with retries off).
    Failed {
        error: ExportError,
        attempts: u32,
    },
    /// Shutdown stopped it before it ended.
    Stopped,
}

/// The retry policy and attempt timeout of one exporter.
#[derive(Debug, Clone)]
pub struct Policy {
    pub retry: RetryConfig,
    /// `None`: attempts are not limited.
    pub timeout: Option<Duration>,
}

pub async fn deliver(
    exporter: &Arc<Exporter>,
    batch: &Arc<Profiles>,
    policy: &Policy,
    stop: &mut watch::Receiver<bool>,
) -> Delivery {
    let started = Instant::now();
    let mut backoff = Backoff::new(&policy.retry);
    let mut attempts = 0_u32;
    loop {
        attempts = attempts.saturating_add(1);
        let result = tokio::select! {
            result = attempt(exporter, batch, policy.timeout) => result,
            () = stopped(stop) => return Delivery::Stopped,
        };
        let error = match result {
            Ok(sent) => return Delivery::Sent(sent),
            Err(error) => error,
        };
        let retry_after = match &error {
            ExportError::Retryable { retry_after, .. } if policy.retry.enabled => *retry_after,
            _ => return Delivery::Failed { error, attempts },
        };
        let Some(wait) = backoff.after_failure(retry_after, started.elapsed()) else {
            return Delivery::Failed { error, attempts };
        };
        tracing::info!(
            exporter = exporter.name(),
            attempt = attempts,
            retry_in = ?wait,
            %error,
            "export failed; will retry"
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stopped(stop) => return Delivery::Stopped,
        }
    }
}

async fn attempt(
    exporter: &Arc<Exporter>,
    batch: &Arc<Profiles>,
    timeout: Option<Duration>,
) -> Result<Sent, ExportError> {
    let Some(limit) = timeout else {
        return exporter.export(batch).await;
    };
    tokio::time::timeout(limit, exporter.export(batch))
        .await
        .unwrap_or_else(|_| Err(ExportError::retryable(ExportCause::TimedOut { limit })))
}

/// Resolves once `stop` says true; never when its sender is gone.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopping| *stopping).await.is_err() {
        std::future::pending::<()>().await;
    }
}
