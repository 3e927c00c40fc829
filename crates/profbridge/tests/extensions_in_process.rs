//! Extensions, end to end in the test process: `service.extensions`
//! starts what it lists and nothing else; `health_check` answers as the
//! Collector's does (status code, JSON body, path matching), 503 once
//! shutdown begins while the exporters still drain; `bearertokenauth` on
//! exporters sends the token a receiver's `bearertokenauth` checks, and
//! follows its token file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use profbridge_testkit::{ebpf_like_request, TempDir};
use prost::Message;

use crate::support::in_process::InProcess;

/// The longest any condition is waited for before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// An HTTP/1.1 answer: status, headers (names lowercase), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

fn get(address: SocketAddr, path: &str) -> Answer {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
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
        body: body.to_owned(),
    }
}

/// A collector with an OTLP HTTP receiver, the nop exporter (or
/// `exporter`: its YAML lines and its id), and the extensions of
/// `extensions` listed as `listed`.
fn config(extensions: &str, listed: &str, exporter: Option<(&str, &str)>) -> String {
    let (exporter_lines, exporter_ids) = exporter.unwrap_or(("  nop:\n", "nop"));
    format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n{exporter_lines}\
         extensions:\n{extensions}\
         service:\n  extensions: [{listed}]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{exporter_ids}]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
    )
}

/// `2026-11-26T03:32:38.123Z`: RFC 3339 in UTC, as Go writes a time.
fn is_rfc3339_utc(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    text.len() >= 20
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes[10] == b'T'
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16)
        && bytes[16] == b':'
        && digits(17..19)
        && text.ends_with('Z')
}

#[test]
fn health_check_answers_like_the_collector_at_its_path() {
    let collector = InProcess::start(
        "ext-health",
        &config(
            "  health_check:\n    endpoint: 127.0.0.1:0\n  health_check/status:\n    endpoint: 127.0.0.1:0\n    path: /health/status\n",
            "health_check, health_check/status",
            None,
        ),
    );
    let root = collector.address("health check (/, health_check)");
    let status = collector.address("health check (/health/status, health_check/status)");

    let answer = get(root, "/");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["status"], "Server available");
    let up_since = body["upSince"].as_str().unwrap();
    assert!(is_rfc3339_utc(up_since), "upSince {up_since:?}");
    let uptime = body["uptime"].as_str().unwrap();
    assert!(
        uptime.ends_with('s') && uptime.chars().next().is_some_and(|c| c.is_ascii_digit()),
        "uptime {uptime:?} is not a Go duration"
    );
    // Go's mux: a pattern ending in / answers every path under it.
    assert_eq!(get(root, "/anything/below").status, 200);

    assert_eq!(get(status, "/health/status").status, 200);
    assert_eq!(get(status, "/").status, 404);
    assert_eq!(get(status, "/health/status/more").status, 404);
    let (drained, _) = collector.stop();
    assert!(drained);
}

#[test]
fn only_the_extensions_service_lists_run() {
    let collector = InProcess::start(
        "ext-listed",
        &config(
            "  health_check:\n    endpoint: 127.0.0.1:0\n  health_check/unused:\n    endpoint: 127.0.0.1:0\n",
            "health_check",
            None,
        ),
    );
    let health: Vec<_> = collector
        .listening
        .iter()
        .filter(|(what, _)| what.contains("health check"))
        .collect();
    assert_eq!(
        health.len(),
        1,
        "health_check/unused is not listed: {health:?}"
    );
    assert!(health[0].0.contains("(/, health_check)"), "{health:?}");
    let (drained, _) = collector.stop();
    assert!(drained);
}

#[test]
fn response_body_replaces_the_json() {
    let collector = InProcess::start(
        "ext-health-body",
        &config(
            "  health_check:\n    endpoint: 127.0.0.1:0\n    response_body:\n      healthy: I'm OK\n      unhealthy: I'm not well\n",
            "health_check",
            None,
        ),
    );
    let answer = get(collector.address("health check"), "/");
    assert_eq!((answer.status, answer.body.as_str()), (200, "I'm OK"));
    let (drained, _) = collector.stop();
    assert!(drained);
}

/// A destination that accepts connections and never answers, until it
/// hangs up.
struct Silent {
    address: SocketAddr,
    /// The connections held open; `None` once it hung up, after which
    /// new ones are closed at once.
    held: Arc<Mutex<Option<Vec<TcpStream>>>>,
}

impl Silent {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let held = Arc::new(Mutex::new(Some(Vec::new())));
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(streams) = keep.lock().unwrap().as_mut() {
                    streams.push(stream);
                }
            }
        });
        Self { address, held }
    }

    fn connections(&self) -> usize {
        self.held.lock().unwrap().as_ref().map_or(0, Vec::len)
    }

    /// Closes every connection: the exporter's request fails.
    fn hang_up(&self) {
        for stream in self.held.lock().unwrap().take().unwrap_or_default() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

#[test]
fn health_check_answers_503_once_shutdown_begins() {
    let silent = Silent::start();
    let exporter = format!(
        "  otlphttp:\n    endpoint: http://{}\n    timeout: 120s\n    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n",
        silent.address
    );
    let config = config(
        "  health_check:\n    endpoint: 127.0.0.1:0\n",
        "health_check",
        Some((&exporter, "otlphttp")),
    );
    let collector = InProcess::start("ext-health-shutdown", &config);
    let health = collector.address("health check");
    assert_eq!(get(health, "/").status, 200);

    // A request the exporter is stuck on: shutdown waits for it.
    let request = ebpf_like_request(10, 1).encode_to_vec();
    let http = collector.http.unwrap();
    let sender = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(http).unwrap();
        let head = format!(
            "POST /v1development/profiles HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            request.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&request).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
    });
    let started = Instant::now();
    while silent.connections() == 0 {
        assert!(started.elapsed() < PATIENCE, "the exporter never connected");
        std::thread::sleep(Duration::from_millis(20));
    }

    let stopping = std::thread::spawn(move || collector.stop());
    let started = Instant::now();
    let answer = loop {
        let answer = get(health, "/");
        if answer.status != 200 {
            break answer;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "still 200 while shutting down"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(answer.status, 503, "{}", answer.body);
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["status"], "Server not available");
    assert_eq!(body["uptime"], "");

    silent.hang_up();
    let _ = stopping.join().unwrap();
    sender.join().unwrap();
    assert!(
        TcpStream::connect(health).is_err(),
        "the health check stops with the collector"
    );
}

// ---- bearertokenauth on exporters ----

/// POSTs one OTLP request to `http` (a collector's OTLP HTTP receiver);
/// returns the status.
fn post_request(http: SocketAddr, seed: u64) -> u16 {
    post_with(http, seed, "")
}

/// [`post_request`] with `extra` header lines (each ending in CRLF).
fn post_with(http: SocketAddr, seed: u64, extra: &str) -> u16 {
    let request = ebpf_like_request(10, seed).encode_to_vec();
    let mut stream = TcpStream::connect(http).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /v1development/profiles HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        request.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer.split(' ').nth(1).unwrap().parse().unwrap()
}

/// The OTLP protobuf files under `dir`, at any depth.
fn files_in(dir: &std::path::Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            count += files_in(&path);
        } else if path.to_string_lossy().ends_with(".otlp.pb") {
            count += 1;
        }
    }
    count
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < PATIENCE, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `profbridge_receiver_refused_requests_total{reason="unauthenticated"}`
/// summed over the transports.
fn unauthenticated(telemetry: SocketAddr) -> f64 {
    get(telemetry, "/metrics")
        .body
        .lines()
        .filter(|line| {
            line.starts_with("profbridge_receiver_refused_requests_total{")
                && line.contains("reason=\"unauthenticated\"")
        })
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// B: OTLP gRPC and HTTP receivers that let in only the token in
/// `token_file` (through `bearertokenauth/in`), writing each request to a
/// file under `{data}`.
fn guarded_sink(token_file: &str) -> InProcess {
    let auth = "        auth:\n          authenticator: bearertokenauth/in\n";
    InProcess::start(
        "ext-bearer-sink",
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n{auth}      http:\n        endpoint: 127.0.0.1:0\n{auth}\
             exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
             extensions:\n  bearertokenauth/in:\n    filename: {token_file}\n\
             service:\n  extensions: [bearertokenauth/in]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n\
             \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
        ),
    )
}

/// A: an OTLP HTTP receiver, and `otlp` and `otlphttp` exporters to `sink`
/// with `auth` lines (under each exporter) and `extensions` (under
/// `extensions:`, listed as `listed`).
fn forwarder(sink: &InProcess, auth: &str, extensions: &str, listed: &str) -> InProcess {
    let grpc = sink.grpc.unwrap();
    let http = sink.http.unwrap();
    let exporters = format!(
        "  otlp:\n    endpoint: http://{grpc}\n    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n{auth}\
         \x20 otlphttp:\n    endpoint: http://{http}\n    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n{auth}"
    );
    InProcess::start(
        "ext-bearer-forwarder",
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
             exporters:\n{exporters}\
             extensions:\n{extensions}\
             service:\n  extensions: [{listed}]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [otlp, otlphttp]\n\
             \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
        ),
    )
}

#[test]
fn exporters_send_the_bearertokenauth_token_and_follow_its_file() {
    let dir = TempDir::new("ext-bearer-tokens");
    let sink_token = dir.path().join("sink-token");
    let client_token = dir.path().join("client-token");
    std::fs::write(&sink_token, "s3cret\n").unwrap();
    std::fs::write(&client_token, "s3cret\n").unwrap();
    let sink = guarded_sink(sink_token.to_str().unwrap());
    let sink_telemetry = sink.telemetry.unwrap();

    // Without credentials, both exporters are refused.
    let bare = forwarder(&sink, "", "", "");
    assert_ne!(post_request(bare.http.unwrap(), 1), 200, "an export failed");
    assert_eq!(unauthenticated(sink_telemetry), 2.0);
    assert_eq!(files_in(&sink.data), 0);
    drop(bare);

    let auth = "    auth:\n      authenticator: bearertokenauth/out\n";
    let extension = format!(
        "  bearertokenauth/out:\n    filename: {}\n",
        client_token.display()
    );
    let client = forwarder(&sink, auth, &extension, "bearertokenauth/out");
    assert_eq!(post_request(client.http.unwrap(), 2), 200);
    wait_until("both exports to be written", || files_in(&sink.data) == 2);
    assert_eq!(unauthenticated(sink_telemetry), 2.0);

    // Both token files change. Once the sink refuses the old token, what
    // it writes came with the new one, which the client read from its
    // file.
    std::fs::write(&sink_token, "rotated\n").unwrap();
    std::fs::write(&client_token, "rotated\n").unwrap();
    let sink_http = sink.http.unwrap();
    wait_until("the sink to refuse the old token", || {
        post_with(sink_http, 3, "Authorization: Bearer s3cret\r\n") == 401
    });
    // Each export is either written or refused; until the client has
    // read its file, some are refused.
    let started = Instant::now();
    for seed in 4.. {
        assert!(
            started.elapsed() < PATIENCE,
            "the client never sent the rotated token"
        );
        let (files, refused) = (files_in(&sink.data), unauthenticated(sink_telemetry));
        post_request(client.http.unwrap(), seed);
        let mut written = 0;
        wait_until("both exports to be written or refused", || {
            written = files_in(&sink.data) - files;
            let more_refused = unauthenticated(sink_telemetry) - refused;
            written as f64 + more_refused >= 2.0
        });
        if written == 2 {
            break;
        }
    }
    let (drained, _) = client.stop();
    assert!(drained);
    let (drained, _) = sink.stop();
    assert!(drained);
}

/// The `pyroscope` exporter sends a bearertokenauth token too: a sink whose
/// Pyroscope receiver lets in only that token writes what A pushes, and
/// refuses A's pushes without it.
#[test]
fn the_pyroscope_exporter_sends_the_bearertokenauth_token() {
    let sink = InProcess::start(
        "ext-bearer-pyroscope-sink",
        "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n    auth:\n      authenticator: bearertokenauth/in\n\
         exporters:\n  file:\n    path: {data}\n    format: otlp\n\
         extensions:\n  bearertokenauth/in:\n    token: s3cret\n\
         service:\n  extensions: [bearertokenauth/in]\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [file]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
    );
    let pyroscope = sink.address("Pyroscope ingest");
    let sink_telemetry = sink.telemetry.unwrap();
    let forwarder = |auth: &str, extensions: &str, listed: &str| {
        InProcess::start(
            "ext-bearer-pyroscope-forwarder",
            &format!(
                "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
                 exporters:\n  pyroscope:\n    endpoint: http://{pyroscope}\n    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n{auth}\
                 extensions:\n{extensions}\
                 service:\n  extensions: [{listed}]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [pyroscope]\n\
                 \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
            ),
        )
    };

    let bare = forwarder("", "", "");
    assert_ne!(post_request(bare.http.unwrap(), 1), 200, "the push failed");
    assert_eq!(unauthenticated(sink_telemetry), 1.0);
    assert_eq!(files_in(&sink.data), 0);
    drop(bare);

    let client = forwarder(
        "    auth:\n      authenticator: bearertokenauth/out\n",
        "  bearertokenauth/out:\n    token: s3cret\n",
        "bearertokenauth/out",
    );
    assert_eq!(post_request(client.http.unwrap(), 2), 200);
    wait_until("the push to be written", || files_in(&sink.data) > 0);
    assert_eq!(unauthenticated(sink_telemetry), 1.0);
    let (drained, _) = client.stop();
    assert!(drained);
    let (drained, _) = sink.stop();
    assert!(drained);
}

/// The HTTP extensions take the connection settings every HTTP listener
/// has (they were fixed at 64 connections and a 60 s idle limit): with
/// `max_connections: 1`, a second client is served at once: the first,
/// silent one gives way to it and is closed.
#[test]
fn health_check_takes_the_shared_connection_settings() {
    let collector = InProcess::start(
        "ext-health-limits",
        &config(
            "  health_check:\n    endpoint: 127.0.0.1:0\n    max_connections: 1\n    idle_timeout: 1s\n",
            "health_check",
            None,
        ),
    );
    let root = collector.address("health check (/, health_check)");
    let mut silent = TcpStream::connect(root).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let answer = get(root, "/");
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The second client was answered, so the silent one holds no slot:
    // it was closed (EOF), not left open.
    silent.set_nonblocking(true).unwrap();
    let mut byte = [0_u8; 1];
    match silent.read(&mut byte) {
        Ok(0) => {}
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the silent connection is still open at the cap of 1: {other:?}"),
    }
    let (drained, _) = collector.stop();
    assert!(drained);
}
