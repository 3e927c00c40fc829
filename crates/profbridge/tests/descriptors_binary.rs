//! `profbridge serve` under a limit of open files (issue 27, item 3): the
//! soft limit is raised to the hard one, the receivers' default
//! `max_connections` are derived so that they fit under it with a
//! reserve, and health checks and exports get through while receivers
//! are full of idle connections.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use profbridge_testkit::ebpf_like_request;
use prost::Message;

use crate::support::collector::Collector;
use crate::support::http::get;

/// Both OTLP protocols, a health_check extension and the telemetry
/// endpoint, into a `nop` exporter; idle timeouts stay at their defaults
/// (1 and 3 minutes), longer than the test.
const CONFIG: &str = "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n\
     exporters:\n  nop:\n\
     extensions:\n  health_check:\n    endpoint: 127.0.0.1:0\n\
     service:\n  extensions: [health_check]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n";

/// How long an export may take to be answered.
const EXPORT_WAIT: Duration = Duration::from_secs(10);

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Up to `count` connections to `address` that send nothing: as many as
/// the collector accepts and its listen backlog holds. The first one the
/// kernel does not complete within 3 s (a SYN sent again once) ends the
/// run, as a client facing a full backlog would time out.
fn idle_connections(address: SocketAddr, count: usize) -> Vec<TcpStream> {
    (0..count)
        .map_while(|_| TcpStream::connect_timeout(&address, Duration::from_secs(3)).ok())
        .collect()
}

/// A POST of `body` to the OTLP HTTP receiver, answered within `wait`:
/// its status, or what went wrong.
fn http_export(address: SocketAddr, body: &[u8], wait: Duration) -> Result<u16, String> {
    let mut stream = TcpStream::connect_timeout(&address, wait).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(wait)).unwrap();
    stream.set_write_timeout(Some(wait)).unwrap();
    let head = format!(
        "POST /v1development/profiles HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("sending: {e}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| format!("no answer within {wait:?}: {e}"))?;
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {text:?}"))
}

/// 600 idle connections, twice what the receivers' derived caps take:
/// each receiver holds its cap and closes the oldest silent connection
/// for each new one (fair admission), so descriptors never run out.
/// `/health`, `/ready` and the health_check extension answer, and real
/// exports succeed over HTTP and gRPC while the flood is held.
#[test]
fn under_a_descriptor_limit_health_answers_and_exports_get_through_idle_connections() {
    let collector = Collector::start_logged_with_open_files("descriptors-full", CONFIG, 512, 512);
    let log = collector.log();
    // 512 - (64 for the process + 2 × 10 nop consumers + 64 telemetry + 64
    // health_check) = 300, split between the two listeners.
    assert!(log.contains("open files: limit 512;"), "{log}");
    assert!(
        log.contains(
            "derived: receivers.otlp.protocols.grpc 150, receivers.otlp.protocols.http 150"
        ),
        "{log}"
    );
    let (grpc, http) = (collector.grpc.unwrap(), collector.http.unwrap());
    let telemetry = collector.telemetry.unwrap();
    let health_check = collector.address("health check");

    let mut idle = idle_connections(grpc, 300);
    idle.extend(idle_connections(http, 300));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        idle.len() > 2 * 150,
        "only {} idle connections: the receivers are not full",
        idle.len()
    );
    let open = open_descriptors(collector.pid());
    eprintln!(
        "{open} descriptors open with {} idle connections",
        idle.len()
    );
    assert!(
        open + 128 <= 512,
        "{open} descriptors open: the telemetry endpoint and health_check lack room for their 64 each"
    );

    for (address, path) in [
        (telemetry, "/health"),
        (telemetry, "/ready"),
        (health_check, "/"),
    ] {
        let (status, body) = get(address, path);
        assert_eq!(status, 200, "{path} on {address}: {body}");
    }

    let request = ebpf_like_request(20, 1);
    let body = request.encode_to_vec();
    let started = Instant::now();
    let status = http_export(http, &body, EXPORT_WAIT);
    assert_eq!(
        status,
        Ok(200),
        "OTLP HTTP export with {} idle connections, after {:?}",
        idle.len(),
        started.elapsed()
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let exported = runtime.block_on(async {
        tokio::time::timeout(EXPORT_WAIT, async {
            let mut client = ProfilesServiceClient::connect(format!("http://{grpc}"))
                .await
                .map_err(|e| format!("connecting: {e}"))?;
            client
                .export(request)
                .await
                .map(|_| ())
                .map_err(|status| format!("{status:?}"))
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {EXPORT_WAIT:?}")))
    });
    assert_eq!(exported, Ok(()), "OTLP gRPC export with idle connections");
    drop(runtime);

    drop(idle);
    assert!(collector.terminate().0.success());
}

/// A soft limit below the hard one is raised to it, as Go programs do at
/// start, and the start-up log says so; derived caps stay at the default
/// when the limit leaves room.
#[test]
fn serve_raises_the_soft_limit_of_open_files_to_the_hard_limit() {
    let collector = Collector::start_logged_with_open_files("descriptors-raise", CONFIG, 256, 4096);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", collector.pid())).unwrap();
    let open_files = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        open_files.split_whitespace().collect::<Vec<_>>()[3..5],
        ["4096", "4096"],
        "{open_files}"
    );
    let log = collector.log();
    assert!(
        log.contains("open files: limit 4096 (raised from 256); reserve 212 (64 for the process, 20 for exporters, 128 for the telemetry endpoint and extensions); max_connections written: 0 in all; derived: receivers.otlp.protocols.grpc 1024, receivers.otlp.protocols.http 1024"),
        "{log}"
    );
    assert!(collector.terminate().0.success());
}
