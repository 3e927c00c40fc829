//! The pprof receiver's `remote` source in a real `profbridge serve`:
//! targets that stream 1 GB bodies or send gzip bombs, all scraped at
//! once, are cut off at `max_profile_size`, and the process's peak
//! resident memory (VmHWM) grows by no more than what the concurrent
//! scrapes may hold, while a healthy target beside them is scraped and
//! `/ready` answers 200 throughout.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use profbridge_testkit::corpus_file;

use crate::support::collector::Collector;
use crate::support::http::get;

const MAX_PROFILE_MIB: u64 = 4;
const CONCURRENT: u64 = 8;
const HOSTILE: usize = 4;

/// `VmHWM` of process `pid`, in MiB.
fn peak_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap();
    kib / 1024
}

/// 256 MiB of zeros, gzipped: about 256 KiB.
fn gzip_bomb() -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.finish().unwrap()
}

/// Serves `/huge…` (1 GB of zeros, no declared length), `/bomb…` and
/// anything else (`profile`), a connection per request, each on a thread.
fn serve(profile: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let bodies = Arc::new((profile, gzip_bomb()));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let bodies = Arc::clone(&bodies);
            std::thread::spawn(move || answer(stream, &bodies));
        }
    });
    address
}

fn answer(stream: TcpStream, (profile, bomb): &(Vec<u8>, Vec<u8>)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or("").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let mut stream = stream;
    if path.starts_with("/huge") {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
        let chunk = vec![0u8; 1 << 16];
        for _ in 0..(1 << 14) {
            if stream.write_all(&chunk).is_err() {
                return;
            }
        }
        return;
    }
    let body = if path.starts_with("/bomb") {
        bomb
    } else {
        profile
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// The sum of `name`'s series whose text contains `filter`.
fn metric(metrics: &str, name: &str, filter: &str) -> u64 {
    metrics
        .lines()
        .filter(|line| line.starts_with(name) && line.contains(filter))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[test]
fn hostile_targets_are_cut_off_at_the_cap_and_memory_stays_bounded() {
    let Some(profile) = corpus_file("go.crc32.cpu") else {
        return;
    };
    let address = serve(profile.bytes);
    let mut targets: Vec<String> = (0..HOSTILE)
        .flat_map(|i| {
            [
                format!("http://{address}/huge{i}"),
                format!("http://{address}/bomb{i}"),
            ]
        })
        .collect();
    targets.push(format!("http://{address}/healthy"));
    let config = format!(
        "receivers:\n  pprof:\n    remote:\n      collection_interval: 1s\n      initial_delay: 0s\n      profiles: [goroutine]\n\
         \x20     max_concurrent_scrapes: {CONCURRENT}\n      max_profile_size: {MAX_PROFILE_MIB}MiB\n\
         \x20     targets:\n        - targets: [{}]\n\
         exporters:\n  file:\n    path: {{data}}/out\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
        targets.join(", ")
    );
    let collector = Collector::start("pprof-remote-binary", &config);
    let before = peak_mib(collector.pid());
    let telemetry = collector.telemetry.unwrap();
    let mut metrics = String::new();
    for _ in 0..1800 {
        metrics = get(telemetry, "/metrics").1;
        let cut = metric(
            &metrics,
            "profbridge_scraper_errors_total",
            "reason=\"too_large\"",
        );
        let healthy = metric(&metrics, "profbridge_scraper_scrapes_total", "/healthy\"");
        if cut >= 3 * 2 * HOSTILE as u64 && healthy >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cut = metric(
        &metrics,
        "profbridge_scraper_errors_total",
        "reason=\"too_large\"",
    );
    assert!(cut >= 3 * 2 * HOSTILE as u64, "{metrics}");
    for i in 0..HOSTILE {
        let huge = format!("/huge{i}\"");
        let read = metric(&metrics, "profbridge_scraper_scraped_bytes_total", &huge);
        let scrapes = metric(&metrics, "profbridge_scraper_scrapes_total", &huge);
        assert!(
            read <= scrapes * ((MAX_PROFILE_MIB + 1) << 20),
            "{read} bytes in {scrapes} scrapes of huge{i}"
        );
    }
    assert_eq!(
        get(telemetry, "/ready").0,
        200,
        "targets play no part in readiness"
    );
    assert_eq!(
        metric(&metrics, "profbridge_scraper_errors_total", "/healthy\""),
        0,
        "{metrics}"
    );
    // Each scrape in progress holds at most its body (a vector that
    // doubles: twice the cap) or a bomb's output (the cap).
    let after = peak_mib(collector.pid());
    let bound = CONCURRENT * 2 * MAX_PROFILE_MIB + 64;
    assert!(
        after.saturating_sub(before) <= bound,
        "VmHWM: {before} MiB at start, {after} MiB after the hostile scrapes (bound {bound} MiB above start)"
    );
    let _ = collector.terminate();
}
