//! `memory_limiter`: measures the process's resident memory every
//! `check_interval`; above the soft limit (`limit - spike`) the pipelines
//! it is in refuse new data with retryable errors until memory falls back
//! below it; above the hard limit it also has the allocator give back the
//! memory it keeps for reuse (the binary's [`Hooks::release_memory`]).
//!
//! Processors run after a pipeline's queue, so the limiter refuses at the
//! intake: it hands the pipeline a [`Gate`] that every receiver asks
//! before it takes a request (see docs/architecture.md). As a processor it
//! passes batches through unchanged.
//!
//! Resident memory (`/proc/self/statm`) is what is measured: it is what the
//! kernel charges to the cgroup and what the OOM killer acts on, and it
//! includes what the allocator keeps after the collector freed it, which
//! releasing gives back.

mod config;
mod factory;
mod total_memory;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use crate::component::StartError;
use crate::pipeline::{Gate, GateContext, Hooks, Processed, Processor, Profiles};
use crate::telemetry::metrics::labels;
use crate::telemetry::{process, Counter};

pub use config::{Limits, MemoryLimiterConfig, DEFAULT_MIN_RELEASE_INTERVAL_SOFT};
pub use factory::MemoryLimiterFactory;
pub use total_memory::{total_memory, TotalMemory, TotalMemoryError};

const MIB: u64 = 1024 * 1024;

/// What the limiter measures: resident bytes of the process.
pub type Measure = Box<dyn Fn() -> u64 + Send + Sync>;

/// The state shared by the processor, the pipeline's gate and the task
/// that checks memory.
pub struct MemoryLimiter {
    id: String,
    limits: Limits,
    check_interval: Duration,
    min_release_soft: Duration,
    min_release_hard: Duration,
    measure: Measure,
    refusing: AtomicBool,
    /// The last measurement, in bytes.
    in_use: AtomicU64,
}

/// What the checking task keeps between checks.
pub struct Checker {
    last_release: Option<Instant>,
    releases: Counter,
}

impl MemoryLimiter {
    pub fn new(id: &str, config: &MemoryLimiterConfig, limits: Limits, measure: Measure) -> Self {
        Self {
            id: id.to_owned(),
            limits,
            check_interval: config.check_interval.0,
            min_release_soft: config.min_gc_interval_when_soft_limited.0,
            min_release_hard: config.min_gc_interval_when_hard_limited.0,
            measure,
            refusing: AtomicBool::new(false),
            in_use: AtomicU64::new(0),
        }
    }

    /// A limiter of the process's resident memory, with limits from
    /// `config` (percentages of [`total_memory`]).
    pub fn of_this_process(id: &str, config: &MemoryLimiterConfig) -> Result<Self, StartError> {
        let mut total = None;
        let limits = config
            .limits(|| {
                let found = total_memory(std::path::Path::new("/"))?;
                let bytes = found.bytes;
                total = Some(found);
                Ok::<_, TotalMemoryError>(bytes)
            })
            .map_err(|error| StartError::processor(id, error))?;
        if let Some(total) = total {
            tracing::info!(
                processor = id,
                total_memory_mib = total.bytes / MIB,
                cgroup_limit = ?total.cgroup_limit,
                limit_percentage = config.limit_percentage,
                spike_limit_percentage = config.spike_limit_percentage,
                "memory limits in percent of the total memory"
            );
        }
        Ok(Self::new(
            id,
            config,
            limits,
            Box::new(process::resident_bytes),
        ))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn is_refusing(&self) -> bool {
        self.refusing.load(Ordering::Acquire)
    }

    /// A checker that has not released memory yet.
    pub fn checker(releases: Counter) -> Checker {
        Checker {
            last_release: None,
            releases,
        }
    }

    /// One check, as the Collector's: above the hard limit, release and
    /// measure again; entering the soft limit, release (at most every
    /// `min_gc_interval_when_soft_limited`) and measure again; then refuse
    /// while at or above the soft limit.
    pub fn check(&self, checker: &mut Checker, hooks: &Hooks, now: Instant) {
        let mut in_use = (self.measure)();
        let since_release = |checker: &Checker| {
            checker
                .last_release
                .map_or(Duration::MAX, |at| now.saturating_duration_since(at))
        };
        if in_use >= self.limits.hard && since_release(checker) >= self.min_release_hard {
            tracing::warn!(
                processor = %self.id,
                in_use_mib = in_use / MIB,
                limit_mib = self.limits.hard / MIB,
                "memory in use is above the hard limit; releasing what the allocator keeps"
            );
            in_use = self.release(checker, hooks, now);
        }
        let was_refusing = self.is_refusing();
        let mut must_refuse = in_use >= self.limits.soft();
        if !was_refusing && must_refuse && since_release(checker) > self.min_release_soft {
            in_use = self.release(checker, hooks, now);
            must_refuse = in_use >= self.limits.soft();
        }
        match (was_refusing, must_refuse) {
            (false, true) => tracing::warn!(
                processor = %self.id,
                in_use_mib = in_use / MIB,
                soft_limit_mib = self.limits.soft() / MIB,
                "memory in use is above the soft limit; refusing new data"
            ),
            (true, false) => tracing::info!(
                processor = %self.id,
                in_use_mib = in_use / MIB,
                "memory in use is back below the soft limit; taking data again"
            ),
            _ => {}
        }
        self.in_use.store(in_use, Ordering::Relaxed);
        self.refusing.store(must_refuse, Ordering::Release);
    }

    /// Releases through the hook, when there is one, and measures again.
    fn release(&self, checker: &mut Checker, hooks: &Hooks, now: Instant) -> u64 {
        if hooks.release_memory() {
            checker.last_release = Some(now);
            checker.releases.add(1);
        }
        let in_use = (self.measure)();
        tracing::info!(processor = %self.id, in_use_mib = in_use / MIB, "memory in use after releasing");
        in_use
    }
}

impl Gate for MemoryLimiter {
    fn refusal(&self) -> Option<String> {
        self.is_refusing().then(|| {
            format!(
                "{}: memory in use ({} MiB) is above the soft limit ({} MiB)",
                self.id,
                self.in_use.load(Ordering::Relaxed) / MIB,
                self.limits.soft() / MIB
            )
        })
    }

    fn start(self: Arc<Self>, context: GateContext<'_>) {
        let series = labels(&[("processor", &self.id), ("pipeline", context.pipeline)]);
        let metrics = context.metrics;
        let weak = Arc::downgrade(&self);
        let read = |read: fn(&Self) -> f64| {
            let weak = Weak::clone(&weak);
            move || weak.upgrade().map_or(0.0, |limiter| read(&limiter))
        };
        metrics.gauge_fn(
            "profbridge_memory_limiter_memory_in_use_bytes",
            "Resident memory at the memory_limiter's last check.",
            series.clone(),
            read(|limiter| limiter.in_use.load(Ordering::Relaxed) as f64),
        );
        metrics.gauge_fn(
            "profbridge_memory_limiter_soft_limit_bytes",
            "The memory_limiter's soft limit: above it, new data is refused.",
            series.clone(),
            read(|limiter| limiter.limits.soft() as f64),
        );
        metrics.gauge_fn(
            "profbridge_memory_limiter_limit_bytes",
            "The memory_limiter's hard limit: above it, memory is released.",
            series.clone(),
            read(|limiter| limiter.limits.hard as f64),
        );
        metrics.gauge_fn(
            "profbridge_memory_limiter_refusing",
            "1 while the memory_limiter refuses new data, else 0.",
            series.clone(),
            read(|limiter| f64::from(u8::from(limiter.is_refusing()))),
        );
        let releases = metrics.counter(
            "profbridge_memory_limiter_releases_total",
            "Times the memory_limiter had the allocator give memory back.",
            series,
        );
        let interval = self.check_interval;
        let hooks = context.hooks.clone();
        drop(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let mut checker = Self::checker(releases);
            loop {
                let now = ticks.tick().await;
                let Some(limiter) = weak.upgrade() else {
                    break;
                };
                limiter.check(&mut checker, &hooks, now);
            }
        });
    }
}

/// The processor in a pipeline: passes batches on; its limiter is the
/// pipeline's gate.
pub struct MemoryLimiterProcessor {
    limiter: Arc<MemoryLimiter>,
}

impl MemoryLimiterProcessor {
    pub fn new(limiter: MemoryLimiter) -> Self {
        Self {
            limiter: Arc::new(limiter),
        }
    }

    pub fn limiter(&self) -> &Arc<MemoryLimiter> {
        &self.limiter
    }
}

impl Processor for MemoryLimiterProcessor {
    fn process(&mut self, batch: Profiles) -> Processed {
        Processed::Passed(Arc::new(batch))
    }

    fn gate(&self) -> Option<Arc<dyn Gate>> {
        Some(Arc::clone(&self.limiter) as Arc<dyn Gate>)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A limiter whose memory is `used` (MiB), and hooks whose release
    /// sets it to `after_release` (MiB) and counts its calls.
    struct Fixture {
        used: Arc<AtomicU64>,
        releases: Arc<AtomicUsize>,
        limiter: MemoryLimiter,
        hooks: Hooks,
        checker: Checker,
    }

    fn fixture(limit_mib: u64, spike_mib: u64, after_release: Option<u64>) -> Fixture {
        let used = Arc::new(AtomicU64::new(0));
        let releases = Arc::new(AtomicUsize::new(0));
        let config = MemoryLimiterConfig {
            check_interval: crate::settings::units::Duration::from_secs(1),
            min_gc_interval_when_soft_limited: crate::settings::units::Duration::from_secs(0),
            ..MemoryLimiterConfig::default()
        };
        let measured = Arc::clone(&used);
        let limiter = MemoryLimiter::new(
            "memory_limiter",
            &config,
            Limits::new(limit_mib * MIB, spike_mib * MIB),
            Box::new(move || measured.load(Ordering::SeqCst)),
        );
        let (lowered, counted) = (Arc::clone(&used), Arc::clone(&releases));
        let hooks = Hooks {
            release_memory: Some(Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                if let Some(after) = after_release {
                    lowered.store(after * MIB, Ordering::SeqCst);
                }
            })),
        };
        Fixture {
            used,
            releases,
            limiter,
            hooks,
            checker: MemoryLimiter::checker(Counter::default()),
        }
    }

    impl Fixture {
        fn check_at(&mut self, used_mib: u64) {
            self.used.store(used_mib * MIB, Ordering::SeqCst);
            self.limiter
                .check(&mut self.checker, &self.hooks, Instant::now());
        }
    }

    #[test]
    fn data_is_refused_from_the_soft_limit_until_memory_falls_below_it() {
        let mut f = fixture(100, 20, None);
        f.check_at(79);
        assert!(f.limiter.refusal().is_none());
        f.check_at(80);
        let refusal = f.limiter.refusal().expect("refusing at the soft limit");
        assert!(refusal.contains("soft limit (80 MiB)"), "{refusal}");
        f.check_at(95);
        assert!(f.limiter.is_refusing());
        f.check_at(79);
        assert!(!f.limiter.is_refusing());
    }

    #[test]
    fn above_the_hard_limit_memory_is_released_and_measured_again() {
        let mut f = fixture(100, 20, Some(50));
        f.check_at(120);
        assert_eq!(f.releases.load(Ordering::SeqCst), 1);
        assert!(
            !f.limiter.is_refusing(),
            "the release brought memory below the soft limit"
        );
        let mut f = fixture(100, 20, Some(90));
        f.check_at(120);
        assert!(f.limiter.is_refusing(), "still above the soft limit");
    }

    #[test]
    fn entering_the_soft_limit_releases_at_most_every_min_interval() {
        let mut f = fixture(100, 20, None);
        f.limiter.min_release_soft = Duration::from_secs(3600);
        f.check_at(85);
        assert_eq!(f.releases.load(Ordering::SeqCst), 1, "first time");
        f.check_at(50);
        f.check_at(85);
        assert_eq!(
            f.releases.load(Ordering::SeqCst),
            1,
            "within min_gc_interval_when_soft_limited"
        );
        assert!(f.limiter.is_refusing());
    }

    #[test]
    fn without_a_release_hook_the_limiter_still_refuses() {
        let mut f = fixture(100, 20, None);
        f.hooks = Hooks::default();
        f.check_at(150);
        assert!(f.limiter.is_refusing());
        assert_eq!(f.releases.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_processor_passes_batches_and_gives_the_pipeline_its_limiter() {
        let f = fixture(100, 20, None);
        let mut processor = MemoryLimiterProcessor::new(f.limiter);
        let gate = processor.gate().expect("a gate");
        assert!(gate.refusal().is_none());
        let batch = Profiles::new(profbridge_testkit::ebpf_like_request(3, 1), 100);
        let samples = batch.sample_count();
        match processor.process(batch) {
            Processed::Passed(passed) => assert_eq!(passed.sample_count(), samples),
            Processed::Held(_) => panic!("held"),
        }
    }
}
