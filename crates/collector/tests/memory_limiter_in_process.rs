#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! A `memory_limiter` in a pipeline closes the pipeline's intake while
//! it refuses: receivers refuse before decoding (counted as `unavailable`)
//! and a submitted batch is refused, until memory is below the soft
//! limit again. Memory here is a number the test sets; the real process
//! is measured in crates/profbridge/tests/memory_limiter_binary.rs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use profbridge_collector::pipeline::{Hooks, Pipeline, Profiles, Refused};
use profbridge_collector::processors::memory_limiter::{
    Limits, MemoryLimiter, MemoryLimiterConfig, MemoryLimiterProcessor,
};
use profbridge_collector::receivers::intake::admit;
use profbridge_collector::telemetry::{Counter, ReceiverMetrics, Registry};

const MIB: u64 = 1024 * 1024;
const REFUSED: &str = "profbridge_receiver_refused_requests_total{receiver=\"otlp\",transport=\"http\",reason=\"unavailable\"}";

fn batch(seed: u64) -> Arc<Profiles> {
    Arc::new(Profiles::new(
        profbridge_testkit::ebpf_like_request(3, seed),
        100,
    ))
}

fn refused(registry: &Registry) -> String {
    registry
        .render()
        .lines()
        .find_map(|line| line.strip_prefix(REFUSED))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[tokio::test]
async fn a_refusing_limiter_closes_its_pipelines_intake_until_memory_falls() {
    let used = Arc::new(AtomicU64::new(50 * MIB));
    let measured = Arc::clone(&used);
    let config = MemoryLimiterConfig {
        check_interval: profbridge_collector::config::units::Duration::from_secs(1),
        limit_mib: 100,
        ..MemoryLimiterConfig::default()
    };
    let limiter = MemoryLimiter::new(
        "memory_limiter",
        &config,
        Limits::new(100 * MIB, 20 * MIB),
        Box::new(move || measured.load(Ordering::SeqCst)),
    );
    let processor = MemoryLimiterProcessor::new(limiter);
    let limiter = Arc::clone(processor.limiter());
    let mut checker = MemoryLimiter::checker(Counter::default());
    let check = |checker: &mut _| {
        limiter.check(checker, &Hooks::default(), tokio::time::Instant::now());
    };
    let pipeline = Pipeline::start(
        "profiles",
        vec![Box::new(processor)],
        Vec::new(),
        1 << 30,
        8,
    );
    let pipelines = [pipeline.handle()];
    let registry = Registry::new();
    let metrics = ReceiverMetrics::new(&registry, "otlp", "http");

    check(&mut checker);
    assert!(admit(&pipelines, 1000, &metrics).is_some());
    assert_eq!(pipelines[0].try_submit(batch(1)), Ok(()));
    assert_eq!(refused(&registry), "0");

    used.store(80 * MIB, Ordering::SeqCst);
    check(&mut checker);
    assert!(
        admit(&pipelines, 1000, &metrics).is_none(),
        "refused at the soft limit"
    );
    assert_eq!(pipelines[0].try_submit(batch(2)), Err(Refused::Limited));
    assert!(pipelines[0].refusal().unwrap().contains("memory_limiter"));
    assert_eq!(refused(&registry), "1", "{}", registry.render());

    used.store(79 * MIB, Ordering::SeqCst);
    check(&mut checker);
    assert!(admit(&pipelines, 1000, &metrics).is_some());
    assert_eq!(pipelines[0].try_submit(batch(3)), Ok(()));
    drop(pipelines);
    assert!(pipeline.shutdown(Duration::from_secs(30)).await);
}
