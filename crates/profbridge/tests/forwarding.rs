#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! Forwarding, end to end: two collectors on loopback, A sending to B
//! with the `otlp` or `otlphttp` exporter, fed by a tonic client. What B
//! writes must be what A took in, through outages (in-memory and
//! persistent queues, SIGKILL included), permanent errors (dead letters)
//! and a stalled destination beside a healthy one. The collectors run in
//! the test process, except where a SIGKILL is the point: there A is a
//! real `profbridge serve` process.
//!
//! Every wait is a poll with a generous bound; nothing asserts on speed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_server::{
    ProfilesService, ProfilesServiceServer,
};
use profbridge_pprof::{parse_any, DecodeOptions};
use profbridge_testkit::{corpus_files, ebpf_like_request};
use profbridge_translate::canonical::{canonicalize, Resource};
use profbridge_translate::json::request_from_json;
use profbridge_translate::otlp::{
    key_value, string_value, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};
use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Status};

use crate::support::capture::{independently_decoded, Capture, Captured};
use crate::support::collector::Collector;
use crate::support::in_process::InProcess;

/// The longest any condition is waited for before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Short retries, forever: the destination comes back within the test.
pub(crate) const RETRY_FOREVER: &str = "    retry_on_failure:\n      initial_interval: 100ms\n      max_interval: 500ms\n      max_elapsed_time: 0\n";

// ---- configurations ----

/// B: an OTLP receiver (gRPC on `grpc_endpoint`, HTTP on a free port)
/// writing every request it accepts as an OTLP protobuf file under `{data}`.
fn sink_config(grpc_endpoint: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: {grpc_endpoint}\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n    logs:\n      level: warn\n"
    )
}

/// A: an OTLP gRPC receiver on a free port, the exporters defined by
/// `exporters` (YAML lines under `exporters:`), all in one pipeline.
fn forwarder_config(exporters: &str, pipeline_exporters: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n{exporters}\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{pipeline_exporters}]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n    logs:\n      level: warn\n"
    )
}

/// A free port on 127.0.0.1, for a collector started later: the listener
/// that found it is closed again.
pub(crate) fn reserve_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// ---- requests ----

pub(crate) fn generated(count: u64, first_seed: u64) -> Vec<ExportProfilesServiceRequest> {
    (first_seed..first_seed + count)
        .map(|seed| ebpf_like_request(120, seed))
        .collect()
}

/// Every corpus profile converted to a request of its own, named after
/// its file; empty (after a loud note) without the corpus.
pub(crate) fn corpus_requests() -> Vec<ExportProfilesServiceRequest> {
    corpus_files()
        .iter()
        .map(|file| {
            let (profile, _) = parse_any(&file.bytes, &DecodeOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", file.name));
            let resource = [key_value("service.name", string_value(file.name.clone()))];
            let input = PprofInput {
                profile: &profile,
                resource_attributes: &resource,
                scope: None,
                original_payload: None,
            };
            let converted = pprof_to_otlp(&[input], &ToOtlpOptions::default());
            assert!(converted.rejected.is_empty(), "{}", file.name);
            converted.request
        })
        .collect()
}

pub(crate) fn profile_count(requests: &[ExportProfilesServiceRequest]) -> f64 {
    requests
        .iter()
        .flat_map(|r| &r.resource_profiles)
        .flat_map(|r| &r.scope_profiles)
        .map(|s| s.profiles.len())
        .sum::<usize>() as f64
}

// ---- the client ----

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Sends each request in turn over one gRPC connection, gzip-compressed;
/// returns each answer: `Ok`, or the status code.
pub(crate) fn export_each(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    requests: &[ExportProfilesServiceRequest],
) -> Vec<Result<(), Code>> {
    runtime.block_on(async {
        let mut client = ProfilesServiceClient::connect(format!("http://{address}"))
            .await
            .unwrap()
            .send_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(64 << 20);
        let mut answers = Vec::with_capacity(requests.len());
        for request in requests {
            let answer = tokio::time::timeout(PATIENCE, client.export(request.clone()))
                .await
                .expect("the collector answers");
            answers.push(match answer {
                Ok(response) => {
                    let response = response.into_inner();
                    assert_eq!(response.partial_success, None, "nothing was rejected");
                    Ok(())
                }
                Err(status) => Err(status.code()),
            });
        }
        answers
    })
}

pub(crate) fn export_all_ok(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    requests: &[ExportProfilesServiceRequest],
) {
    let answers = export_each(runtime, address, requests);
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
}

// ---- what collectors wrote ----

/// Files under `dir`, without the hidden ones (files being written).
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
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

/// The OTLP protobuf requests written under `dir`, one per file.
pub(crate) fn requests_under(dir: &Path) -> Vec<ExportProfilesServiceRequest> {
    files_under(dir)
        .iter()
        .filter(|path| path.to_string_lossy().ends_with(".otlp.pb"))
        .map(|path| {
            ExportProfilesServiceRequest::decode(std::fs::read(path).unwrap().as_slice())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn otlp_file_count(dir: &Path) -> usize {
    files_under(dir)
        .iter()
        .filter(|path| path.to_string_lossy().ends_with(".otlp.pb"))
        .count()
}

/// Canonical forms, computed once per request.
fn canonical(requests: &[ExportProfilesServiceRequest]) -> Vec<Vec<Resource>> {
    requests.iter().map(canonicalize).collect()
}

/// `got` holds exactly `expected`, each once, in any order.
fn assert_same_requests(
    what: &str,
    expected: &[ExportProfilesServiceRequest],
    got: &[ExportProfilesServiceRequest],
) {
    assert_same_canonical(what, &canonical(expected), &canonical(got));
}

/// [`assert_same_requests`] on canonical forms already computed.
fn assert_same_canonical(what: &str, expected: &[Vec<Resource>], got: &[Vec<Resource>]) {
    assert_eq!(got.len(), expected.len(), "{what}: number of requests");
    // References, not copies; taken out in order, so that requests written
    // in the order they were sent are each found first.
    let mut left: Vec<&Vec<Resource>> = got.iter().collect();
    for (i, wanted) in expected.iter().enumerate() {
        let at = left
            .iter()
            .position(|candidate| *candidate == wanted)
            .unwrap_or_else(|| panic!("{what}: request {i} is missing or changed"));
        left.remove(at);
    }
}

/// Every one of `expected` is in `got` at least once, and `got` holds
/// nothing else (at-least-once delivery: duplicates are allowed).
fn missing_or_strangers(
    expected: &[Vec<Resource>],
    got: &[ExportProfilesServiceRequest],
) -> Option<String> {
    let got = canonical(got);
    if let Some(i) = expected.iter().position(|wanted| !got.contains(wanted)) {
        return Some(format!("request {i} has not arrived"));
    }
    got.iter()
        .position(|candidate| !expected.contains(candidate))
        .map(|i| format!("file {i} holds a request that was not sent"))
}

// ---- waiting and metrics ----

/// Polls `done` until it holds; fails after [`PATIENCE`].
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < PATIENCE,
            "gave up after {PATIENCE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `GET /metrics` from the collector's telemetry endpoint.
pub(crate) fn scrape(telemetry: Option<SocketAddr>) -> String {
    let address = telemetry.expect("telemetry is on");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// The value of one series (name and labels as printed); fails when the
/// collector does not serve it.
pub(crate) fn metric(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
}

fn exporter_series(name: &str, exporter: &str) -> String {
    format!("profbridge_exporter_{name}{{exporter=\"{exporter}\"}}")
}

pub(crate) fn exporter_metric(telemetry: Option<SocketAddr>, name: &str, exporter: &str) -> f64 {
    metric(&scrape(telemetry), &exporter_series(name, exporter))
}

// ---- a fake destination ----

#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Answers every export with INVALID_ARGUMENT: a permanent failure.
    Reject,
    /// Never answers.
    Stall,
}

struct FakeDestination {
    behaviour: Behaviour,
    calls: Arc<AtomicUsize>,
}

#[tonic::async_trait]
impl ProfilesService for FakeDestination {
    async fn export(
        &self,
        _request: tonic::Request<ExportProfilesServiceRequest>,
    ) -> Result<tonic::Response<ExportProfilesServiceResponse>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Reject => Err(Status::invalid_argument("these profiles are not wanted")),
            Behaviour::Stall => std::future::pending().await,
        }
    }
}

/// Starts the fake destination on `runtime`; returns its address and the
/// count of export calls it has seen.
fn fake_destination(
    runtime: &tokio::runtime::Runtime,
    behaviour: Behaviour,
) -> (SocketAddr, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = FakeDestination {
        behaviour,
        calls: Arc::clone(&calls),
    };
    let address = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = ProfilesServiceServer::new(service)
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Zstd)
            .max_decoding_message_size(64 << 20);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(server)
                .serve_with_incoming(TcpIncoming::from(listener)),
        );
        address
    });
    (address, calls)
}

// ---- 1. chains ----

/// Starts B, then A with the exporter `id`, defined by `exporter(&b)`, and
/// an OTLP file sink; sends generated and corpus requests to A; B must
/// write exactly what A received (and wrote itself).
fn chain(label: &str, id: &str, exporter: impl Fn(&InProcess) -> String) {
    let b = InProcess::start(&format!("{label}-b"), &sink_config("127.0.0.1:0"));
    let exporters = format!(
        "{}  file:\n    path: {{data}}\n    format: otlp\n",
        exporter(&b)
    );
    let a = InProcess::start(
        &format!("{label}-a"),
        &forwarder_config(&exporters, &format!("{id}, file")),
    );
    let mut requests = generated(3, 1);
    requests.extend(corpus_requests());
    let runtime = runtime();
    export_all_ok(&runtime, a.grpc.unwrap(), &requests);

    let count = requests.len();
    wait_until("A to write every request", || {
        otlp_file_count(&a.data) >= count
    });
    wait_until("B to write every request A forwarded", || {
        otlp_file_count(&b.data) >= count
    });
    // Each side's canonical forms once: they are most of this test's time.
    let received_by_a = canonical(&requests_under(&a.data));
    assert_same_canonical(
        &format!("{label}: A wrote"),
        &canonical(&requests),
        &received_by_a,
    );
    assert_same_canonical(
        &format!("{label}: B wrote"),
        &received_by_a,
        &canonical(&requests_under(&b.data)),
    );
    // A counts a request sent once B's answer is in, which may come after
    // B wrote it.
    wait_until("A to count every profile sent", || {
        exporter_metric(a.telemetry, "sent_profiles_total", id) == profile_count(&requests)
    });

    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    let (drained, _) = b.stop();
    assert!(drained, "B did not export everything it accepted");
}

#[test]
fn a_grpc_chain_delivers_what_the_first_collector_received() {
    chain("fwd-chain-grpc", "otlp/forward", |b| {
        format!(
            "  otlp/forward:\n    endpoint: http://{}\n    timeout: 30s\n",
            b.grpc.unwrap()
        )
    });
}

#[test]
fn an_http_protobuf_chain_delivers_what_the_first_collector_received() {
    chain("fwd-chain-http-proto", "otlphttp/forward", |b| {
        format!(
            "  otlphttp/forward:\n    endpoint: http://{}\n    encoding: proto\n    timeout: 30s\n",
            b.http.unwrap()
        )
    });
}

#[test]
fn an_http_json_chain_delivers_what_the_first_collector_received() {
    chain("fwd-chain-http-json", "otlphttp/forward", |b| {
        format!(
            "  otlphttp/forward:\n    endpoint: http://{}\n    encoding: json\n    compression: zstd\n    timeout: 30s\n",
            b.http.unwrap()
        )
    });
}

// ---- 2. an outage with an in-memory queue ----

#[test]
fn an_outage_loses_nothing_within_the_queue_and_refuses_the_rest() {
    const QUEUE: usize = 4;
    const SENT: u64 = 10;
    let port = reserve_port();
    let exporters = format!(
        "  otlp:\n    endpoint: http://127.0.0.1:{port}\n    timeout: 30s\n    sending_queue:\n      queue_size: {QUEUE}\n      num_consumers: 2\n{RETRY_FOREVER}"
    );
    let a = InProcess::start("fwd-outage-a", &forwarder_config(&exporters, "otlp"));
    let requests = generated(SENT, 100);
    let runtime = runtime();

    // B is down: the queue takes the first QUEUE requests (they stay in it,
    // being retried); each later one finds the pipeline's only exporter
    // full, so the receiver refuses it with UNAVAILABLE before decoding it,
    // and the client retries.
    let answers = export_each(&runtime, a.grpc.unwrap(), &requests);
    let (accepted, refused) = requests.split_at(QUEUE);
    for (i, answer) in answers.iter().enumerate() {
        if i < QUEUE {
            assert_eq!(*answer, Ok(()), "request {i}: {answers:?}");
        } else {
            assert_eq!(*answer, Err(Code::Unavailable), "request {i}: {answers:?}");
        }
    }
    let metrics = scrape(a.telemetry);
    let series = |name| exporter_series(name, "otlp");
    assert_eq!(
        metric(&metrics, &series("enqueue_failed_profiles_total")),
        0.0,
        "refused before the queue was offered them"
    );
    assert_eq!(metric(&metrics, &series("queue_size")), QUEUE as f64);
    assert_eq!(metric(&metrics, &series("sent_profiles_total")), 0.0);
    assert_eq!(metric(&metrics, &series("send_failed_profiles_total")), 0.0);
    // The receiver counts as accepted only what the queue took.
    let receiver =
        |name: &str| format!("profbridge_receiver_{name}{{receiver=\"otlp\",transport=\"grpc\"}}");
    assert_eq!(
        metric(&metrics, &receiver("accepted_profiles_total")),
        profile_count(accepted)
    );
    assert_eq!(
        metric(
            &metrics,
            "profbridge_receiver_refused_requests_total{receiver=\"otlp\",transport=\"grpc\",reason=\"unavailable\"}"
        ),
        refused.len() as f64
    );

    // B comes up where A is sending: every request A answered OK arrives,
    // once, and none of those it refused.
    let b = InProcess::start("fwd-outage-b", &sink_config(&format!("127.0.0.1:{port}")));
    wait_until("A's queue to drain into B", || {
        let metrics = scrape(a.telemetry);
        metric(&metrics, &series("queue_size")) == 0.0
            && metric(&metrics, &series("sent_profiles_total")) == profile_count(accepted)
    });
    // B answers once its queues have a request, and writes it after.
    wait_until("B to write what it took", || {
        otlp_file_count(&b.data) >= QUEUE
    });
    assert_same_requests("B after the outage", accepted, &requests_under(&b.data));

    // The client's retry of a refused request now goes through.
    export_all_ok(&runtime, a.grpc.unwrap(), &refused[..1]);
    wait_until("the retried request to reach B", || {
        otlp_file_count(&b.data) > QUEUE
    });
    assert_same_requests(
        "B after a retry",
        &requests[..=QUEUE],
        &requests_under(&b.data),
    );
    assert_eq!(
        exporter_metric(a.telemetry, "enqueue_failed_profiles_total", "otlp"),
        0.0,
        "nothing was dropped"
    );

    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    let (drained, _) = b.stop();
    assert!(drained, "B did not export everything it accepted");
}

// ---- 3. a persistent queue across SIGKILL ----

#[test]
fn a_persistent_queue_delivers_after_sigkill_and_restart() {
    persistent_queue_survives_sigkill("fwd-persistent", "{data}/queue", "", |data| {
        data.join("queue").join("otlp")
    });
}

/// The Collector's spelling: the queue in a `file_storage` extension,
/// under its directory in the entry the Collector would name.
#[test]
fn a_file_storage_queue_delivers_after_sigkill_and_restart() {
    let extension = "extensions:\n  file_storage/queue:\n    directory: {data}/storage\n    create_directory: true\n    timeout: 1s\n    compaction:\n      on_start: true\n      directory: /tmp\n";
    persistent_queue_survives_sigkill(
        "fwd-file-storage",
        "file_storage/queue",
        extension,
        |data| data.join("storage").join("exporter_otlp__profiles"),
    );
}

/// A forwarder whose `otlp` exporter keeps its queue in `storage`
/// (with `extensions`, YAML for the top-level section, listed in
/// `service.extensions`); `queue_dir` is where the queue must be, under
/// the data folder. What A answered OK reaches B across two SIGKILLs,
/// as the bytes A received: the gzipped messages themselves, which
/// Python's opentelemetry-proto reads as what the client sent.
fn persistent_queue_survives_sigkill(
    label: &str,
    storage: &str,
    extensions: &str,
    queue_dir: impl Fn(&Path) -> PathBuf,
) {
    const SENT: u64 = 5;
    let port = reserve_port();
    let exporters = format!(
        "  otlp:\n    endpoint: http://127.0.0.1:{port}\n    timeout: 30s\n    sending_queue:\n      storage: {storage}\n{RETRY_FOREVER}"
    );
    let mut config = forwarder_config(&exporters, "otlp");
    if !extensions.is_empty() {
        let listed: Vec<&str> = extensions
            .lines()
            .filter_map(|line| line.strip_prefix("  ")?.strip_suffix(':'))
            .filter(|id| !id.starts_with(' '))
            .collect();
        config = config.replace(
            "service:\n",
            &format!(
                "{extensions}service:\n  extensions: [{}]\n",
                listed.join(", ")
            ),
        );
    }
    let a = Collector::start(&format!("{label}-a"), &config);
    let queue_dir = queue_dir(&a.data);
    let requests: Vec<_> = (200..200 + SENT)
        .map(|seed| profbridge_testkit::ebpf_profiler_request(120, seed))
        .collect();
    let expected = canonical(&requests);
    // As pdata writes them, so that what B gets shows whether they were
    // passed through.
    let sent: Vec<Vec<u8>> = requests.iter().map(pdata_bytes).collect();
    let gzipped: Vec<Vec<u8>> = sent.iter().map(|bytes| gzip(bytes)).collect();
    let runtime = runtime();
    // OK means on disk (fsynced).
    for message in &gzipped {
        let answer = grpc_export_message(&runtime, a.grpc.unwrap(), "gzip", message);
        assert_eq!(answer.partial_success, None);
    }
    assert_eq!(
        exporter_metric(a.telemetry, "queue_size", "otlp"),
        SENT as f64
    );
    let stored = files_under(&queue_dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
        .count();
    assert!(stored > 0, "nothing stored in {}", queue_dir.display());

    // A crash: no shutdown, nothing drained.
    let a = Collector::restart(a.kill());
    assert_eq!(
        exporter_metric(a.telemetry, "queue_size", "otlp"),
        SENT as f64,
        "every stored request is queued again at start"
    );
    let b = Capture::start_at(&runtime, &format!("127.0.0.1:{port}"));
    let got = || {
        b.seen()
            .iter()
            .map(|c| ExportProfilesServiceRequest::decode(c.protobuf().as_slice()).unwrap())
            .collect::<Vec<_>>()
    };
    let mut problem = None;
    wait_until("every stored request to reach B", || {
        problem = missing_or_strangers(&expected, &got());
        problem.is_none()
    });
    wait_until("A's persistent queue to be empty", || {
        exporter_metric(a.telemetry, "queue_size", "otlp") == 0.0
    });
    // Replayed after the crash, still as they arrived: compressed.
    let seen = b.seen();
    for c in &seen {
        assert_eq!(
            (c.encoding.as_str(), c.compressed_flag),
            ("gzip", Some(true))
        );
        assert!(
            gzipped.contains(&c.message),
            "B got a request compressed again"
        );
    }
    let metrics = scrape(a.telemetry);
    assert_eq!(
        sent_requests(&metrics, "otlp", "as_received"),
        seen.len() as f64
    );
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = seen
        .iter()
        .map(|c| {
            let protobuf = c.protobuf();
            let at = sent.iter().position(|s| *s == protobuf).unwrap();
            (protobuf, sent[at].clone())
        })
        .collect();
    if let Some(decoded) = independently_decoded(&pairs) {
        assert!(decoded.iter().all(|d| d.equal), "{decoded:?}");
    }

    // What was delivered is marked done on disk: a second crash and
    // restart has nothing left to send.
    let a = Collector::restart(a.kill());
    assert_eq!(exporter_metric(a.telemetry, "queue_size", "otlp"), 0.0);
    let segments: Vec<PathBuf> = files_under(&queue_dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
        .collect();
    assert!(
        segments.is_empty(),
        "segments whose requests are all done are deleted: {segments:?}"
    );
    let (status, _) = a.terminate();
    assert!(status.success(), "A: {status}");
}

// ---- 4. permanent errors ----

#[test]
fn permanent_errors_are_sent_once_and_kept_as_dead_letters() {
    let runtime = runtime();
    let (address, calls) = fake_destination(&runtime, Behaviour::Reject);
    let exporters = format!(
        "  otlp:\n    endpoint: http://{address}\n    timeout: 30s\n    dead_letter: {{data}}/dead\n{RETRY_FOREVER}"
    );
    let a = InProcess::start("fwd-dead-letter", &forwarder_config(&exporters, "otlp"));
    let dead = a.data.join("dead");
    let mut requests = generated(3, 300);
    requests.extend(corpus_requests().into_iter().take(1));
    export_all_ok(&runtime, a.grpc.unwrap(), &requests);

    wait_until("one dead letter per request", || {
        otlp_file_count(&dead) >= requests.len()
    });
    // A dead letter is written once the request failed for good: any
    // retry would have come before it.
    assert_eq!(calls.load(Ordering::SeqCst), requests.len(), "no retries");
    let letters = files_under(&dead);
    assert_eq!(letters.len(), requests.len(), "{letters:?}");
    for letter in &letters {
        let name = letter.file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with("otlp-") && name.ends_with(".otlp.pb"),
            "{name}"
        );
    }
    assert_same_requests("dead letters", &requests, &requests_under(&dead));
    let metrics = scrape(a.telemetry);
    let series = |name| exporter_series(name, "otlp");
    assert_eq!(
        metric(&metrics, &series("send_failed_profiles_total")),
        profile_count(&requests)
    );
    assert_eq!(metric(&metrics, &series("sent_profiles_total")), 0.0);
    wait_until("A's queue to let go of the dead letters", || {
        exporter_metric(a.telemetry, "queue_size", "otlp") == 0.0
    });

    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    assert_eq!(calls.load(Ordering::SeqCst), requests.len());
}

// ---- 5. a stalled destination beside a healthy one ----

#[test]
fn a_stalled_destination_does_not_hold_back_the_other_exporter() {
    const QUEUE: usize = 4;
    let runtime = runtime();
    let (address, calls) = fake_destination(&runtime, Behaviour::Stall);
    let exporters = format!(
        "  otlp/stalled:\n    endpoint: http://{address}\n    timeout: 1s\n    sending_queue:\n      queue_size: {QUEUE}\n      num_consumers: 2\n{RETRY_FOREVER}\
         \x20 file:\n    path: {{data}}\n    format: otlp\n"
    );
    let a = InProcess::start(
        "fwd-isolation",
        &forwarder_config(&exporters, "otlp/stalled, file"),
    );
    let requests = generated(QUEUE as u64 + 1, 400);
    let answers = export_each(&runtime, a.grpc.unwrap(), &requests);
    let (within, beyond) = requests.split_at(QUEUE);
    // Within the stalled exporter's queue, A answers OK; beyond it, that
    // queue drops the request and A answers UNAVAILABLE.
    let expected: Vec<Result<(), Code>> = within
        .iter()
        .map(|_| Ok(()))
        .chain(beyond.iter().map(|_| Err(Code::Unavailable)))
        .collect();
    assert_eq!(answers, expected);

    // The file exporter gets every request, the dropped one included.
    wait_until("the file exporter to write every request", || {
        otlp_file_count(&a.data) >= requests.len()
    });
    assert_same_requests("file exporter", &requests, &requests_under(&a.data));
    wait_until("the stalled destination to be tried", || {
        calls.load(Ordering::SeqCst) > 0
    });
    let metrics = scrape(a.telemetry);
    let stalled = |name| exporter_series(name, "otlp/stalled");
    assert_eq!(metric(&metrics, &stalled("sent_profiles_total")), 0.0);
    assert_eq!(metric(&metrics, &stalled("queue_size")), QUEUE as f64);
    assert_eq!(
        metric(&metrics, &stalled("enqueue_failed_profiles_total")),
        profile_count(beyond)
    );
    let file = |name| exporter_series(name, "file");
    wait_until("the file exporter to count every profile", || {
        exporter_metric(a.telemetry, "sent_profiles_total", "file") == profile_count(&requests)
    });
    assert_eq!(
        metric(&metrics, &file("enqueue_failed_profiles_total")),
        0.0
    );
    // A is killed on drop: a clean shutdown would wait for the stalled
    // exporter.
    drop(a);
}

// ---- 6. otlp_json appends across SIGKILL ----

/// Sends `requests` over and over to `address` until `stop` is set or the
/// collector goes away; answers are not looked at (a kill cuts them off).
fn send_until_stopped(
    address: SocketAddr,
    requests: Arc<Vec<ExportProfilesServiceRequest>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let Ok(client) = ProfilesServiceClient::connect(format!("http://{address}")).await
            else {
                return;
            };
            let mut client = client.max_decoding_message_size(64 << 20);
            for request in requests.iter().cycle() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let sent = tokio::time::timeout(PATIENCE, client.export(request.clone())).await;
                if !matches!(sent, Ok(Ok(_))) {
                    return;
                }
            }
        });
    })
}

fn json_lines_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect()
}

/// Every line of every JSON lines file under `dir` is a whole request;
/// returns how many there are.
fn assert_every_line_parses(dir: &Path) -> usize {
    let mut lines = 0;
    for path in json_lines_files(dir) {
        let text = std::fs::read(&path).unwrap();
        assert!(
            text.is_empty() || text.ends_with(b"\n"),
            "{path:?} ends in a cut line"
        );
        for (number, line) in text.split(|&byte| byte == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            if let Err(error) = request_from_json(line) {
                panic!("{path:?} line {}: {error}", number + 1);
            }
            lines += 1;
        }
    }
    lines
}

#[test]
fn otlp_json_lines_are_whole_after_sigkill_and_crash_leftovers_are_removed() {
    const KILLS: u64 = 6;
    let config = forwarder_config("  file:\n    path: {data}\n    format: otlp_json\n", "file");
    let requests = Arc::new(
        (0..3)
            .map(|seed| ebpf_like_request(3000, 700 + seed))
            .collect::<Vec<_>>(),
    );
    let mut collector = Collector::start("json-sigkill", &config);
    let data = collector.data.clone();
    for kill in 0..KILLS {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sender = send_until_stopped(collector.grpc.unwrap(), requests.clone(), stop.clone());
        // Kills land at different points of the writes: 0.3 to 1.3 s in.
        std::thread::sleep(Duration::from_millis(300 + (kill * 397) % 1000));
        collector = Collector::restart(collector.kill());
        stop.store(true, Ordering::SeqCst);
        sender.join().unwrap();
        assert_every_line_parses(&data);
    }

    // What a kill in the middle of a write leaves, planted for certain: a
    // line cut short at the end of a file, and a temporary file. A loaded
    // machine may have let no kill above find a whole line written.
    export_all_ok(&runtime(), collector.grpc.unwrap(), &requests[..1]);
    // Written whole: the files end with a line end and stay the same for a
    // while (a request may be written as several lines, and the kill below
    // must not cut one of them).
    let started = Instant::now();
    let settled = || -> Option<Vec<Vec<u8>>> {
        let texts: Vec<Vec<u8>> = json_lines_files(&data)
            .iter()
            .filter_map(|path| std::fs::read(path).ok())
            .collect();
        let whole = !texts.is_empty() && texts.iter().all(|text| text.ends_with(b"\n"));
        whole.then_some(texts)
    };
    loop {
        assert!(started.elapsed() < PATIENCE, "no JSON line was written");
        if let Some(before) = settled() {
            std::thread::sleep(Duration::from_millis(300));
            if settled().as_ref() == Some(&before) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = collector.kill();
    let file = json_lines_files(&data)
        .into_iter()
        .next()
        .expect("a JSON lines file");
    let whole = std::fs::read(&file).unwrap();
    let first_line = whole.split(|&byte| byte == b'\n').next().unwrap();
    let mut cut = whole.clone();
    cut.extend_from_slice(&first_line[..first_line.len() / 2]);
    std::fs::write(&file, &cut).unwrap();
    let temp = file.with_file_name(format!(".profbridge-{}-0.tmp", u32::MAX - 1));
    std::fs::write(&temp, &first_line[..100]).unwrap();

    let collector = Collector::restart(dir);
    assert!(!temp.exists(), "a dead process's temporary file is removed");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        whole,
        "the cut line is removed"
    );
    export_all_ok(&runtime(), collector.grpc.unwrap(), &requests[..1]);
    let (status, _dir) = collector.terminate();
    assert!(status.success(), "{status}");
    let lines = assert_every_line_parses(&data);
    let whole_lines = whole.iter().filter(|&&byte| byte == b'\n').count();
    assert!(
        lines > whole_lines,
        "{lines} lines, {whole_lines} before the last request"
    );
}

// ---- producers' encodings, end to end ----

/// Sample totals by `type/unit` over every pprof file under `dir`.
fn pprof_totals_under(dir: &Path) -> std::collections::BTreeMap<String, i64> {
    let mut totals = std::collections::BTreeMap::new();
    for path in files_under(dir) {
        let (profile, _) = parse_any(&std::fs::read(&path).unwrap(), &DecodeOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = |index: i64| profile.string_table[usize::try_from(index).unwrap()].clone();
        for (i, sample_type) in profile.sample_type.iter().enumerate() {
            let key = format!("{}/{}", text(sample_type.r#type), text(sample_type.unit));
            let total: i64 = profile.sample.iter().map(|s| s.value[i]).sum();
            *totals.entry(key).or_default() += total;
        }
    }
    totals
}

/// Polls until the pprof files under `dir` hold `expected`; fails after
/// [`PATIENCE`], showing what they held.
fn wait_for_totals(what: &str, dir: &Path, expected: &std::collections::BTreeMap<String, i64>) {
    let started = Instant::now();
    loop {
        let totals = pprof_totals_under(dir);
        if &totals == expected {
            return;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "{what}: gave up after {PATIENCE:?}: totals {totals:?}, expected {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A request as the OTel eBPF profiler sends it through the Collector's
/// pdata library, byte for byte (`attribute_table[0]` as `12 00`, fields
/// in descending order, timestamps-only `cpu` samples beside an `off_cpu`
/// profile, kernel, native and interpreted frames, several build ids per
/// mapping), sent by gRPC and by HTTP to A, which batches them (merged,
/// then split), writes pprof files and forwards them with the `otlp`
/// exporter to B, which writes pprof files too: nothing is refused, and
/// both hold the totals of each sample type.
#[test]
fn a_pdata_encoded_ebpf_profiler_request_is_accepted_written_and_forwarded() {
    use profbridge_testkit::{ebpf_profiler_request, pdata_encode};

    let pprof_sink = |receivers: &str| {
        format!(
            "receivers:\n  otlp:\n    protocols:\n{receivers}\
             exporters:\n  file:\n    path: {{data}}\n    format: pprof\n{{forward}}\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file{{forward_id}}]\n\
             \x20 telemetry:\n    metrics:\n      address: \"\"\n    logs:\n      level: warn\n"
        )
    };
    let b_config = pprof_sink("      grpc:\n        endpoint: 127.0.0.1:0\n")
        .replace("{forward}", "")
        .replace("{forward_id}", "");
    let b = InProcess::start("fwd-pdata-b", &b_config);
    let a_config = pprof_sink(
        "      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n",
    )
    .replace(
        "{forward}",
        &format!(
            "  otlp/forward:\n    endpoint: http://{}\n    timeout: 30s\n",
            b.grpc.unwrap()
        ),
    )
    .replace("{forward_id}", ", otlp/forward")
    // Batches of two requests (merged), split into pieces of at most 16 KiB
    // (pruned dictionaries).
    .replace(
        "service:\n",
        "processors:\n  batch:\n    send_batch_size: 1000\n    send_batch_max_size: 1000\n    send_batch_max_bytes: 16KiB\nservice:\n",
    )
    .replace(
        "      receivers: [otlp]\n",
        "      receivers: [otlp]\n      processors: [batch]\n",
    );
    let a = InProcess::start("fwd-pdata-a", &a_config);

    let request = ebpf_profiler_request(300, 17);
    let bytes = pdata_encode(&request);
    assert!(
        bytes.windows(4).any(|w| w == [0x32, 0x02, 0x12, 0x00]),
        "attribute_table[0] is written as pdata writes it"
    );
    let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
    let observations: usize = profiles[0]
        .samples
        .iter()
        .map(|s| s.timestamps_unix_nano.len())
        .sum();
    assert!(profiles[0].samples.iter().all(|s| s.values.is_empty()));
    let off_cpu: i64 = profiles[1].samples.iter().flat_map(|s| &s.values).sum();
    // Sent twice: once by gRPC, once by HTTP.
    let expected: std::collections::BTreeMap<String, i64> = [
        (
            "samples/count".to_owned(),
            2 * i64::try_from(observations).unwrap(),
        ),
        ("off_cpu/nanoseconds".to_owned(), 2 * off_cpu),
    ]
    .into_iter()
    .collect();

    let runtime = runtime();
    // gRPC, uncompressed, the message as pdata wrote it.
    let answer = grpc_export_bytes(&runtime, a.grpc.unwrap(), &bytes, false);
    assert_eq!(answer.partial_success, None, "gRPC: nothing was rejected");
    let answer = http_export_bytes(&runtime, a.http.unwrap(), &bytes);
    assert_eq!(answer.partial_success, None, "HTTP: nothing was rejected");

    wait_for_totals("A's pprof files", &a.data, &expected);
    wait_for_totals("B's pprof files", &b.data, &expected);
    // Two requests of two profiles each make four pprofs unsplit.
    let written = files_under(&a.data).len();
    assert!(
        written > 4,
        "the batch processor split the requests: {written} files"
    );
    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    let (drained, _) = b.stop();
    assert!(drained, "B did not export everything it accepted");
}

// ---- 8. pass-through ----

/// `request` as the Collector's pdata writes it: bytes our own encoder
/// writes differently, so that arriving unchanged at B proves they were
/// forwarded, not encoded again.
fn pdata_bytes(request: &ExportProfilesServiceRequest) -> Vec<u8> {
    let bytes = profbridge_testkit::pdata_encode(request);
    assert_ne!(
        bytes,
        request.encode_to_vec(),
        "pdata and our encoder write this request differently"
    );
    bytes
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(bytes, 3).unwrap()
}

/// Sends `message`, protobuf, as one gRPC `Export` to `address`, gzipped
/// or not; returns the answer.
fn grpc_export_bytes(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    message: &[u8],
    gzip: bool,
) -> ExportProfilesServiceResponse {
    if gzip {
        grpc_export_message(runtime, address, "gzip", &self::gzip(message))
    } else {
        grpc_export_message(runtime, address, "identity", message)
    }
}

/// Sends `payload`, a message compressed with `encoding` (`identity`,
/// `gzip`, `zstd`), as one gRPC `Export` to `address`; returns the answer.
fn grpc_export_message(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    encoding: &str,
    payload: &[u8],
) -> ExportProfilesServiceResponse {
    let compressed = encoding != "identity";
    let mut body = vec![u8::from(compressed)];
    body.extend(u32::try_from(payload.len()).unwrap().to_be_bytes());
    body.extend(payload);
    runtime.block_on(async {
        let mut request = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap()
            .post(format!(
                "http://{address}/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
            ))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if compressed {
            request = request.header("grpc-encoding", encoding);
        }
        let response = request.body(body).send().await.unwrap();
        let refusal = response.headers().get("grpc-message").cloned();
        assert_eq!(
            response.headers().get("grpc-status"),
            None,
            "a trailers-only answer is a refusal: {refusal:?}"
        );
        let answer = response.bytes().await.unwrap();
        assert!(answer.len() >= 5, "a response message: {answer:?}");
        ExportProfilesServiceResponse::decode(&answer[5..]).unwrap()
    })
}

/// Sends `message`, protobuf, uncompressed, as one OTLP/HTTP request.
fn http_export_bytes(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    message: &[u8],
) -> ExportProfilesServiceResponse {
    http_export_body(runtime, address, "identity", message)
}

/// Sends `body`, protobuf compressed with `encoding`, as one OTLP/HTTP
/// request.
fn http_export_body(
    runtime: &tokio::runtime::Runtime,
    address: SocketAddr,
    encoding: &str,
    body: &[u8],
) -> ExportProfilesServiceResponse {
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .post(format!("http://{address}/v1development/profiles"))
            .header("content-type", "application/x-protobuf");
        if encoding != "identity" {
            request = request.header("content-encoding", encoding);
        }
        let response = request.body(body.to_vec()).send().await.unwrap();
        let status = response.status();
        let answer = response.bytes().await.unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        ExportProfilesServiceResponse::decode(answer.as_ref()).unwrap()
    })
}

/// The bytes of every OTLP protobuf file under `dir`.
fn otlp_files(dir: &Path) -> Vec<Vec<u8>> {
    files_under(dir)
        .iter()
        .filter(|path| path.to_string_lossy().ends_with(".otlp.pb"))
        .map(|path| std::fs::read(path).unwrap())
        .collect()
}

/// What our encoder writes for the request `bytes` decode to is `bytes`
/// itself: the request was encoded again on the way.
fn encoded_by_us(bytes: &[u8]) -> bool {
    ExportProfilesServiceRequest::decode(bytes)
        .unwrap()
        .encode_to_vec()
        == bytes
}

/// A with OTLP gRPC and HTTP receivers, `processors` (YAML under
/// `processors:`, or empty) in its pipeline, and `exporters` (whose ids
/// are `ids`).
fn pass_through_forwarder(processors: &str, exporters: &str, ids: &str) -> String {
    let mut config = forwarder_config(exporters, ids).replace(
        "        endpoint: 127.0.0.1:0\n",
        "        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n",
    );
    if !processors.is_empty() {
        let listed: Vec<&str> = processors
            .lines()
            .filter_map(|line| line.strip_prefix("  ")?.strip_suffix(':'))
            .filter(|id| !id.starts_with(' '))
            .collect();
        config = config
            .replace(
                "service:\n",
                &format!("processors:\n{processors}service:\n"),
            )
            .replace(
                "      receivers: [otlp]\n",
                &format!(
                    "      receivers: [otlp]\n      processors: [{}]\n",
                    listed.join(", ")
                ),
            );
    }
    config
}

/// Unchanged requests reach B as the bytes A received, whichever
/// transport brought them and whatever compression each hop uses; A
/// counts them as sent all the same.
#[test]
fn unchanged_requests_are_forwarded_as_the_bytes_that_arrived() {
    use profbridge_testkit::ebpf_profiler_request;

    let b = InProcess::start("pass-through-b", &sink_config("127.0.0.1:0"));
    let exporters = format!(
        "  otlp/gzip:\n    endpoint: http://{grpc}\n    timeout: 30s\n\
         \x20 otlp/plain:\n    endpoint: http://{grpc}\n    compression: none\n    timeout: 30s\n\
         \x20 otlphttp/proto:\n    endpoint: http://{http}\n    encoding: proto\n    timeout: 30s\n",
        grpc = b.grpc.unwrap(),
        http = b.http.unwrap()
    );
    let a = InProcess::start(
        "pass-through-a",
        &pass_through_forwarder("", &exporters, "otlp/gzip, otlp/plain, otlphttp/proto"),
    );
    let requests = [
        ebpf_profiler_request(300, 17),
        ebpf_profiler_request(50, 18),
    ];
    let sent: Vec<Vec<u8>> = requests.iter().map(pdata_bytes).collect();
    let runtime = runtime();
    for bytes in &sent {
        for gzip in [true, false] {
            let answer = grpc_export_bytes(&runtime, a.grpc.unwrap(), bytes, gzip);
            assert_eq!(answer.partial_success, None);
        }
        let answer = http_export_bytes(&runtime, a.http.unwrap(), bytes);
        assert_eq!(answer.partial_success, None);
    }

    // Each request, three times in, leaves by three exporters.
    let expected = sent.len() * 3 * 3;
    wait_until("B to write every request A forwarded", || {
        otlp_file_count(&b.data) >= expected
    });
    let written = otlp_files(&b.data);
    assert_eq!(written.len(), expected);
    for bytes in &sent {
        let copies = written.iter().filter(|file| *file == bytes).count();
        assert_eq!(copies, 9, "B wrote the bytes sent to A, unchanged");
    }
    let profiles = 9.0 * profile_count(&requests);
    for id in ["otlp/gzip", "otlp/plain", "otlphttp/proto"] {
        wait_until("A to count every profile sent", || {
            exporter_metric(a.telemetry, "sent_profiles_total", id) * 3.0 == profiles
        });
    }
    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    let (drained, _) = b.stop();
    assert!(drained, "B did not export everything it accepted");
}

/// `profbridge_exporter_sent_requests_total` of `exporter` for `body`.
fn sent_requests(metrics: &str, exporter: &str, body: &str) -> f64 {
    metric(
        metrics,
        &format!(
            "profbridge_exporter_sent_requests_total{{exporter=\"{exporter}\",body=\"{body}\"}}"
        ),
    )
}

/// Each exporter of A sends what arrived compressed as it is when its
/// compression is the one the request came with, and the protobuf that
/// arrived, compressed anew or not at all, when it is not: the frame or
/// body that leaves A is the client's, byte for byte, or decompresses to
/// the client's protobuf. Python's opentelemetry-proto reads each as the
/// message the client sent.
#[test]
fn the_compressed_message_is_forwarded_when_the_compressions_match() {
    use profbridge_testkit::ebpf_profiler_request;

    let runtime = runtime();
    let capture = Capture::start(&runtime);
    let otlp = |id: &str, compression: &str| {
        format!(
            "  otlp/{id}:\n    endpoint: http://{}\n    compression: {compression}\n    timeout: 30s\n",
            capture.grpc
        )
    };
    let otlphttp = |id: &str, compression: &str| {
        format!(
            "  otlphttp/{id}:\n    endpoint: http://{}\n    encoding: proto\n    compression: {compression}\n    timeout: 30s\n",
            capture.http
        )
    };
    let exporters = [
        otlp("gzip", "gzip"),
        otlp("zstd", "zstd"),
        otlp("plain", "none"),
        otlphttp("gzip", "gzip"),
        otlphttp("zstd", "zstd"),
    ]
    .concat();
    let ids = "otlp/gzip, otlp/zstd, otlp/plain, otlphttp/gzip, otlphttp/zstd";
    let a = InProcess::start(
        "pass-through-compressed",
        &pass_through_forwarder("", &exporters, ids),
    );

    let request = ebpf_profiler_request(300, 21);
    let protobuf = pdata_bytes(&request);
    // (how it is sent to A, its encoding, the message as sent)
    let arrivals = [
        ("grpc", "gzip", gzip(&protobuf)),
        ("http", "zstd", zstd(&protobuf)),
        ("http", "gzip", gzip(&protobuf)),
        ("grpc", "identity", protobuf.clone()),
    ];
    let mut captured: Vec<Captured> = Vec::new();
    for (transport, encoding, message) in &arrivals {
        let answer = match *transport {
            "grpc" => grpc_export_message(&runtime, a.grpc.unwrap(), encoding, message),
            _ => http_export_body(&runtime, a.http.unwrap(), encoding, message),
        };
        assert_eq!(answer.partial_success, None);
        let before = captured.len();
        wait_until("every exporter of A to send the request", || {
            capture.seen().len() >= before + 5
        });
        let seen = capture.seen();
        assert_eq!(seen.len(), before + 5, "each exporter sends it once");
        let this: Vec<&Captured> = seen[before..].iter().collect();
        // (transport, encoding) that leave A: one exporter each.
        for (out_transport, out_encoding) in [
            ("grpc", "gzip"),
            ("grpc", "zstd"),
            ("grpc", "identity"),
            ("http", "gzip"),
            ("http", "zstd"),
        ] {
            let what = format!("{transport} {encoding} in, {out_transport} {out_encoding} out");
            let sent = this
                .iter()
                .find(|c| c.transport == out_transport && c.encoding == out_encoding)
                .unwrap_or_else(|| panic!("{what}: nothing arrived"));
            if out_transport == "grpc" {
                assert_eq!(
                    sent.compressed_flag,
                    Some(out_encoding != "identity"),
                    "{what}"
                );
            }
            assert_eq!(
                sent.protobuf(),
                protobuf,
                "{what}: the protobuf that arrived"
            );
            if out_encoding == *encoding {
                assert!(sent.message == *message, "{what}: the bytes that arrived");
            }
        }
        captured.extend(seen[before..].iter().cloned());
    }

    // A request arrives downstream before A's exporter has its answer and
    // counts it: wait until every exporter has counted every arrival (the
    // wait only bounds the test).
    let exporters = [
        "otlp/gzip",
        "otlp/zstd",
        "otlp/plain",
        "otlphttp/gzip",
        "otlphttp/zstd",
    ];
    let counted = |metrics: &str| {
        exporters.iter().all(|id| {
            let total: f64 = ["as_received", "recompressed", "encoded"]
                .iter()
                .map(|body| sent_requests(metrics, id, body))
                .sum();
            total >= arrivals.len() as f64
        })
    };
    let waited = Instant::now();
    let mut metrics = scrape(a.telemetry);
    while !counted(&metrics) && waited.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(50));
        metrics = scrape(a.telemetry);
    }
    // As received: each exporter, for the one arrival of its compression
    // (the identity arrival for otlp/plain); recompressed for the others.
    for (id, compression) in [
        ("otlp/gzip", "gzip"),
        ("otlp/zstd", "zstd"),
        ("otlp/plain", "identity"),
        ("otlphttp/gzip", "gzip"),
        ("otlphttp/zstd", "zstd"),
    ] {
        let matching = arrivals
            .iter()
            .filter(|(_, c, _)| *c == compression)
            .count() as f64;
        assert_eq!(sent_requests(&metrics, id, "as_received"), matching, "{id}");
        assert_eq!(
            sent_requests(&metrics, id, "recompressed"),
            arrivals.len() as f64 - matching,
            "{id}"
        );
        assert_eq!(sent_requests(&metrics, id, "encoded"), 0.0, "{id}");
    }
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = captured
        .iter()
        .map(|c| (c.protobuf(), protobuf.clone()))
        .collect();
    if let Some(decoded) = independently_decoded(&pairs) {
        let profiles = profile_count(std::slice::from_ref(&request)) as usize;
        for (c, d) in captured.iter().zip(decoded) {
            assert!(d.equal, "{} {}: {d:?}", c.transport, c.encoding);
            assert_eq!(d.profiles, profiles);
        }
    }
    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
}

/// Starts B and A (`processors`, one exporter `exporter(&b)` named `id`),
/// sends each of `sent` to A by gRPC, gzipped, and returns what B wrote
/// once it wrote `files` files, with A's answers and its `/metrics` once
/// it counted them sent.
fn forward_through(
    label: &str,
    processors: &str,
    id: &str,
    exporter: impl Fn(&InProcess) -> String,
    sent: &[Vec<u8>],
    files: usize,
) -> (Vec<Vec<u8>>, Vec<ExportProfilesServiceResponse>, String) {
    let b = InProcess::start(&format!("{label}-b"), &sink_config("127.0.0.1:0"));
    let a = InProcess::start(
        &format!("{label}-a"),
        &pass_through_forwarder(processors, &exporter(&b), id),
    );
    let runtime = runtime();
    let answers = sent
        .iter()
        .map(|bytes| grpc_export_bytes(&runtime, a.grpc.unwrap(), bytes, true))
        .collect();
    wait_until("B to write what A forwarded", || {
        otlp_file_count(&b.data) >= files
    });
    let written = otlp_files(&b.data);
    let profiles: f64 = written
        .iter()
        .map(|file| {
            profile_count(&[ExportProfilesServiceRequest::decode(file.as_slice()).unwrap()])
        })
        .sum();
    wait_until("A to count what it sent", || {
        exporter_metric(a.telemetry, "sent_profiles_total", id) == profiles
    });
    let metrics = scrape(a.telemetry);
    let (drained, _) = a.stop();
    assert!(drained, "A did not export everything it accepted");
    let (drained, _) = b.stop();
    assert!(drained, "B did not export everything it accepted");
    (written, answers, metrics)
}

fn grpc_exporter(b: &InProcess) -> String {
    format!(
        "  otlp/forward:\n    endpoint: http://{}\n    timeout: 30s\n",
        b.grpc.unwrap()
    )
}

/// A request a processor changed, merged with another, rid of an invalid
/// profile or sent as JSON reaches B encoded again, its content intact,
/// and A counts it encoded. Python's opentelemetry-proto reads what B
/// got: the profiles and samples A forwarded, and for JSON, the message
/// the client sent.
#[test]
fn changed_merged_partly_rejected_or_json_requests_are_encoded_again() {
    use profbridge_testkit::ebpf_profiler_request;

    let request = ebpf_profiler_request(300, 17);
    let sent = [pdata_bytes(&request)];
    let re_encoded = |what: &str, written: &[Vec<u8>], metrics: &str| {
        assert!(!written.is_empty(), "{what}: nothing written");
        for file in written {
            assert!(!sent.contains(file), "{what}: forwarded as it arrived");
            assert!(encoded_by_us(file), "{what}: encoded again");
        }
        if what != "json" {
            let count = |body| sent_requests(metrics, "otlp/forward", body);
            assert_eq!(count("encoded"), written.len() as f64, "{what}");
            assert_eq!(count("as_received") + count("recompressed"), 0.0, "{what}");
        }
    };
    let counts = |requests: &[&ExportProfilesServiceRequest]| {
        let profiles: Vec<_> = requests
            .iter()
            .flat_map(|r| &r.resource_profiles)
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
            .collect();
        (
            profiles.len(),
            profiles.iter().map(|p| p.samples.len()).sum::<usize>(),
        )
    };
    // (what, what B got, what the client sent, whether Python finds them
    // the same message, the profiles and samples B got)
    let mut decoded = Vec::new();

    let (written, _, metrics) = forward_through(
        "pass-through-resource",
        "  resource:\n    attributes:\n      - key: hop\n        value: a\n        action: upsert\n",
        "otlp/forward",
        grpc_exporter,
        &sent,
        1,
    );
    re_encoded("resource", &written, &metrics);
    decoded.push((
        "resource",
        written[0].clone(),
        sent[0].clone(),
        false,
        counts(&[&request]),
    ));
    let arrived = ExportProfilesServiceRequest::decode(written[0].as_slice()).unwrap();
    let attributes = &arrived.resource_profiles[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes;
    assert!(
        attributes.iter().any(|kv| kv.key == "hop"),
        "{attributes:?}"
    );

    // Two requests, one batch as soon as the second arrives.
    let second = ebpf_profiler_request(50, 18);
    let samples: usize = [&request, &second]
        .iter()
        .flat_map(|r| &r.resource_profiles)
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum();
    let (written, _, metrics) = forward_through(
        "pass-through-batch",
        &format!("  batch:\n    send_batch_size: {samples}\n    timeout: 10m\n"),
        "otlp/forward",
        grpc_exporter,
        &[sent[0].clone(), pdata_bytes(&second)],
        1,
    );
    re_encoded("batch", &written, &metrics);
    assert_eq!(written.len(), 1, "the two requests were merged");
    decoded.push((
        "batch",
        written[0].clone(),
        sent[0].clone(),
        false,
        counts(&[&request, &second]),
    ));

    let mut broken = request.clone();
    broken.resource_profiles[0].scope_profiles[0].profiles[1].samples[0].stack_index = 1_000_000;
    let (written, answers, metrics) = forward_through(
        "pass-through-rejected",
        "",
        "otlp/forward",
        grpc_exporter,
        &[pdata_bytes(&broken)],
        1,
    );
    let rejected = answers[0]
        .partial_success
        .as_ref()
        .map(|p| p.rejected_profiles);
    assert_eq!(rejected, Some(1));
    re_encoded("partly rejected", &written, &metrics);
    let mut valid = broken.clone();
    valid.resource_profiles[0].scope_profiles[0]
        .profiles
        .remove(1);
    decoded.push((
        "partly rejected",
        written[0].clone(),
        pdata_bytes(&broken),
        false,
        counts(&[&valid]),
    ));
    let arrived = ExportProfilesServiceRequest::decode(written[0].as_slice()).unwrap();
    assert_eq!(
        arrived.resource_profiles[0].scope_profiles[0]
            .profiles
            .len(),
        1
    );

    let (written, _, metrics) = forward_through(
        "pass-through-json",
        "",
        "otlphttp/json",
        |b| {
            format!(
                "  otlphttp/json:\n    endpoint: http://{}\n    encoding: json\n    timeout: 30s\n",
                b.http.unwrap()
            )
        },
        &sent,
        1,
    );
    re_encoded("json", &written, &metrics);
    assert_same_requests(
        "json",
        std::slice::from_ref(&request),
        &[ExportProfilesServiceRequest::decode(written[0].as_slice()).unwrap()],
    );
    decoded.push((
        "json",
        written[0].clone(),
        sent[0].clone(),
        true,
        counts(&[&request]),
    ));

    let pairs: Vec<(Vec<u8>, Vec<u8>)> = decoded
        .iter()
        .map(|(_, got, sent, _, _)| (got.clone(), sent.clone()))
        .collect();
    if let Some(found) = independently_decoded(&pairs) {
        for ((what, _, _, equal, (profiles, samples)), found) in decoded.iter().zip(found) {
            assert_eq!(found.equal, *equal, "{what}");
            assert_eq!(
                (found.profiles, found.samples),
                (*profiles, *samples),
                "{what}"
            );
        }
    }
}
