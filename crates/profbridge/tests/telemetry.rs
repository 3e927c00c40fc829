//! Self-telemetry, end to end: the collector's `/health`, `/ready` and
//! `/metrics` (in the test process; the real binary where its log is
//! checked), with counters checked after one valid and one invalid
//! OTLP HTTP request.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::net::SocketAddr;
use std::time::Duration;

use profbridge_testkit::ebpf_like_request;
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

const PROFILES_PATH: &str = "/v1development/profiles";
/// The default queue budget of a pipeline, 256 MiB.
const DEFAULT_QUEUE_BYTES: u64 = 256 << 20;

use crate::support::http;
use crate::support::in_process::InProcess;

/// A collector with a nop exporter and telemetry on a free port.
fn start_collector(label: &str) -> InProcess {
    InProcess::start(
        label,
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
    )
}

/// One HTTP/1.1 exchange: (status, body). Bodies here have a length.
fn exchange(address: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let (status, head, body) = http::exchange_with_head(address, head, body);
    assert!(
        !head.to_ascii_lowercase().contains("chunked"),
        "unexpected chunked response: {head}"
    );
    (status, body)
}

fn get(address: SocketAddr, path: &str) -> (u16, String) {
    exchange(
        address,
        &format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"),
        b"",
    )
}

fn post_protobuf(address: SocketAddr, request: &ExportProfilesServiceRequest) -> (u16, String) {
    let body = request.encode_to_vec();
    exchange(
        address,
        &format!(
            "POST {PROFILES_PATH} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ),
        &body,
    )
}

/// The value of the series `series` (name and labels, as printed).
fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (name, number) = line.rsplit_once(' ')?;
        (name == series).then(|| number.parse().unwrap())
    })
}

fn scrape(telemetry: Option<SocketAddr>) -> String {
    let (status, body) = get(telemetry.unwrap(), "/metrics");
    assert_eq!(status, 200);
    body
}

fn profiles_and_samples(request: &ExportProfilesServiceRequest) -> (f64, f64) {
    let profiles = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles);
    let count = profiles.clone().count();
    let samples: usize = profiles.map(|p| p.samples.len()).sum();
    (count as f64, samples as f64)
}

const ACCEPTED: &str =
    "profbridge_receiver_accepted_profiles_total{receiver=\"otlp\",transport=\"http\"}";
const SAMPLES: &str =
    "profbridge_receiver_accepted_samples_total{receiver=\"otlp\",transport=\"http\"}";
const REFUSED_INVALID: &str = "profbridge_receiver_refused_profiles_total{receiver=\"otlp\",transport=\"http\",reason=\"invalid\"}";
const SENT: &str = "profbridge_exporter_sent_profiles_total{exporter=\"nop\"}";
const CAPACITY: &str = "profbridge_pipeline_queue_capacity_bytes{pipeline=\"profiles\"}";

#[test]
fn health_ready_and_metrics_follow_the_requests() {
    let collector = start_collector("telemetry");
    assert_eq!(
        get(collector.telemetry.unwrap(), "/health"),
        (200, "ok".to_owned())
    );
    assert_eq!(
        get(collector.telemetry.unwrap(), "/ready"),
        (200, "ready".to_owned())
    );

    let before = scrape(collector.telemetry);
    assert!(before.contains("# TYPE profbridge_receiver_accepted_profiles_total counter"));
    assert_eq!(value(&before, ACCEPTED), Some(0.0), "{before}");
    assert_eq!(value(&before, CAPACITY), Some(DEFAULT_QUEUE_BYTES as f64));

    let valid = ebpf_like_request(50, 1);
    let (profiles, samples) = profiles_and_samples(&valid);
    assert!(profiles > 0.0 && samples > 0.0);
    let (status, body) = post_protobuf(collector.http.unwrap(), &valid);
    assert_eq!(status, 200, "{body}");

    let mut invalid = valid.clone();
    for profile in invalid
        .resource_profiles
        .iter_mut()
        .flat_map(|r| &mut r.scope_profiles)
        .flat_map(|s| &mut s.profiles)
    {
        profile.samples[0].stack_index = 1_000_000;
    }
    let (status, body) = post_protobuf(collector.http.unwrap(), &invalid);
    assert_eq!(status, 400, "{body}");

    // Exporters count after the response; wait for the worker.
    let mut after = scrape(collector.telemetry);
    for _ in 0..200 {
        if value(&after, SENT) == Some(profiles) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        after = scrape(collector.telemetry);
    }
    assert_eq!(value(&after, ACCEPTED), Some(profiles), "{after}");
    assert_eq!(value(&after, SAMPLES), Some(samples), "{after}");
    assert_eq!(value(&after, REFUSED_INVALID), Some(profiles), "{after}");
    assert_eq!(
        value(
            &after,
            "profbridge_receiver_refused_profiles_total{receiver=\"otlp\",transport=\"http\",reason=\"unavailable\"}"
        ),
        Some(0.0)
    );
    assert_eq!(value(&after, SENT), Some(profiles), "{after}");
    assert_eq!(
        value(
            &after,
            "profbridge_exporter_send_failed_profiles_total{exporter=\"nop\"}"
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &after,
            "profbridge_receiver_accepted_profiles_total{receiver=\"otlp\",transport=\"grpc\"}"
        ),
        Some(0.0)
    );
    assert_eq!(value(&after, CAPACITY), Some(DEFAULT_QUEUE_BYTES as f64));
    assert!(value(
        &after,
        "profbridge_pipeline_queue_size_bytes{pipeline=\"profiles\"}"
    )
    .is_some());
    assert!(value(&after, "profbridge_process_uptime_seconds").unwrap() >= 0.0);
    if cfg!(target_os = "linux") {
        assert!(value(&after, "profbridge_process_memory_rss_bytes").unwrap() > 0.0);
    }
    assert!(collector.stop().0);
}

use crate::support::invalid_utf8;

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A pprof whose strings are not all UTF-8, pushed to the pprof receiver
/// three times: delivered with U+FFFD, counted in
/// `profbridge_receiver_strings_replaced_total`, and logged once a minute
/// at most.
#[test]
fn the_pprof_receiver_counts_and_delivers_strings_that_are_not_utf8() {
    let collector = crate::support::collector::Collector::start_logged(
        "telemetry-invalid-utf8",
        "receivers:\n  pprof:\n    endpoint: 127.0.0.1:0\n\
         exporters:\n  file:\n    path: {data}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
    );
    const REPLACED: &str =
        "profbridge_receiver_strings_replaced_total{receiver=\"pprof\",transport=\"http\"}";
    const FILE_SENT: &str = "profbridge_exporter_sent_profiles_total{exporter=\"file\"}";
    assert_eq!(value(&scrape(collector.telemetry), REPLACED), Some(0.0));

    let body = invalid_utf8::profile_bytes();
    let address = collector.address("pprof push");
    let started = std::time::Instant::now();
    for _ in 0..3 {
        let (status, answer) = exchange(
            address,
            &format!(
                "POST /v1/pprof HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ),
            &body,
        );
        assert_eq!(status, 204, "{answer}");
    }
    let posting_took = started.elapsed();

    // One OTLP profile per sample type (two) of each of the three pushes.
    let profiles = 6.0;
    let mut metrics = scrape(collector.telemetry);
    for _ in 0..400 {
        if value(&metrics, FILE_SENT) == Some(profiles) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        metrics = scrape(collector.telemetry);
    }
    assert_eq!(value(&metrics, FILE_SENT), Some(profiles), "{metrics}");
    let count = invalid_utf8::invalid_count();
    assert_eq!(
        value(&metrics, REPLACED),
        Some(3.0 * count as f64),
        "{metrics}"
    );

    let mut strings = Vec::new();
    for path in files_under(&collector.data) {
        let request =
            ExportProfilesServiceRequest::decode(std::fs::read(&path).unwrap().as_slice())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        strings.extend(invalid_utf8::otlp_strings(&request));
    }
    for string in invalid_utf8::STRINGS {
        let lossy = String::from_utf8_lossy(string);
        assert!(
            strings.iter().any(|s| *s == lossy),
            "{lossy:?} was not delivered"
        );
    }

    let log = collector.log();
    let lines = log.matches("strings that are not valid UTF-8").count();
    // One line a minute per receiver: the three pushes fall in one minute
    // unless posting them took longer.
    if posting_took < Duration::from_secs(60) {
        assert_eq!(lines, 1, "{log}");
    } else {
        assert!((1..=3).contains(&lines), "{log}");
    }
    assert!(collector.terminate().0.success());
}

#[test]
fn the_pyroscope_push_api_counts_strings_that_are_not_utf8() {
    use profbridge_collector::protocol::push_v1::{
        LabelPair, PushRequest, RawProfileSeries, RawSample,
    };

    let collector = InProcess::start(
        "telemetry-invalid-utf8-push",
        "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [nop]\n  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
    );
    const REPLACED: &str =
        "profbridge_receiver_strings_replaced_total{receiver=\"pyroscope\",transport=\"http\"}";
    let push = PushRequest {
        series: vec![RawProfileSeries {
            labels: vec![LabelPair {
                name: "service_name".to_owned(),
                value: "latin1-app".to_owned(),
            }],
            samples: vec![RawSample {
                raw_profile: invalid_utf8::profile_bytes(),
                id: String::new(),
            }],
        }],
    };
    let body = push.encode_to_vec();
    let address = collector.address("Pyroscope ingest");
    let (status, answer) = exchange(
        address,
        &format!(
            "POST /push.v1.PusherService/Push HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/proto\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ),
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    let count = invalid_utf8::invalid_count();
    assert_eq!(
        value(&scrape(collector.telemetry), REPLACED),
        Some(count as f64),
        "strings replaced in a push"
    );
    assert!(collector.stop().0);
}

const POOL_HITS: &str = "profbridge_request_pool_hits_total";
const POOL_MISSES: &str = "profbridge_request_pool_misses_total";

/// Scrapes until `series` reads `wanted`, for at most 30 s.
fn scrape_until(telemetry: Option<SocketAddr>, series: &str, wanted: f64) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = scrape(telemetry);
        if value(&metrics, series) == Some(wanted) {
            return metrics;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{series} never reached {wanted}:\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The service's request pool: a request the exporters are done with is
/// decoded into again, and `/metrics` counts every decode as a hit or a
/// miss of the pool.
#[test]
fn decoded_requests_are_reused_and_counted() {
    let collector = start_collector("request-pool");
    let request = ebpf_like_request(200, 3);
    let (profiles, _) = profiles_and_samples(&request);
    let before = scrape(collector.telemetry);
    assert_eq!(value(&before, POOL_HITS), Some(0.0), "{before}");
    assert_eq!(value(&before, POOL_MISSES), Some(0.0), "{before}");
    let sent = 5;
    for round in 1..=sent {
        let (status, body) = post_protobuf(collector.http.unwrap(), &request);
        assert_eq!(status, 200, "{body}");
        scrape_until(collector.telemetry, SENT, profiles * f64::from(round));
    }
    let metrics = scrape(collector.telemetry);
    let hits = value(&metrics, POOL_HITS).unwrap();
    let misses = value(&metrics, POOL_MISSES).unwrap();
    assert_eq!(hits + misses, f64::from(sent), "{metrics}");
    assert!(
        misses >= 1.0,
        "the first request has nothing to reuse:\n{metrics}"
    );
    assert!(
        hits >= 1.0,
        "no request was decoded into a pooled one:\n{metrics}"
    );
    assert!(collector.stop().0);
}
