//! The pprof receiver's `file` and `self` sources, end to end. `file`:
//! files written, rewritten and left alone under the glob reach a file
//! exporter once per change, and a restart on the same checkpoint sends
//! nothing again (in the test process). `self`: a spawned `profbridge
//! serve` (the sampler is process-wide) sends its own CPU profile, which
//! `go tool pprof` reads with profbridge's functions in it, under
//! `service.name: profbridge`; beside the pprof extension recording the
//! whole run, it skips its intervals with a warning and stops cleanly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use profbridge_testkit::{ebpf_like_request, pprof_oracle, require_tool, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

use crate::support::collector::Collector;
use crate::support::http::exchange;
use crate::support::in_process::InProcess;

/// The longest any condition is waited for before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

// ------------------------------------------------------------------ file

fn file_source_config(watched: &Path, state: &Path) -> String {
    format!(
        "receivers:\n  pprof:\n    file:\n      include: {watched}/*.folded\n      collection_interval: 100ms\n      initial_delay: 0s\n      checkpoint: {state}/checkpoint.json\n\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n    path_template: \"{{seq}}.otlp.pb\"\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        watched = watched.display(),
        state = state.display(),
    )
}

/// How many written requests name each `marker_…` function, read from
/// every request under `data`.
fn markers_written(data: &Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for entry in std::fs::read_dir(data).into_iter().flatten() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".otlp.pb") {
            continue;
        }
        let request =
            ExportProfilesServiceRequest::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
        for name in &request.dictionary.unwrap_or_default().string_table {
            if name.starts_with("marker_") {
                *counts.entry(name.clone()).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// Waits until every marker of `expected` was written, then for ten more
/// collection intervals, and asserts that exactly `expected` was written.
fn assert_written(data: &Path, expected: &[&str]) {
    let deadline = Instant::now() + PATIENCE;
    while !expected
        .iter()
        .all(|marker| markers_written(data).contains_key(*marker))
    {
        assert!(
            Instant::now() < deadline,
            "waited for {expected:?}, written: {:?}",
            markers_written(data)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let once: BTreeMap<String, usize> = expected.iter().map(|m| ((*m).to_owned(), 1)).collect();
    assert_eq!(markers_written(data), once);
}

#[test]
fn the_file_source_delivers_each_file_once_per_change_across_restarts() {
    let root = TempDir::new("pprof-file-source");
    let watched = root.path().join("in");
    let state = root.path().join("state");
    std::fs::create_dir_all(&watched).unwrap();
    std::fs::write(watched.join("a.folded"), "main;marker_a1 3\n").unwrap();
    std::fs::write(watched.join("b.folded"), "main;marker_b1 5\n").unwrap();
    std::fs::write(watched.join("ignored.txt"), "main;marker_not_included 1\n").unwrap();
    let config = file_source_config(&watched, &state);

    let collector = InProcess::start("pprof-file-source-1", &config);
    assert_written(&collector.data, &["marker_a1", "marker_b1"]);

    // Rewritten: read again; left alone: not.
    std::fs::write(watched.join("a.folded"), "main;marker_a2 7\nmain;x 1\n").unwrap();
    assert_written(&collector.data, &["marker_a1", "marker_a2", "marker_b1"]);
    let (drained, _first) = collector.stop();
    assert!(drained);
    let checkpoint = std::fs::read_to_string(state.join("checkpoint.json")).unwrap();
    assert!(checkpoint.contains("a.folded"), "{checkpoint}");

    // A restart on the same checkpoint sends only what is new.
    std::fs::write(watched.join("c.folded"), "main;marker_c1 2\n").unwrap();
    let collector = InProcess::start("pprof-file-source-2", &config);
    assert_written(&collector.data, &["marker_c1"]);
    let (drained, _second) = collector.stop();
    assert!(drained);
}

// ------------------------------------------------------------------ self

fn self_source_config(extensions: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n  pprof:\n    self:\n      collection_interval: 2s\n      initial_delay: 0s\n\
         exporters:\n  file:\n    path: {{data}}\n    format: pprof\n\
         {extensions}\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp, pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
    )
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Sends OTLP requests to `http` for about `duration`; how many were
/// answered 200.
fn keep_busy(http: SocketAddr, duration: Duration) -> usize {
    let body = ebpf_like_request(2000, 7).encode_to_vec();
    let head = format!(
        "POST /v1development/profiles HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let started = Instant::now();
    let mut accepted = 0;
    while started.elapsed() < duration {
        if exchange(http, &head, &body).0 == 200 {
            accepted += 1;
        }
    }
    accepted
}

#[test]
fn the_self_source_sends_profbridges_own_cpu_profile() {
    let collector = Collector::start("pprof-self-source", &self_source_config(""));
    let accepted = keep_busy(collector.http.unwrap(), Duration::from_secs(5));
    assert!(accepted > 0, "the load was never accepted");
    // service.name picks the folder: {service.name}/{profile_type}/….
    let own = collector.data.join("profbridge");
    let deadline = Instant::now() + PATIENCE;
    while files_under(&own).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no profile written under {}: {:?}",
            own.display(),
            files_under(&collector.data)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, dir) = collector.terminate();
    assert!(status.success(), "{status}");
    let written = files_under(&dir.path().join("data").join("profbridge"));
    assert!(!written.is_empty());

    if require_tool(
        "go",
        &["version"],
        "reading the self source's profile with go tool pprof",
    )
    .is_none()
    {
        return;
    }
    // The oracle: go tool pprof -raw, every written profile's CPU time by function.
    let mut with_time = Vec::new();
    for path in &written {
        let values = pprof_oracle::values_by_function(path, "cpu");
        with_time.extend(
            values
                .into_iter()
                .filter(|(_, nanoseconds)| *nanoseconds > 0)
                .map(|(function, _)| function),
        );
    }
    assert!(
        with_time
            .iter()
            .any(|name| name.starts_with("profbridge_translate::")
                || name.starts_with("profbridge_collector::")),
        "no profbridge function has CPU time in {written:?}: {with_time:?}"
    );
}

#[test]
fn the_self_source_gives_way_to_the_pprof_extension_recording() {
    let out = TempDir::new("pprof-self-busy");
    let run = out.path().join("run.pprof");
    let extension = format!(
        "extensions:\n  pprof:\n    endpoint: 127.0.0.1:0\n    save_to_file: {}\n",
        run.display()
    );
    let config =
        self_source_config(&extension).replace("service:\n", "service:\n  extensions: [pprof]\n");
    let collector = Collector::start_logged("pprof-self-busy", &config);
    let deadline = Instant::now() + PATIENCE;
    while !collector
        .log()
        .contains("cannot record profbridge's own CPU profile")
    {
        assert!(
            Instant::now() < deadline,
            "no warning:\n{}",
            collector.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        collector.log().contains("cpu profiling already in use"),
        "{}",
        collector.log()
    );
    let (status, dir) = collector.terminate();
    assert!(status.success(), "{status}");
    assert!(files_under(&dir.path().join("data")).is_empty());
    let written = std::fs::read(&run).unwrap();
    assert!(
        written.starts_with(&[0x1f, 0x8b]),
        "the extension's run profile was not written"
    );
}

/// A pprof receiver written before the sources (its push server's keys
/// beside its own) still runs its push server, and both `validate` and
/// `serve` say the shape is deprecated and where the keys go.
#[test]
fn flat_pprof_keys_run_the_push_server_with_a_deprecation_warning() {
    let config = "receivers:\n  pprof:\n    endpoint: 127.0.0.1:0\n    path: /old/pprof\n\
                  exporters:\n  nop:\n\
                  service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [nop]\n  telemetry:\n    metrics:\n      address: \"\"\n";
    let dir = TempDir::new("pprof-flat-keys");
    let file = dir.path().join("flat.yaml");
    std::fs::write(&file, config).unwrap();
    let validated = std::process::Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(["validate", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&validated.stderr);
    assert!(validated.status.success(), "{said}");
    assert!(
        said.contains("warning: receivers.pprof: the push server's keys beside pprof's own are deprecated: write them under server:"),
        "{said}"
    );

    let collector = Collector::start_logged("pprof-flat-keys-serve", config);
    let log = collector.log();
    assert!(
        log.contains("the push server's keys beside pprof's own are deprecated")
            && log.contains("receivers.pprof"),
        "{log}"
    );
    let address = collector.address("pprof push (POST /old/pprof)");
    let (status, body) = exchange(
        address,
        "POST /old/pprof HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        b"",
    );
    // Reached the push server's handler: an empty body is not a profile.
    assert_eq!(status, 400, "{body}");
    assert!(collector.terminate().0.success());
}
