//! The Go pprof target does what it says between two scrapes, as
//! `go tool pprof` reads them: exact allocation counts and bytes, exact
//! contention counts, nothing when nothing is asked, empty profiles after
//! a restart on the same port, and CPU samples in the busy function.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use profbridge_testkit::pprof_oracle::{diff, values_by_function, OracleProfile};
use profbridge_testkit::pprof_target::{
    PprofTarget, ALLOCATE, BLOCK, BURN, CONTEND, LOCK_WAITER, RETAIN, RETAINED_BLOCK_BYTES,
};
use profbridge_testkit::TempDir;

fn start() -> Option<PprofTarget> {
    PprofTarget::start(SocketAddr::from(([127, 0, 0, 1], 0)))
}

/// Scrapes saved as files for `go tool pprof`.
struct Scrapes {
    dir: TempDir,
    taken: usize,
}

impl Scrapes {
    fn new(label: &str) -> Self {
        Self {
            dir: TempDir::new(label),
            taken: 0,
        }
    }

    fn take(&mut self, target: &PprofTarget, path: &str) -> PathBuf {
        self.taken += 1;
        let file = self.dir.path().join(format!("scrape-{}.pb.gz", self.taken));
        std::fs::write(&file, target.scrape(path)).unwrap();
        file
    }
}

#[test]
fn allocations_between_two_scrapes_are_counted_exactly() {
    let Some(target) = start() else { return };
    let mut scrapes = Scrapes::new("pprof-target-allocs");
    let first = scrapes.take(&target, "/debug/pprof/allocs");
    let quiet = scrapes.take(&target, "/debug/pprof/allocs");
    target.alloc(1000, 64);
    target.alloc(10, 100);
    target.retain(10);
    let busy = scrapes.take(&target, "/debug/pprof/allocs");
    let later = scrapes.take(&target, "/debug/pprof/heap");

    // Nothing asked, nothing counted.
    for sample_type in ["alloc_objects", "alloc_space", "inuse_objects"] {
        assert_eq!(diff(&first, &quiet, sample_type, ALLOCATE), 0);
        assert_eq!(diff(&first, &quiet, sample_type, RETAIN), 0);
    }
    // Every allocation counted once; bytes rounded up to the size class
    // (100 bytes are allocated as 112).
    assert_eq!(diff(&quiet, &busy, "alloc_objects", ALLOCATE), 1010);
    assert_eq!(
        diff(&quiet, &busy, "alloc_space", ALLOCATE),
        1000 * 64 + 10 * 112
    );
    assert_eq!(diff(&quiet, &busy, "alloc_objects", RETAIN), 10);
    // Dropped objects are freed by the time alloc returns; retained ones
    // stay in use, and stay counted in later scrapes.
    let in_use = values_by_function(&busy, "inuse_objects");
    assert_eq!(in_use.get(ALLOCATE), Some(&0), "{in_use:?}");
    assert_eq!(in_use.get(RETAIN), Some(&10), "{in_use:?}");
    assert_eq!(
        values_by_function(&busy, "inuse_space").get(RETAIN),
        Some(&(10 * RETAINED_BLOCK_BYTES as i64))
    );
    assert_eq!(diff(&busy, &later, "inuse_objects", RETAIN), 0);
    assert_eq!(diff(&busy, &later, "alloc_objects", ALLOCATE), 0);

    // The oracle's two ways agree for every function and sample type:
    // -diff_base, and subtracting what -raw says of each scrape.
    let (base, current) = (OracleProfile::read(&quiet), OracleProfile::read(&busy));
    let diffed = OracleProfile::diff(&quiet, &busy);
    assert_eq!(diffed.sample_types, current.sample_types);
    for sample_type in &current.sample_types {
        let name = sample_type.split('/').next().unwrap();
        let before = base.values_by_function(name);
        let after = current.values_by_function(name);
        let by_diff = diffed.values_by_function(name);
        let functions: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        assert!(functions.len() > 100, "{functions:?}");
        for function in functions {
            let subtracted = after.get(function).unwrap_or(&0) - before.get(function).unwrap_or(&0);
            assert_eq!(
                by_diff.get(function).copied().unwrap_or(0),
                subtracted,
                "{name} of {function}"
            );
        }
    }
}

#[test]
fn mutex_and_block_profiles_count_every_contention() {
    let Some(target) = start() else { return };
    let mut scrapes = Scrapes::new("pprof-target-contention");
    let mutex_before = scrapes.take(&target, "/debug/pprof/mutex");
    let block_before = scrapes.take(&target, "/debug/pprof/block");
    target.contend(50);
    target.block(40);
    let mutex_after = scrapes.take(&target, "/debug/pprof/mutex");
    let block_after = scrapes.take(&target, "/debug/pprof/block");
    let mutex_quiet = scrapes.take(&target, "/debug/pprof/mutex");

    assert_eq!(
        diff(&mutex_before, &mutex_after, "contentions", CONTEND),
        50
    );
    assert!(diff(&mutex_before, &mutex_after, "delay", CONTEND) > 0);
    assert_eq!(diff(&block_before, &block_after, "contentions", BLOCK), 40);
    assert_eq!(
        diff(&block_before, &block_after, "contentions", LOCK_WAITER),
        50
    );
    assert!(diff(&block_before, &block_after, "delay", BLOCK) > 0);
    assert_eq!(diff(&mutex_after, &mutex_quiet, "contentions", CONTEND), 0);
    assert_eq!(diff(&mutex_after, &mutex_quiet, "delay", CONTEND), 0);

    // Within one process, no function's count or delay goes down.
    for (before, after) in [(&mutex_before, &mutex_after), (&block_before, &block_after)] {
        let diffed = OracleProfile::diff(before, after);
        for sample_type in ["contentions", "delay"] {
            let values = diffed.values_by_function(sample_type);
            assert!(values.contains_key(CONTEND) || values.contains_key(BLOCK));
            for (function, value) in values {
                assert!(value >= 0, "{sample_type} of {function}: {value}");
            }
        }
    }
}

#[test]
fn a_restart_on_the_same_port_starts_the_counts_again() {
    let Some(mut target) = start() else { return };
    let mut scrapes = Scrapes::new("pprof-target-restart");
    let address = target.address();
    let pid = target.pid();
    target.alloc(100, 64);
    target.contend(3);
    let allocs_before = scrapes.take(&target, "/debug/pprof/allocs");
    let mutex_before = scrapes.take(&target, "/debug/pprof/mutex");

    target.kill();
    assert_eq!(target.pid(), None);
    let refused = target.get("/debug/pprof/allocs").unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);

    target.restart_on_same_port();
    assert_eq!(target.address(), address);
    assert_ne!(target.pid(), pid);
    let allocs_after = scrapes.take(&target, "/debug/pprof/allocs");
    let mutex_after = scrapes.take(&target, "/debug/pprof/mutex");
    assert_eq!(
        values_by_function(&allocs_after, "alloc_objects").get(ALLOCATE),
        None
    );
    assert_eq!(
        diff(&allocs_before, &allocs_after, "alloc_objects", ALLOCATE),
        -100
    );
    assert_eq!(
        diff(&mutex_before, &mutex_after, "contentions", CONTEND),
        -3
    );

    target.alloc(7, 64);
    let allocs_again = scrapes.take(&target, "/debug/pprof/allocs");
    assert_eq!(
        diff(&allocs_after, &allocs_again, "alloc_objects", ALLOCATE),
        7
    );
}

#[test]
fn the_cpu_profile_holds_the_busy_function() {
    let Some(target) = start() else { return };
    let mut scrapes = Scrapes::new("pprof-target-cpu");
    let quiet = scrapes.take(&target, "/debug/pprof/profile?seconds=1");
    let busy = std::thread::scope(|scope| {
        let profile = scope.spawn(|| target.scrape("/debug/pprof/profile?seconds=1"));
        // The profile starts as soon as the request arrives; the burn
        // stays well inside its second.
        std::thread::sleep(Duration::from_millis(100));
        target.burn(Duration::from_millis(700));
        profile.join().unwrap()
    });
    let busy_file = scrapes.dir.path().join("busy.pb.gz");
    std::fs::write(&busy_file, busy).unwrap();

    let quiet = OracleProfile::read(&quiet);
    let busy = OracleProfile::read(&busy_file);
    assert_eq!(quiet.value("samples", BURN), 0);
    // 100 samples a second: 70 expected; a loaded machine may take some.
    let samples = busy.value("samples", BURN);
    assert!(samples >= 10, "{samples} samples in {BURN}");
    assert_eq!(busy.value("cpu", BURN), samples * 10_000_000);
}
