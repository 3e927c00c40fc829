//! `serve` sets mimalloc's purge delay in-process, and leaves it to the
//! operator when a `MIMALLOC_` variable is set. The start-up log reads the
//! option back from mimalloc, so the environment case also proves that the
//! option index we set is the one mimalloc reads `MIMALLOC_PURGE_DELAY` into.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CONFIG: &str = "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
exporters:\n  nop:\n\
service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n  telemetry:\n    logs:\n      level: debug\n    metrics:\n      address: \"\"\n";

/// The `allocator settings` log line of a `serve` started with `env`.
fn allocator_log_line(env: &[(&str, &str)]) -> String {
    let dir = tempfile_dir();
    let config = dir.join("config.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_profbridge"));
    command
        .args(["serve", "--config"])
        .arg(&config)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("MIMALLOC_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut found = None;
    for line in stderr.lines() {
        let line = line.unwrap();
        if line.contains("allocator settings") {
            found = Some(line);
            break;
        }
        assert!(Instant::now() < deadline, "no allocator line in time");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    found.expect("serve logged no `allocator settings` line before exiting")
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "profbridge-allocator-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn serve_sets_a_50_ms_purge_delay_in_process() {
    let line = allocator_log_line(&[]);
    assert!(line.contains("purge_delay_ms=50"), "{line}");
    assert!(line.contains("set_by=Collector"), "{line}");
    assert!(line.contains("purge_interval_ms=100"), "{line}");
}

#[test]
fn a_mimalloc_variable_leaves_the_allocator_to_the_operator() {
    let line = allocator_log_line(&[("MIMALLOC_PURGE_DELAY", "37")]);
    assert!(line.contains("purge_delay_ms=37"), "{line}");
    assert!(line.contains("set_by=Environment"), "{line}");
    let line = allocator_log_line(&[("MIMALLOC_VERBOSE", "0")]);
    assert!(line.contains("set_by=Environment"), "{line}");
    assert!(!line.contains("purge_delay_ms=50"), "{line}");
}
