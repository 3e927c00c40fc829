//! The remote source's own task: starts a job for each target and
//! profile, and with file_sd_configs, starts and stops jobs as the target
//! files change (a job that stops takes its delta state with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::config::{ProfileSpec, RemoteConfig};
use super::file_sd::FileSd;
use super::metrics::{JobMetrics, ScraperTotals};
use super::schedule::{spawn_job, AbortOnDrop, Timing};
use super::scrape::Shared;
use super::target::{all_jobs, Job, JobKey};
use crate::telemetry::metrics::labels;
use crate::telemetry::{Counter, Registry};

/// How often target files are looked at for changes.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

struct Running {
    job: Arc<Job>,
    metrics: JobMetrics,
    _task: AbortOnDrop,
}

pub struct Runner {
    pub receiver: String,
    pub config: RemoteConfig,
    pub specs: Vec<ProfileSpec>,
    pub shared: Arc<Shared>,
    pub registry: Arc<Registry>,
    pub stopped: watch::Receiver<bool>,
}

impl Runner {
    pub async fn run(self) {
        let mut state = State {
            totals: ScraperTotals::new(&self.registry, &self.receiver),
            file_sd: Arc::new(Mutex::new(FileSd::new(&self.config.file_sd_configs))),
            sd_errors: self.registry.counter(
                "profbridge_scraper_file_sd_errors_total",
                "Times a file_sd target file could not be read or parsed; its previous targets were kept.",
                labels(&[("receiver", &self.receiver)]),
            ),
            jobs: HashMap::new(),
            timing: Timing {
                interval: self.config.collection_interval.0,
                timeout: self.config.timeout.0,
                initial_delay: self.config.initial_delay.0,
            },
        };
        state.look_at_files(&self).await;
        state.apply(&self);
        let mut stopped = self.stopped.clone();
        let watching = !self.config.file_sd_configs.is_empty();
        loop {
            tokio::select! {
                () = tokio::time::sleep(WATCH_INTERVAL), if watching => {
                    if state.look_at_files(&self).await {
                        state.apply(&self);
                    }
                }
                changed = stopped.changed() => if changed.is_err() || *stopped.borrow() {
                    return;
                },
            }
        }
    }
}

struct State {
    totals: ScraperTotals,
    /// Read on the blocking pool.
    file_sd: Arc<Mutex<FileSd>>,
    sd_errors: Counter,
    jobs: HashMap<JobKey, Running>,
    timing: Timing,
}

impl State {
    /// Whether the target files' groups changed.
    async fn look_at_files(&mut self, runner: &Runner) -> bool {
        let file_sd = Arc::clone(&self.file_sd);
        let polled =
            tokio::task::spawn_blocking(move || locked(&file_sd).poll(std::time::Instant::now()))
                .await;
        let Ok((changed, problems)) = polled else {
            return false;
        };
        for problem in problems {
            self.sd_errors.add(1);
            runner.shared.metrics.note_error(&problem.to_string());
            tracing::warn!(receiver = %runner.receiver, %problem, "cannot read a file_sd target file; its previous targets are kept");
        }
        changed
    }

    /// Stops the jobs no longer wanted and starts the new ones.
    fn apply(&mut self, runner: &Runner) {
        let (jobs, problems) = all_jobs(
            &runner.config,
            &runner.specs,
            &locked(&self.file_sd).groups(),
        );
        for problem in problems {
            tracing::warn!(receiver = %runner.receiver, %problem, "a target cannot be scraped");
        }
        let wanted: HashMap<JobKey, Arc<Job>> =
            jobs.into_iter().map(|job| (job.key(), job)).collect();
        self.jobs.retain(|key, running| {
            let keep = wanted.get(key).is_some_and(|job| *job == running.job);
            if !keep {
                running.metrics.remove();
                tracing::info!(receiver = %runner.receiver, target = %key.0, profile = %key.1, "stopped scraping");
            }
            keep
        });
        for (key, job) in wanted {
            if self.jobs.contains_key(&key) {
                continue;
            }
            let metrics = JobMetrics::new(
                &runner.registry,
                &runner.receiver,
                &job.instance,
                &job.spec.name,
                self.totals.clone(),
            );
            tracing::info!(receiver = %runner.receiver, target = %job.instance, profile = %job.spec.name, url = %job.url, "scraping");
            let task = spawn_job(
                Arc::clone(&job),
                Arc::clone(&runner.shared),
                metrics.clone(),
                self.timing,
            );
            self.jobs.insert(
                key,
                Running {
                    job,
                    metrics,
                    _task: task,
                },
            );
        }
    }
}

fn locked(file_sd: &Mutex<FileSd>) -> MutexGuard<'_, FileSd> {
    file_sd.lock().unwrap_or_else(PoisonError::into_inner)
}
