//! gperftools' CPU profiler (libprofiler) profiles a small C program; our
//! `parse_legacy` reads the profile it writes and agrees with
//! `go tool pprof -raw` on sample types, totals, and the stacks by address.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::Command;

use profbridge_pprof::{dump, parse_legacy};
use profbridge_testkit::{missing_prerequisite, require_tool, TempDir};

use crate::raw_text;

use raw_text::{assert_same_samples, go_tool_pprof_raw, RawText};

const PURPOSE: &str = "the gperftools CPU profile interop test";

/// Burns about 0.3 s of CPU time in each of three call paths, which share
/// `spin` and `leaf_a` but reach them through different callers.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static double spin(long n, double x) {
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

__attribute__((noinline)) static void leaf_a(void) { sink += spin(200000, 1.0); }
__attribute__((noinline)) static void leaf_b(void) { sink += spin(300000, 2.0); }
__attribute__((noinline)) static void middle(void) { leaf_a(); leaf_b(); }
__attribute__((noinline)) static void path_one(void) { leaf_a(); }
__attribute__((noinline)) static void path_two(void) { middle(); }
__attribute__((noinline)) static void path_three(void) { sink += spin(250000, 3.0); }

static void burn_for(void (*path)(void), double seconds) {
    clock_t start = clock();
    while ((double)(clock() - start) < seconds * CLOCKS_PER_SEC) path();
}

int main(void) {
    burn_for(path_one, 0.3);
    burn_for(path_two, 0.3);
    burn_for(path_three, 0.3);
    printf("%f\n", sink);
    return 0;
}
"#;

#[test]
fn parse_legacy_agrees_with_go_tool_pprof_on_a_gperftools_cpu_profile() {
    if require_tool("cc", &["--version"], PURPOSE).is_none()
        || require_tool("go", &["version"], PURPOSE).is_none()
    {
        return;
    }
    let dir = TempDir::new("gperftools");
    let compiled = profbridge_testkit::c::build_once(
        "burn",
        PROGRAM,
        &["-O1", "-fno-omit-frame-pointer"],
        &["-Wl,--no-as-needed", "-lprofiler"],
    );
    let program = match compiled {
        Ok(program) => program,
        Err(failed) => {
            missing_prerequisite(
                "gperftools' libprofiler (Debian's libgoogle-perftools-dev)",
                &format!(
                    "{PURPOSE} (`cc ... -lprofiler` failed: {})",
                    failed.stderr.trim()
                ),
            );
            return;
        }
    };

    let profile_path = dir.path().join("burn.prof");
    let run = Command::new(&program)
        .env("CPUPROFILE", &profile_path)
        .env("CPUPROFILE_FREQUENCY", "1000")
        .output()
        .expect("run the profiled program");
    assert!(
        run.status.success(),
        "the profiled program failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bytes = std::fs::read(&profile_path).unwrap_or_else(|e| {
        panic!(
            "libprofiler wrote no profile at {} ({e}); stderr: {}",
            profile_path.display(),
            String::from_utf8_lossy(&run.stderr)
        )
    });

    let raw = go_tool_pprof_raw(&profile_path, dir.path()).unwrap_or_else(|stderr| {
        panic!("go tool pprof -raw failed on libprofiler's profile: {stderr}")
    });
    let theirs = RawText::parse(&raw);
    assert!(
        !theirs.samples.is_empty(),
        "libprofiler took no samples of the program:\n{raw}"
    );

    let profile = parse_legacy(&bytes)
        .unwrap_or_else(|e| panic!("parse_legacy failed on libprofiler's profile: {e}"));
    let ours = RawText::parse(&dump(&profile).unwrap());
    assert_same_samples("gperftools CPU profile", &ours, &theirs);
}
