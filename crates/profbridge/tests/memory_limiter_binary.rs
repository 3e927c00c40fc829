//! The `memory_limiter` processor in a real `profbridge serve`: its
//! resident memory is the point. The limit is set a little above the
//! process's idle memory; an exporter that cannot write makes accepted
//! requests pile up in memory until the limiter refuses (HTTP 503 with
//! Retry-After, gRPC UNAVAILABLE); once the exporter writes again and
//! memory falls, requests are taken again, and every request answered OK
//! reaches the exporter's files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use profbridge_testkit::ebpf_like_request;
use prost::Message;
use tonic::Code;

use crate::support::collector::Collector;

/// How long anything here may take before the test gives up: generous,
/// for a loaded machine. Nothing is timed against it.
const PATIENCE: Duration = Duration::from_secs(180);
/// The soft limit above idle memory, and the spike (hard minus soft).
const SOFT_ABOVE_IDLE_MIB: u64 = 128;
const SPIKE_MIB: u64 = 64;
/// How far past the hard limit a collector that does not refuse may grow
/// before the test stops feeding it.
const RUNAWAY_MIB: u64 = 512;
/// The resource attribute each request is told apart by.
const MARK: &str = "test.request";

/// The collector: OTLP in, a memory_limiter, files out under `{data}/out`;
/// queues large enough that only the limiter refuses.
fn config(limit_mib: u64) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n\
         \x20 pprof:\n    endpoint: 127.0.0.1:0\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
         processors:\n  memory_limiter:\n    check_interval: 100ms\n    limit_mib: {limit_mib}\n    spike_limit_mib: {SPIKE_MIB}\n\
         exporters:\n  file:\n    path: {{data}}/out\n    format: otlp\n\
         \x20   sending_queue:\n      queue_size: 100000\n      max_bytes: 8GiB\n\
         \x20   retry_on_failure:\n      initial_interval: 50ms\n      max_interval: 200ms\n      max_elapsed_time: 0\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp, pprof, pyroscope]\n      processors: [memory_limiter]\n      exporters: [file]\n\
         \x20     queue:\n        max_bytes: 8GiB\n        max_requests: 100000\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
    )
}

/// `VmRSS` of process `pid`, in MiB.
fn resident_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap();
    kib / 1024
}

/// A request of its own: `number` in the resource attribute [`MARK`].
fn marked_request(number: u64) -> ExportProfilesServiceRequest {
    let mut request = ebpf_like_request(4000, number);
    for resource_profiles in &mut request.resource_profiles {
        resource_profiles
            .resource
            .get_or_insert_with(Resource::default)
            .attributes
            .push(KeyValue {
                key: MARK.to_owned(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::IntValue(number as i64)),
                }),
                ..KeyValue::default()
            });
    }
    request
}

fn marks(request: &ExportProfilesServiceRequest) -> Vec<i64> {
    request
        .resource_profiles
        .iter()
        .filter_map(|resource_profiles| resource_profiles.resource.as_ref())
        .flat_map(|resource| &resource.attributes)
        .filter(|attribute| attribute.key == MARK)
        .filter_map(
            |attribute| match attribute.value.as_ref()?.value.as_ref()? {
                any_value::Value::IntValue(number) => Some(*number),
                _ => None,
            },
        )
        .collect()
}

/// One OTLP/HTTP protobuf POST: (status, response head).
fn post(address: SocketAddr, request: &ExportProfilesServiceRequest) -> (u16, String) {
    post_raw(
        address,
        "/v1development/profiles",
        "application/x-protobuf",
        &request.encode_to_vec(),
    )
}

/// One HTTP POST of `body` to `path`: (status, response head).
fn post_raw(address: SocketAddr, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let head = response
        .split_once("\r\n\r\n")
        .map_or(response.as_str(), |(head, _)| head)
        .to_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head)
}

fn scrape(telemetry: SocketAddr) -> String {
    let mut stream = TcpStream::connect(telemetry).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {telemetry}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_owned()
}

fn metric(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
}

const REFUSING: &str =
    "profbridge_memory_limiter_refusing{processor=\"memory_limiter\",pipeline=\"profiles\"}";
const REFUSED_HTTP: &str = "profbridge_receiver_refused_requests_total{receiver=\"otlp\",transport=\"http\",reason=\"unavailable\"}";

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if !entry.file_name().to_string_lossy().starts_with('.') {
            files.push(path);
        }
    }
    files
}

fn grpc_export(address: SocketAddr, request: ExportProfilesServiceRequest) -> Result<(), Code> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = ProfilesServiceClient::connect(format!("http://{address}"))
            .await
            .unwrap()
            .max_decoding_message_size(64 << 20);
        client
            .export(request)
            .await
            .map(|_| ())
            .map_err(|status| status.code())
    })
}

#[test]
fn over_the_soft_limit_requests_are_refused_for_retry_and_taken_again_once_memory_falls() {
    // The idle memory of the same collector, with a limit it cannot reach.
    let probe = Collector::start("memory-limiter-idle", &config(1 << 20));
    let idle_mib = resident_mib(probe.pid());
    drop(probe);
    let limit_mib = idle_mib + SOFT_ABOVE_IDLE_MIB + SPIKE_MIB;
    let collector = Collector::start_logged("memory-limiter", &config(limit_mib));
    let (http, grpc, telemetry) = (
        collector.http.unwrap(),
        collector.grpc.unwrap(),
        collector.telemetry.unwrap(),
    );
    let out = collector.data.join("out");
    let away = collector.data.join("out.away");
    let started = Instant::now();
    let mut acknowledged = BTreeSet::new();
    let numbers = Cell::new(0_u64);
    let next_request = || {
        numbers.set(numbers.get() + 1);
        marked_request(numbers.get())
    };
    let send = |acknowledged: &mut BTreeSet<i64>| {
        let request = next_request();
        let (status, head) = post(http, &request);
        match status {
            200 => acknowledged.extend(marks(&request)),
            503 => assert!(
                head.to_ascii_lowercase().contains("retry-after:"),
                "a refusal says when to retry: {head}"
            ),
            other => panic!("answered {other}: {head}"),
        }
        status
    };

    // Writes fail while a plain file stands where the exporter writes:
    // what is accepted stays in memory, retried.
    std::fs::rename(&out, &away).unwrap();
    std::fs::write(&out, b"in the way").unwrap();
    // Refused once memory passes the soft limit, by every receiver, with
    // a code that says to retry. Memory hovers at the limit (releasing
    // memory, or the allocator's own purges, may bring it just below for
    // a moment), so each transport is asked until it refuses, and OTLP
    // requests keep coming meanwhile: what is taken is acknowledged.
    let raw_posts = [
        ("pprof push", "/v1/pprof", "application/octet-stream"),
        (
            "Pyroscope ingest",
            "/ingest?name=app",
            "binary/octet-stream",
        ),
        (
            "Pyroscope ingest",
            "/push.v1.PusherService/Push",
            "application/proto",
        ),
    ];
    let mut http_refused = false;
    let mut grpc_refused = false;
    let mut metrics_refusing = false;
    let mut raw_refused = [false; 3];
    while !(http_refused && grpc_refused && metrics_refusing && raw_refused.iter().all(|r| *r)) {
        assert!(
            started.elapsed() < PATIENCE,
            "not refused by every receiver (HTTP {http_refused}, gRPC {grpc_refused}, \
             metrics {metrics_refusing}, pprof and Pyroscope {raw_refused:?}); resident memory \
             {} MiB, soft limit {} MiB\n{}",
            resident_mib(collector.pid()),
            limit_mib - SPIKE_MIB,
            collector.log()
        );
        let resident = resident_mib(collector.pid());
        assert!(
            resident < limit_mib + RUNAWAY_MIB,
            "resident memory {resident} MiB, far past the limit {limit_mib} MiB, and still taking requests"
        );
        if send(&mut acknowledged) != 503 {
            continue;
        }
        http_refused = true;
        let metrics = scrape(telemetry);
        metrics_refusing |=
            metric(&metrics, REFUSING) == 1.0 && metric(&metrics, REFUSED_HTTP) >= 1.0;
        let request = next_request();
        let request_marks = marks(&request);
        match grpc_export(grpc, request) {
            Err(Code::Unavailable) => grpc_refused = true,
            Ok(()) => acknowledged.extend(request_marks),
            Err(other) => panic!("gRPC answered {other:?}"),
        }
        for ((receiver, path, content_type), refused) in raw_posts.iter().zip(&mut raw_refused) {
            // A body that is no profile: refused for memory before it is
            // read, or else refused as invalid.
            let (status, head) = post_raw(collector.address(receiver), path, content_type, b"data");
            if status == 503 {
                assert!(
                    head.to_ascii_lowercase().contains("retry-after:"),
                    "{path}: {head}"
                );
                *refused = true;
            }
        }
    }
    assert!(
        !acknowledged.is_empty(),
        "requests were taken before the limit"
    );
    assert!(collector
        .log()
        .contains("memory in use is above the soft limit; refusing new data"));

    // The exporter writes again; what was queued drains, memory falls,
    // and requests are taken again.
    std::fs::remove_file(&out).unwrap();
    std::fs::rename(&away, &out).unwrap();
    let unblocked = Instant::now();
    while send(&mut acknowledged) != 200 {
        assert!(
            unblocked.elapsed() < PATIENCE,
            "nothing taken again; resident memory {} MiB\n{}",
            resident_mib(collector.pid()),
            collector.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Taking requests again can lift memory over the soft limit again:
    // later answers are taken or refused for retry (`send` allows nothing
    // else), and the refusing gauge is watched until it reads 0.
    for _ in 0..3 {
        send(&mut acknowledged);
    }
    let falling = Instant::now();
    loop {
        let metrics = scrape(telemetry);
        if metric(&metrics, REFUSING) == 0.0 {
            break;
        }
        assert!(falling.elapsed() < PATIENCE, "still refusing:\n{metrics}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(collector
        .log()
        .contains("memory in use is back below the soft limit"));

    let (status, kept) = collector.terminate();
    assert!(status.success(), "shutdown drained: {status}");
    let written: BTreeSet<i64> = files_under(&kept.path().join("data/out"))
        .iter()
        .map(|path| {
            ExportProfilesServiceRequest::decode(std::fs::read(path).unwrap().as_slice())
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        })
        .flat_map(|request| marks(&request))
        .collect();
    let lost: Vec<_> = acknowledged.difference(&written).collect();
    assert!(
        lost.is_empty(),
        "answered OK but never written: {lost:?} of {}",
        acknowledged.len()
    );
    assert!(
        written.is_subset(&acknowledged),
        "only what was answered OK is written: {:?}",
        written.difference(&acknowledged).collect::<Vec<_>>()
    );
}
