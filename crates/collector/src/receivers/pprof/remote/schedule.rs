//! One task per job, scraping it every interval; a turn that finds the
//! previous scrape still running is skipped and counted, never queued, so
//! a slow target delays nothing but itself.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::metrics::JobMetrics;
use super::scrape::{scrape, JobState, Shared};
use super::target::Job;

/// A CPU profile's timeout beyond its seconds, when `timeout` is `0s`.
const CPU_GRACE: Duration = Duration::from_secs(5);
/// The longest a job's first scrape is put off to spread start times.
const MAX_SPREAD: Duration = Duration::from_secs(5);

/// A task aborted when dropped: a job that is gone, and its scrape.
pub struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How a job is timed.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub interval: Duration,
    /// `timeout` as written: `0s` for the default.
    pub timeout: Duration,
    pub initial_delay: Duration,
}

impl Timing {
    /// `timeout`, else a CPU profile's seconds plus a grace, else the
    /// interval.
    fn timeout(&self, job: &Job) -> Duration {
        if !self.timeout.is_zero() {
            return self.timeout;
        }
        match job.spec.seconds {
            Some(seconds) => seconds.saturating_add(CPU_GRACE),
            None => self.interval,
        }
    }

    /// The initial delay, plus a share of a tenth of the interval told by
    /// the job's key, so that targets are not all scraped at once.
    fn first_delay(&self, job: &Job) -> Duration {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        job.key().hash(&mut hasher);
        let window = (self.interval / 10).min(MAX_SPREAD);
        let share = u32::try_from(hasher.finish() % 1024).unwrap_or(0);
        self.initial_delay + window * share / 1024
    }
}

/// Starts scraping `job` until the returned task is dropped.
pub fn spawn_job(
    job: Arc<Job>,
    shared: Arc<Shared>,
    metrics: JobMetrics,
    timing: Timing,
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(run_job(job, shared, metrics, timing)))
}

async fn run_job(job: Arc<Job>, shared: Arc<Shared>, metrics: JobMetrics, timing: Timing) {
    tokio::time::sleep(timing.first_delay(&job)).await;
    let timeout = timing.timeout(&job);
    let state = Arc::new(Mutex::new(JobState::default()));
    let mut turns = tokio::time::interval(timing.interval);
    turns.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut running: Option<AbortOnDrop> = None;
    loop {
        let turn = turns.tick().await;
        if running.as_ref().is_some_and(|task| !task.0.is_finished()) {
            metrics.skipped();
            tracing::debug!(target = %job.instance, profile = %job.spec.name, "the previous scrape is still running; this turn is skipped");
            continue;
        }
        running = Some(AbortOnDrop(tokio::spawn(scrape(
            Arc::clone(&job),
            Arc::clone(&shared),
            Arc::clone(&state),
            metrics.clone(),
            timeout,
            turn + timing.interval,
        ))));
    }
}
