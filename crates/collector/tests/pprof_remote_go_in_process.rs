#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The pprof receiver's `remote` source scraping a real Go program's
//! `net/http/pprof`, in the Collector's shape (`endpoint`, one profile's
//! URL): its CPU profiles, asked for `?seconds=1`, hold the function it
//! burns CPU in, under the resource attributes of the target; its allocs
//! profile arrives as deltas that add up exactly to what it allocated
//! after the first scrape (the baseline), across a restart too, and its
//! mutex and block profiles as deltas that count every contention once.
//! What was allocated or contended is what `go tool pprof -diff_base`
//! reads from the test's own scrapes of the target; what the deltas hold
//! is what `go tool pprof -raw` reads from the files written.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::service;
use profbridge_collector::telemetry::Registry;
use profbridge_pprof::{decode, DecodeOptions, Profile};
use profbridge_testkit::pprof_oracle::OracleProfile;
use profbridge_testkit::pprof_target::{PprofTarget, ALLOCATE, BLOCK, BURN, CONTEND, LOCK_WAITER};
use profbridge_testkit::{files_under, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;

fn written(dir: &Path) -> Vec<ExportProfilesServiceRequest> {
    files_under(dir, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect()
}

fn holds_string(request: &ExportProfilesServiceRequest, text: &str) -> bool {
    request
        .dictionary
        .as_ref()
        .is_some_and(|dictionary| dictionary.string_table.iter().any(|s| s == text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_profiles_of_a_go_program_hold_its_busy_function() {
    let Some(target) = PprofTarget::start(SocketAddr::from(([127, 0, 0, 1], 0))) else {
        return;
    };
    let target = Arc::new(target);
    let dir = TempDir::new("pprof-remote-go");
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      endpoint: {}\n      collection_interval: 2s\n      initial_delay: 0s\n\
         exporters:\n  file:\n    path: {}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        target.url("/debug/pprof/profile"),
        dir.path().display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let busy = Arc::new(AtomicBool::new(true));
    let burner = {
        let (target, busy) = (Arc::clone(&target), Arc::clone(&busy));
        tokio::task::spawn_blocking(move || {
            while busy.load(Ordering::Relaxed) {
                target.burn(Duration::from_millis(200));
            }
        })
    };
    let mut found = None;
    for _ in 0..600 {
        found = written(dir.path())
            .into_iter()
            .find(|request| holds_string(request, BURN));
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    busy.store(false, Ordering::Relaxed);
    burner.await.unwrap();
    let request = found.unwrap_or_else(|| panic!("no CPU profile holds {BURN}"));
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    let attribute = |key: &str| {
        resource
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    let address = target.address().to_string();
    let text = |value: String| {
        Some(profbridge_translate::otlp::any_value::Value::StringValue(
            value,
        ))
    };
    assert_eq!(attribute("service.name"), text(address.clone()));
    assert_eq!(attribute("service.instance.id"), text(address));
    assert_eq!(attribute("profbridge.profile.name"), text("cpu".to_owned()));
    assert!(running.shutdown(Duration::from_secs(10)).await);
}

/// The pprof files under `dir`, decoded.
fn pprofs(dir: &Path) -> Vec<Profile> {
    pprof_files(dir)
        .iter()
        .map(|path| decode(&std::fs::read(path).unwrap(), &DecodeOptions::default()).unwrap())
        .collect()
}

/// The `sample_type` values of the samples whose stack holds `function`,
/// summed over `profiles`; and whether any value of any sample is negative.
fn sum_in(profiles: &[Profile], sample_type: &str, function: &str) -> (i64, bool) {
    let mut sum = 0;
    let mut negative = false;
    for profile in profiles {
        let text = |index: i64| profile.string_table[usize::try_from(index).unwrap()].as_str();
        let Some(column) = profile
            .sample_type
            .iter()
            .position(|t| text(t.r#type) == sample_type)
        else {
            continue;
        };
        let named: Vec<u64> = profile
            .function
            .iter()
            .filter(|f| text(f.name) == function)
            .map(|f| f.id)
            .collect();
        for sample in &profile.sample {
            negative |= sample.value.iter().any(|v| *v < 0);
            let holds = sample.location_id.iter().any(|id| {
                profile.location.iter().any(|location| {
                    location.id == *id
                        && location
                            .line
                            .iter()
                            .any(|line| named.contains(&line.function_id))
                })
            });
            if holds {
                sum += sample.value[column];
            }
        }
    }
    (sum, negative)
}

fn series(registry: &Registry, name: &str) -> f64 {
    registry.series(name).iter().map(|(_, value)| value).sum()
}

/// Polls every 100 ms, at most 60 s, until `done`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {what}");
}

/// The delta files written under `dir`, as `go tool pprof -raw` reads
/// them: the sum of `function`'s values of each of `sample_types`, and
/// whether any value of any sample is negative.
fn written_by_go_tool(dir: &Path, sample_types: &[&str], function: &str) -> (Vec<i64>, bool) {
    let mut sums = vec![0; sample_types.len()];
    let mut negative = false;
    for file in pprof_files(dir) {
        let profile = OracleProfile::read(&file);
        negative |= profile
            .samples
            .iter()
            .any(|sample| sample.values.iter().any(|value| *value < 0));
        for (sum, sample_type) in sums.iter_mut().zip(sample_types) {
            *sum += profile.value(sample_type, function);
        }
    }
    (sums, negative)
}

fn pprof_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir, ".pb.gz")
}

/// The test's own scrape of `path`, kept in `dir` as `name`: what the
/// oracle compares.
fn raw_scrape(target: &PprofTarget, path: &str, dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, target.scrape(path)).unwrap();
    file
}

/// What `function` gained in each of `sample_types` from `base` to
/// `current`, as `go tool pprof -diff_base` says.
fn gained(base: &Path, current: &Path, sample_types: &[&str], function: &str) -> Vec<i64> {
    let diff = OracleProfile::diff(base, current);
    sample_types
        .iter()
        .map(|sample_type| diff.value(sample_type, function))
        .collect()
}

/// The oracle is the target itself: the test's own scrapes right after the
/// collector's baseline and after the work, read by `go tool pprof
/// -diff_base`, say what was allocated in each process; the deltas the
/// collector wrote, read by `go tool pprof -raw`, must add up to exactly
/// that, in objects and bytes, across a kill and restart on the same port,
/// with no negative value anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocs_deltas_add_up_to_what_the_program_allocated_across_a_restart() {
    let Some(mut target) = PprofTarget::start(SocketAddr::from(([127, 0, 0, 1], 0))) else {
        return;
    };
    let dir = TempDir::new("pprof-remote-go-delta");
    let raw = TempDir::new("pprof-remote-go-delta-raw");
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      targets:\n        - targets: [{}]\n          labels: {{service_name: go-target}}\n      profiles: [allocs]\n      collection_interval: 500ms\n      initial_delay: 0s\n\
         exporters:\n  file:\n    path: {}\n    format: pprof\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        target.address(),
        dir.path().display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let registry = Arc::clone(&running.metrics);
    let types = ["alloc_objects", "alloc_space"];
    until("the baseline is taken", || {
        series(&registry, "profbridge_scraper_up") == 1.0
    })
    .await;
    let first = tokio::task::block_in_place(|| {
        let before = raw_scrape(&target, "/debug/pprof/allocs", raw.path(), "1-before.pb.gz");
        target.alloc(1000, 64);
        let after = raw_scrape(&target, "/debug/pprof/allocs", raw.path(), "1-after.pb.gz");
        gained(&before, &after, &types, ALLOCATE)
    });
    assert!(first[0] > 0, "the oracle saw no allocation: {first:?}");
    until("the deltas hold the first process's allocations", || {
        sum_in(&pprofs(dir.path()), "alloc_objects", ALLOCATE).0 >= first[0]
    })
    .await;

    let resets = series(&registry, "profbridge_scraper_delta_resets_total");
    tokio::task::block_in_place(|| target.restart_on_same_port());
    until("the restart starts a new baseline", || {
        series(&registry, "profbridge_scraper_delta_resets_total") > resets
    })
    .await;
    let second = tokio::task::block_in_place(|| {
        let before = raw_scrape(&target, "/debug/pprof/allocs", raw.path(), "2-before.pb.gz");
        target.alloc(500, 64);
        let after = raw_scrape(&target, "/debug/pprof/allocs", raw.path(), "2-after.pb.gz");
        gained(&before, &after, &types, ALLOCATE)
    });
    let expected: Vec<i64> = first.iter().zip(&second).map(|(a, b)| a + b).collect();
    until("the deltas hold the second process's allocations", || {
        sum_in(&pprofs(dir.path()), "alloc_objects", ALLOCATE).0 >= expected[0]
    })
    .await;
    // One more turn: nothing is counted twice.
    let scrapes = series(&registry, "profbridge_scraper_scrapes_total");
    until("two more scrapes", || {
        series(&registry, "profbridge_scraper_scrapes_total") >= scrapes + 2.0
    })
    .await;
    running.shutdown(Duration::from_secs(10)).await;
    let (written, negative) =
        tokio::task::block_in_place(|| written_by_go_tool(dir.path(), &types, ALLOCATE));
    assert_eq!(
        written, expected,
        "{ALLOCATE}'s {types:?} in the deltas written, against what the target's own scrapes gained"
    );
    assert!(!negative, "no delta holds a negative value");
}

/// As for allocations: the contentions and delays that the target's own
/// scrapes gained, by `go tool pprof -diff_base`, are exactly what the
/// mutex and block deltas written add up to, by `go tool pprof -raw`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_and_block_deltas_count_every_contention_once() {
    let Some(target) = PprofTarget::start(SocketAddr::from(([127, 0, 0, 1], 0))) else {
        return;
    };
    let dir = TempDir::new("pprof-remote-go-contention");
    let raw = TempDir::new("pprof-remote-go-contention-raw");
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      targets:\n        - targets: [{}]\n      profiles: [mutex, block]\n      collection_interval: 500ms\n      initial_delay: 0s\n\
         exporters:\n  file:\n    path: {}\n    format: pprof\n    path_template: \"{{profbridge.profile.name}}/{{seq}}.pb.gz\"\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        target.address(),
        dir.path().display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let registry = Arc::clone(&running.metrics);
    until("both baselines are taken", || {
        series(&registry, "profbridge_scraper_up") == 2.0
    })
    .await;
    let types = ["contentions", "delay"];
    let (mutex_gained, block_gained, waiter_gained) = tokio::task::block_in_place(|| {
        let mutex_before = raw_scrape(
            &target,
            "/debug/pprof/mutex",
            raw.path(),
            "mutex-before.pb.gz",
        );
        let block_before = raw_scrape(
            &target,
            "/debug/pprof/block",
            raw.path(),
            "block-before.pb.gz",
        );
        target.contend(100);
        target.block(40);
        let mutex_after = raw_scrape(
            &target,
            "/debug/pprof/mutex",
            raw.path(),
            "mutex-after.pb.gz",
        );
        let block_after = raw_scrape(
            &target,
            "/debug/pprof/block",
            raw.path(),
            "block-after.pb.gz",
        );
        (
            gained(&mutex_before, &mutex_after, &types, CONTEND),
            gained(&block_before, &block_after, &types, BLOCK),
            gained(&block_before, &block_after, &types, LOCK_WAITER),
        )
    });
    assert!(
        mutex_gained[0] > 0 && block_gained[0] > 0 && waiter_gained[0] > 0,
        "the oracle saw no contention: {mutex_gained:?} {block_gained:?} {waiter_gained:?}"
    );
    let mutex = dir.path().join("mutex");
    let block = dir.path().join("block");
    until("the deltas hold the contentions", || {
        sum_in(&pprofs(&mutex), "contentions", CONTEND).0 >= mutex_gained[0]
            && sum_in(&pprofs(&block), "contentions", BLOCK).0 >= block_gained[0]
            && sum_in(&pprofs(&block), "contentions", LOCK_WAITER).0 >= waiter_gained[0]
    })
    .await;
    let scrapes = series(&registry, "profbridge_scraper_scrapes_total");
    until("two more scrapes of each", || {
        series(&registry, "profbridge_scraper_scrapes_total") >= scrapes + 4.0
    })
    .await;
    running.shutdown(Duration::from_secs(10)).await;
    tokio::task::block_in_place(|| {
        let (mutex_written, negative_mutex) = written_by_go_tool(&mutex, &types, CONTEND);
        let (block_written, negative_block) = written_by_go_tool(&block, &types, BLOCK);
        let (waiter_written, _) = written_by_go_tool(&block, &types, LOCK_WAITER);
        assert_eq!(mutex_written, mutex_gained, "{CONTEND} in the mutex deltas");
        assert_eq!(block_written, block_gained, "{BLOCK} in the block deltas");
        assert_eq!(
            waiter_written, waiter_gained,
            "{LOCK_WAITER} in the block deltas"
        );
        assert!(
            !negative_mutex && !negative_block,
            "no delta holds a negative value"
        );
    });
}
