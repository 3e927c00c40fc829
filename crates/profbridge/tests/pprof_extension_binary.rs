//! The `pprof` extension in a spawned `profbridge serve` (the sampler is
//! process-wide: a SIGPROF timer for the whole process, so the process is
//! the point): under OTLP load, `go tool pprof` fetches
//! `/debug/pprof/profile` itself and finds profbridge's own decoding
//! functions with CPU time; `save_to_file` writes a profile of the whole
//! run at shutdown, and a request meanwhile answers 500 as Go's does; bad
//! `seconds` answer 400, what the allocator does not record 404.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use profbridge_testkit::{ebpf_like_request, require_tool, TempDir};
use prost::Message;

use crate::support::collector::Collector;
use crate::support::raw_text::go_tool_pprof;

/// The most OTLP requests one load sends, and for how long at most.
const MAX_REQUESTS: usize = 20_000;
const MAX_LOAD: Duration = Duration::from_secs(120);

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request on its own connection.
fn request(address: SocketAddr, method: &str, path: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: response[split + 4..].to_vec(),
    }
}

fn get(address: SocketAddr, path: &str) -> Answer {
    request(address, "GET", path, &[])
}

fn config(pprof: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  nop:\n\
         extensions:\n  pprof:\n    endpoint: 127.0.0.1:0\n{pprof}\
         service:\n  extensions: [pprof]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
    )
}

/// Runs `during` while a thread sends OTLP requests of 2000 stacks to
/// `http`; what `during` returned and how many requests were answered 200.
fn under_load<T>(http: SocketAddr, during: impl FnOnce() -> T) -> (T, usize) {
    let body = ebpf_like_request(2000, 7).encode_to_vec();
    let done = Arc::new(AtomicBool::new(false));
    let sender = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut accepted = 0;
            for _ in 0..MAX_REQUESTS {
                if done.load(Ordering::Relaxed) || started.elapsed() > MAX_LOAD {
                    break;
                }
                let answer = request(http, "POST", "/v1development/profiles", &body);
                if answer.status == 200 {
                    accepted += 1;
                }
            }
            accepted
        })
    };
    let result = during();
    done.store(true, Ordering::Relaxed);
    (result, sender.join().unwrap())
}

/// The source files `go tool pprof -top -files` lists with CPU time.
/// Files, not function names: a build with line tables only names an
/// inlined function without its path (`read_field`), and which functions
/// are inlined changes with the build.
fn files_with_time(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|line| !line.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let cum = fields.get(3)?;
            (fields.len() >= 6 && *cum != "0").then(|| fields[5..].join(" "))
        })
        .collect()
}

/// `go tool pprof` arguments for [`assert_profbridge_decoding_shows`].
const BY_FILE: [&str; 3] = ["-top", "-files", "-nodecount=100000"];

/// Asserts that profbridge's own request decoding (profbridge-translate's
/// sources) and OTLP receiver show with CPU time in `top`, printed by
/// file ([`BY_FILE`]).
fn assert_profbridge_decoding_shows(top: &str) {
    assert!(top.contains("Type: cpu"), "not a CPU profile:\n{top}");
    let files = files_with_time(top);
    for folder in [
        "crates/translate/src/",
        "crates/collector/src/receivers/otlp/",
    ] {
        assert!(
            files.iter().any(|file| file.contains(folder)),
            "no source file under {folder} has CPU time:\n{top}"
        );
    }
}

fn go_available() -> bool {
    require_tool(
        "go",
        &["version"],
        "reading profbridge's own CPU profile with go tool pprof",
    )
    .is_some()
}

#[test]
fn go_tool_pprof_reads_profbridges_own_cpu_profile() {
    let collector = Collector::start("pprof-ext-profile", &config(""));
    let pprof = collector.address("pprof extension (pprof)");
    let http = collector.http.unwrap();

    let index = get(pprof, "/debug/pprof/");
    assert_eq!(index.status, 200);
    assert_eq!(
        index.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        index.text().contains("href=\"profile?seconds=30\""),
        "{}",
        index.text()
    );
    let moved = get(pprof, "/debug/pprof");
    assert_eq!(
        (moved.status, moved.header("location")),
        (301, Some("/debug/pprof/"))
    );

    for bad in ["x", "0", "-5", "1.5", "301"] {
        let answer = get(pprof, &format!("/debug/pprof/profile?seconds={bad}"));
        assert_eq!(answer.status, 400, "seconds={bad}: {}", answer.text());
        assert_eq!(answer.header("x-go-pprof"), Some("1"));
    }
    let heap = get(pprof, "/debug/pprof/heap");
    assert_eq!(heap.status, 404);
    assert!(heap.text().contains("mimalloc"), "{}", heap.text());
    assert_eq!(
        get(pprof, "/debug/pprof/nonsense").text(),
        "Unknown profile\n"
    );

    // Our own fetch: Go's headers, a gzipped pprof of the CPU.
    let (answer, accepted) = under_load(http, || get(pprof, "/debug/pprof/profile?seconds=2"));
    assert!(accepted > 0, "the load was never accepted");
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(
        answer.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(
        answer.header("content-disposition"),
        Some("attachment; filename=\"profile\"")
    );
    assert!(answer.body.starts_with(&[0x1f, 0x8b]), "not gzipped");

    if !go_available() {
        return;
    }
    let home = TempDir::new("pprof-ext-go");
    std::fs::write(home.path().join("profile.pb.gz"), &answer.body).unwrap();
    let top = go_tool_pprof(&BY_FILE, &home.path().join("profile.pb.gz"), home.path())
        .unwrap_or_else(|error| panic!("go tool pprof cannot read the profile: {error}"));
    assert_profbridge_decoding_shows(&top);

    // As a user runs it: go tool pprof fetches the profile over HTTP.
    let url = format!("http://{pprof}/debug/pprof/profile");
    let (top, accepted) = under_load(http, || {
        go_tool_pprof(
            &[&BY_FILE[..], &["-seconds=2"]].concat(),
            Path::new(&url),
            home.path(),
        )
    });
    assert!(accepted > 0, "the load was never accepted");
    let top = top.unwrap_or_else(|error| panic!("go tool pprof {url}: {error}"));
    assert_profbridge_decoding_shows(&top);

    let (status, _) = collector.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn save_to_file_writes_the_whole_run_at_shutdown() {
    let out = TempDir::new("pprof-ext-save");
    let path = out.path().join("run.pprof");
    let collector = Collector::start(
        "pprof-ext-save-run",
        &config(&format!(
            "    save_to_file: {}\n    block_profile_fraction: 3\n",
            path.display()
        )),
    );
    assert!(path.exists(), "save_to_file is created at start");
    let pprof = collector.address("pprof extension (pprof)");
    let (_, accepted) = under_load(collector.http.unwrap(), || {
        std::thread::sleep(Duration::from_secs(2))
    });
    assert!(accepted > 0, "the load was never accepted");

    // One CPU profile at a time, as Go's: the run's is recording.
    let busy = get(pprof, "/debug/pprof/profile?seconds=1");
    assert_eq!(busy.status, 500);
    assert_eq!(
        busy.text(),
        "Could not enable CPU profiling: cpu profiling already in use\n"
    );
    assert_eq!(
        busy.header("content-type"),
        Some("text/plain; charset=utf-8")
    );

    let (status, _dir) = collector.terminate();
    assert!(status.success(), "{status}");
    let written = std::fs::read(&path).unwrap();
    assert!(
        written.starts_with(&[0x1f, 0x8b]),
        "no gzipped profile written"
    );
    if !go_available() {
        return;
    }
    let top = go_tool_pprof(&BY_FILE, &path, out.path())
        .unwrap_or_else(|error| panic!("go tool pprof cannot read {}: {error}", path.display()));
    assert_profbridge_decoding_shows(&top);
}
