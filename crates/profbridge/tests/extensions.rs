//! Extensions, end to end in the test process: `service.extensions`
//! starts what it lists and nothing else, and `health_check` answers as
//! the Collector's does (status code, JSON body, path matching), 503 once
//! shutdown begins while the exporters still drain.

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

use profbridge_testkit::ebpf_like_request;
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
