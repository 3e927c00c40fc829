//! Each job's metrics (labels `receiver`, `target`, `profile`): whether
//! its last scrape worked (`up`), how long it took, bytes read, errors by
//! reason and skipped turns; and the Collector's scraper counters per
//! receiver.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::telemetry::instruments::LogLimiter;
use crate::telemetry::metrics::{labels, Counter, Labels};
use crate::telemetry::Registry;

/// How often a job may log that its scrapes fail.
const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Why a scrape gave nothing: the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeFailure {
    /// The scrape did not finish within its timeout.
    Timeout,
    /// The target could not be reached, or the connection broke.
    Connect,
    /// The target answered with a status other than 200.
    HttpStatus,
    /// The body, or the profile once gunzipped, exceeds max_profile_size.
    TooLarge,
    /// The body is no profile profbridge reads.
    Decode,
    /// The profile cannot be turned into a delta.
    Delta,
    /// The pipelines had no room: the profile was dropped.
    Refused,
}

impl ScrapeFailure {
    pub const ALL: [Self; 7] = [
        Self::Timeout,
        Self::Connect,
        Self::HttpStatus,
        Self::TooLarge,
        Self::Decode,
        Self::Delta,
        Self::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::HttpStatus => "http_status",
            Self::TooLarge => "too_large",
            Self::Decode => "decode",
            Self::Delta => "delta",
            Self::Refused => "refused",
        }
    }
}

/// The Collector's scraper counters of one receiver, in samples.
#[derive(Debug, Clone, Default)]
pub struct ScraperTotals {
    scraped: Counter,
    errored: Counter,
}

impl ScraperTotals {
    pub fn new(registry: &Registry, receiver: &str) -> Self {
        let label = || labels(&[("receiver", receiver), ("scraper", "pprof")]);
        Self {
            scraped: registry.counter(
                "otelcol_scraper_scraped_profile_records",
                "Profile samples successfully scraped.",
                label(),
            ),
            errored: registry.counter(
                "otelcol_scraper_errored_profile_records",
                "Scrapes that failed (the Collector counts the records lost; a failed pprof scrape has none to count, so each counts one).",
                label(),
            ),
        }
    }
}

/// The metrics of one job.
#[derive(Clone)]
pub struct JobMetrics {
    registry: Arc<Registry>,
    receiver: String,
    target: String,
    profile: String,
    up: Arc<AtomicU64>,
    duration_bits: Arc<AtomicU64>,
    scrapes: Counter,
    bytes: Counter,
    skipped: Counter,
    resets: Counter,
    failures: Vec<(ScrapeFailure, Counter)>,
    totals: ScraperTotals,
    failure_log: Arc<LogLimiter>,
}

impl JobMetrics {
    pub fn new(
        registry: &Arc<Registry>,
        receiver: &str,
        target: &str,
        profile: &str,
        totals: ScraperTotals,
    ) -> Self {
        let job = || {
            labels(&[
                ("receiver", receiver),
                ("target", target),
                ("profile", profile),
            ])
        };
        let with_reason = |reason: ScrapeFailure| {
            let mut labels: Labels = job();
            labels.push(("reason".to_owned(), reason.as_str().to_owned()));
            labels
        };
        let up = Arc::new(AtomicU64::new(0));
        let duration_bits = Arc::new(AtomicU64::new(0f64.to_bits()));
        let read_up = Arc::clone(&up);
        registry.gauge_fn(
            "profbridge_scraper_up",
            "1 when the last scrape of a target's profile worked, else 0.",
            job(),
            move || read_up.load(Ordering::Relaxed) as f64,
        );
        let read_duration = Arc::clone(&duration_bits);
        registry.gauge_fn(
            "profbridge_scraper_scrape_duration_seconds",
            "How long the last scrape of a target's profile took, from sending the request to handing the profile over.",
            job(),
            move || f64::from_bits(read_duration.load(Ordering::Relaxed)),
        );
        Self {
            registry: Arc::clone(registry),
            receiver: receiver.to_owned(),
            target: target.to_owned(),
            profile: profile.to_owned(),
            up,
            duration_bits,
            scrapes: registry.counter(
                "profbridge_scraper_scrapes_total",
                "Scrapes of a target's profile that started.",
                job(),
            ),
            bytes: registry.counter(
                "profbridge_scraper_scraped_bytes_total",
                "Bytes of profiles read from a target, as sent.",
                job(),
            ),
            skipped: registry.counter(
                "profbridge_scraper_skipped_scrapes_total",
                "Turns skipped because the previous scrape of the same target and profile was still running.",
                job(),
            ),
            resets: registry.counter(
                "profbridge_scraper_delta_resets_total",
                "Scrapes of a cumulative profile that started a new baseline (values went down: the target restarted).",
                job(),
            ),
            failures: ScrapeFailure::ALL
                .iter()
                .map(|&reason| {
                    let counter = registry.counter(
                        "profbridge_scraper_errors_total",
                        "Scrapes of a target's profile that gave nothing, by reason.",
                        with_reason(reason),
                    );
                    (reason, counter)
                })
                .collect(),
            totals,
            failure_log: Arc::new(LogLimiter::new(FAILURE_LOG_INTERVAL)),
        }
    }

    /// `Some(failures not logged since the last line)` when a failure may
    /// be logged now: at most one line a minute per job.
    pub fn may_log_failure(&self) -> Option<u64> {
        self.failure_log.allow(Instant::now())
    }

    pub fn started(&self) {
        self.scrapes.add(1);
    }

    pub fn skipped(&self) {
        self.skipped.add(1);
    }

    pub fn read(&self, bytes: usize) {
        self.bytes.add_count(bytes);
    }

    pub fn reset(&self) {
        self.resets.add(1);
    }

    /// A scrape that worked: `samples` handed over.
    pub fn succeeded(&self, took: Duration, samples: usize) {
        self.up.store(1, Ordering::Relaxed);
        self.took(took);
        self.totals.scraped.add_count(samples);
    }

    pub fn failed(&self, took: Duration, reason: ScrapeFailure) {
        self.up.store(0, Ordering::Relaxed);
        self.took(took);
        self.totals.errored.add(1);
        if let Some((_, counter)) = self.failures.iter().find(|(known, _)| *known == reason) {
            counter.add(1);
        }
    }

    fn took(&self, took: Duration) {
        self.duration_bits
            .store(took.as_secs_f64().to_bits(), Ordering::Relaxed);
    }

    /// Removes the job's series: its target is gone.
    pub fn remove(&self) {
        self.registry.remove_labelled(&[
            ("receiver", &self.receiver),
            ("target", &self.target),
            ("profile", &self.profile),
        ]);
    }
}
