//! The `symbolize` processor's counters (docs/symbolize.md, "Metrics").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use profbridge_symbolize::{MissReason, Report};

use crate::telemetry::metrics::labels;
use crate::telemetry::{Counter, Registry};

pub struct SymbolizeMetrics {
    locations: Counter,
    frames: Counter,
    misses: Vec<(MissReason, Counter)>,
    left_alone: Counter,
    file_hits: Counter,
    file_misses: Counter,
    address_hits: Counter,
    address_misses: Counter,
    nanoseconds: Arc<AtomicU64>,
    cached_bytes: Arc<AtomicU64>,
}

impl SymbolizeMetrics {
    pub fn new(registry: &Registry, processor: &str) -> Self {
        let with = |pairs: &[(&str, &str)]| {
            let mut all = vec![("processor", processor)];
            all.extend_from_slice(pairs);
            labels(&all)
        };
        let counter = |name: &str, help: &str, pairs: &[(&str, &str)]| {
            registry.counter(name, help, with(pairs))
        };
        let locations = counter(
            "profbridge_symbolize_locations_total",
            "Locations that had no lines and were given some.",
            &[],
        );
        let frames = counter(
            "profbridge_symbolize_frames_total",
            "Lines written to symbolized locations, inlined frames included.",
            &[],
        );
        let misses = MissReason::ALL
            .iter()
            .map(|&reason| {
                let counter = counter(
                    "profbridge_symbolize_misses_total",
                    "Native and kernel locations left without lines, by reason.",
                    &[("reason", reason.as_str())],
                );
                (reason, counter)
            })
            .collect();
        let left_alone = counter(
            "profbridge_symbolize_left_alone_total",
            "Interpreted locations, and kernel locations when there is no kallsyms to read: not looked at.",
            &[],
        );
        let cache = |cache: &str, result: &str| {
            counter(
                "profbridge_symbolize_cache_lookups_total",
                "Lookups in the cache of opened files and of resolved addresses, by result.",
                &[("cache", cache), ("result", result)],
            )
        };
        let nanoseconds = Arc::new(AtomicU64::new(0));
        let spent = Arc::clone(&nanoseconds);
        registry.counter_fn(
            "profbridge_symbolize_seconds_total",
            "Time spent symbolizing requests.",
            with(&[]),
            move || spent.load(Ordering::Relaxed) as f64 / 1e9,
        );
        let cached_bytes = Arc::new(AtomicU64::new(0));
        let cached = Arc::clone(&cached_bytes);
        registry.gauge_fn(
            "profbridge_symbolize_cache_bytes",
            "Bytes the caches hold, as cache_max_bytes counts them.",
            with(&[]),
            move || cached.load(Ordering::Relaxed) as f64,
        );
        Self {
            locations,
            frames,
            misses,
            left_alone,
            file_hits: cache("files", "hit"),
            file_misses: cache("files", "miss"),
            address_hits: cache("addresses", "hit"),
            address_misses: cache("addresses", "miss"),
            nanoseconds,
            cached_bytes,
        }
    }

    pub fn record(&self, report: &Report, spent: Duration, cached_bytes: u64) {
        self.locations.add(report.locations_symbolized);
        self.frames.add(report.frames_symbolized);
        for (reason, counter) in &self.misses {
            counter.add(report.misses.get(reason).copied().unwrap_or(0));
        }
        self.left_alone.add(report.left_alone);
        self.file_hits.add(report.cache.file_hits);
        self.file_misses.add(report.cache.file_misses);
        self.address_hits.add(report.cache.address_hits);
        self.address_misses.add(report.cache.address_misses);
        let nanoseconds = u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX);
        self.nanoseconds.fetch_add(nanoseconds, Ordering::Relaxed);
        self.cached_bytes.store(cached_bytes, Ordering::Relaxed);
    }
}
