#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The pprof, Pyroscope and file receivers, end to end: a collector in
//! the test process (a real `profbridge serve` where a restart or its log
//! is the point) fed over HTTP or through a watched folder, writing OTLP
//! protobuf files. What arrives must hold, per sample type, the same
//! totals as `parse_any` reads from the bytes sent; resource attributes
//! must come from the query, headers, application name or file name; bad
//! input is refused with a status and a message that name the problem.

use crate::support::raw_text;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use profbridge_collector::protocol::push_v1::{
    self, LabelPair, PushRequest, RawProfileSeries, RawSample, PUSH_PATH,
};
use profbridge_pprof::{
    default_sample_type_index, parse_any, write_folded, DecodeOptions, Profile,
};
use profbridge_testkit::{
    corpus_file, corpus_files, missing_prerequisite, require_tool, venv_python, TempDir,
};
use profbridge_translate::otlp::{any_value, ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};
use prost::Message;

use crate::support::collector::Collector;
use crate::support::in_process::InProcess;

const PPROF: &str = "pprof push";
const PYROSCOPE: &str = "Pyroscope ingest";
/// The period folded CPU samples get at Pyroscope's default 100 Hz.
const PERIOD_AT_100_HZ: i128 = 10_000_000;

// ---------------------------------------------------------------- helpers

/// A collector with the pprof and Pyroscope receivers on free ports and an
/// OTLP protobuf file sink under `{data}/SERVICE.NAME/`.
fn start_http_sink(label: &str, max_body: &str) -> InProcess {
    InProcess::start(
        label,
        &format!(
            "receivers:\n  pprof:\n    endpoint: 127.0.0.1:0\n    max_request_body_size: {max_body}\n  pyroscope:\n    endpoint: 127.0.0.1:0\n    max_request_body_size: {max_body}\n\
             exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [pprof, pyroscope]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n"
        ),
    )
}

/// The collector under test (the pprof, Pyroscope and file receivers, an
/// OTLP file sink and an `otlp` exporter) and the collector that exporter
/// forwards to (OTLP gRPC in, OTLP file sink): what a receiver takes must
/// reach both.
struct Chain {
    front: InProcess,
    back: InProcess,
    /// `in/` is watched by the file receiver, `state/` holds its checkpoint.
    watched: Watched,
}

fn start_chain(label: &str) -> Chain {
    let watched = Watched::new(&format!("{label}-watched"));
    let back = InProcess::start(
        &format!("{label}-back"),
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  file:\n    path: {data}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
    );
    let front = InProcess::start(
        label,
        &format!(
            "receivers:\n  pprof:\n    endpoint: 127.0.0.1:0\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
             \x20 file:\n    include: [\"{watched}/*\"]\n    poll_interval: 100ms\n    service_name_from: filename\n    checkpoint: {state}/checkpoint.json\n\
             exporters:\n  file:\n    path: {{data}}\n    format: otlp\n  otlp:\n    endpoint: http://{back}\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [pprof, pyroscope, file]\n      exporters: [file, otlp]\n  telemetry:\n    metrics:\n      address: \"\"\n",
            watched = watched.path("in").display(),
            state = watched.path("state").display(),
            back = back.grpc.unwrap()
        ),
    );
    Chain {
        front,
        back,
        watched,
    }
}

/// What was written for `service` by the front's file sink and, forwarded
/// over OTLP, by the back's: the same totals, which are returned.
fn chain_totals(chain: &Chain, service: &str) -> (Totals, Vec<ExportProfilesServiceRequest>) {
    let front = requests_for(&chain.front.data, service, 1);
    let back = requests_for(&chain.back.data, service, 1);
    assert_eq!(
        otlp_totals(&back),
        otlp_totals(&front),
        "{service}: forwarded over OTLP"
    );
    (otlp_totals(&front), front)
}

/// A POST over plain HTTP/1.1: (status, response body as text).
fn post(address: SocketAddr, target: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let (status, _, body) = post_with_head(address, target, headers, body);
    (status, body)
}

/// [`post`], with the response head too.
fn post_with_head(
    address: SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!(
        "POST {target} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A refused body may be cut off; the answer is still read.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {:?}", String::from_utf8_lossy(&response)));
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = String::from_utf8_lossy(&response[split + 4..]).into_owned();
    (status, head, body)
}

fn push_pprof(collector: &InProcess, query: &str, body: &[u8]) -> (u16, String) {
    post(
        collector.address(PPROF),
        &format!("/v1/pprof?{query}"),
        &[("Content-Type", "application/octet-stream")],
        body,
    )
}

fn push_pyroscope(collector: &InProcess, query: &str, body: &[u8]) -> (u16, String) {
    post(
        collector.address(PYROSCOPE),
        &format!("/ingest?{query}"),
        &[("Content-Type", "binary/octet-stream")],
        body,
    )
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn otlp_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.to_string_lossy().ends_with(".otlp.pb"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Waits for at least `count` requests written for `service` under
/// `data`, and returns
/// them all.
fn requests_for(data: &Path, service: &str, count: usize) -> Vec<ExportProfilesServiceRequest> {
    let dir = data.join(service);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let files = otlp_files(&dir);
        if files.len() >= count {
            return files
                .iter()
                .map(|path| {
                    ExportProfilesServiceRequest::decode(std::fs::read(path).unwrap().as_slice())
                        .unwrap()
                })
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "{service}: {} of {count} requests written under {}",
            files.len(),
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

type Totals = BTreeMap<(String, String), i128>;

fn pprof_totals(profile: &Profile) -> Totals {
    let text = |index: i64| profile.string_table[usize::try_from(index).unwrap()].clone();
    let mut totals = Totals::new();
    for (column, value_type) in profile.sample_type.iter().enumerate() {
        let total: i128 = profile
            .sample
            .iter()
            .map(|sample| i128::from(sample.value[column]))
            .sum();
        *totals
            .entry((text(value_type.r#type), text(value_type.unit)))
            .or_default() += total;
    }
    totals
}

fn otlp_totals(requests: &[ExportProfilesServiceRequest]) -> Totals {
    let mut totals = Totals::new();
    for request in requests {
        let strings = &request.dictionary.as_ref().unwrap().string_table;
        let text = |index: i32| strings[usize::try_from(index).unwrap()].clone();
        for profile in request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
        {
            let value_type = profile.sample_type.unwrap_or_default();
            let total: i128 = profile
                .samples
                .iter()
                .map(|sample| {
                    if sample.values.is_empty() {
                        sample.timestamps_unix_nano.len() as i128
                    } else {
                        sample.values.iter().map(|v| i128::from(*v)).sum()
                    }
                })
                .sum();
            *totals
                .entry((
                    text(value_type.type_strindex),
                    text(value_type.unit_strindex),
                ))
                .or_default() += total;
        }
    }
    totals
}

/// The resource attributes of the first resource, as text.
fn resource_of(request: &ExportProfilesServiceRequest) -> BTreeMap<String, String> {
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    resource
        .attributes
        .iter()
        .map(|kv| (kv.key.clone(), text_of(kv)))
        .collect()
}

fn text_of(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        other => format!("{other:?}"),
    }
}

fn attributes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Sends `bytes` to the pprof receiver, to the Pyroscope receiver as
/// format=pprof, and (written as folded stacks) as format=folded; checks
/// that each arrives with the totals `parse_any` reads.
fn check_every_receiver(chain: &Chain, label: &str, bytes: &[u8]) {
    let collector = &chain.front;
    let (expected, _) = parse_any(bytes, &DecodeOptions::default())
        .unwrap_or_else(|e| panic!("{label}: parse_any: {e}"));
    let totals = pprof_totals(&expected);

    let service = format!("pprof-{label}");
    let (status, body) = push_pprof(collector, &format!("service.name={service}"), bytes);
    assert_eq!(status, 204, "{label}: pprof receiver answered {body}");
    if !totals.is_empty() {
        let (written, requests) = chain_totals(chain, &service);
        assert_eq!(written, totals, "{label} through the pprof receiver");
        assert_eq!(
            resource_of(&requests[0]),
            attributes(&[("service.name", &service)])
        );
    }

    let service = format!("pyroscope-{label}");
    let (status, body) = push_pyroscope(
        collector,
        &format!("name={service}&format=pprof&from=1700000000&until=1700000010"),
        bytes,
    );
    assert_eq!(status, 200, "{label}: Pyroscope receiver answered {body}");
    if !totals.is_empty() {
        let (written, _) = chain_totals(chain, &service);
        assert_eq!(written, totals, "{label} through the Pyroscope receiver");
    }

    let service = format!("file-{}", label.replace('.', "-"));
    chain
        .watched
        .drop_file("in", &format!("{service}.prof"), bytes);
    if !totals.is_empty() {
        let (written, _) = chain_totals(chain, &service);
        assert_eq!(written, totals, "{label} through the file receiver");
    }

    let Some(index) = default_sample_type_index(&expected) else {
        return;
    };
    let folded = write_folded(&expected, index).unwrap();
    if folded.is_empty() {
        return;
    }
    let (folded_profile, _) = parse_any(folded.as_bytes(), &DecodeOptions::default()).unwrap();
    let samples = pprof_totals(&folded_profile)[&("samples".to_owned(), "count".to_owned())];
    let service = format!("folded-{label}");
    let (status, body) = push_pyroscope(
        collector,
        &format!("name={service}&format=folded&units=samples"),
        folded.as_bytes(),
    );
    assert_eq!(
        status, 200,
        "{label} as folded: Pyroscope receiver answered {body}"
    );
    let (written, _) = chain_totals(chain, &service);
    let mut expected_folded = Totals::new();
    expected_folded.insert(("samples".to_owned(), "count".to_owned()), samples);
    expected_folded.insert(
        ("cpu".to_owned(), "nanoseconds".to_owned()),
        samples * PERIOD_AT_100_HZ,
    );
    assert_eq!(written, expected_folded, "{label} as folded stacks");
}

// ------------------------------------------------------ the HTTP receivers

#[test]
fn every_corpus_file_survives_the_pprof_and_pyroscope_receivers() {
    let files = corpus_files();
    if files.is_empty() {
        return;
    }
    let chain = start_chain("legacy-corpus");
    for (index, file) in files.iter().enumerate() {
        check_every_receiver(&chain, &format!("{index}-{}", file.name), &file.bytes);
    }
    let collector = chain.front;
    // Gzipped with Content-Encoding, legacy text too.
    let heap = files.iter().find(|f| f.name == "cppbench.heap").unwrap();
    let (status, body) = post(
        collector.address(PPROF),
        "/v1/pprof?service_name=encoded",
        &[("Content-Encoding", "gzip")],
        &gzip(&heap.bytes),
    );
    assert_eq!(status, 204, "{body}");
    let (expected, _) = parse_any(&heap.bytes, &DecodeOptions::default()).unwrap();
    assert_eq!(
        otlp_totals(&requests_for(&collector.data, "encoded", 1)),
        pprof_totals(&expected)
    );
}

#[test]
fn service_names_and_labels_become_resource_attributes() {
    let Some(file) = corpus_file("go.crc32.cpu") else {
        return;
    };
    let collector = start_http_sink("legacy-attributes", "20MiB");
    let (status, body) = post(
        collector.address(PPROF),
        "/v1/pprof?service.name=checkout&attr.host.name=web-1&attr.deployment.environment=prod&seconds=30",
        &[
            ("X-Resource-Attr", "team=payments, host.name=overridden-by-query"),
            ("X-Service-Name", "overridden-by-query"),
        ],
        &file.bytes,
    );
    assert_eq!(status, 204, "{body}");
    let requests = requests_for(&collector.data, "checkout", 1);
    assert_eq!(
        resource_of(&requests[0]),
        attributes(&[
            ("service.name", "checkout"),
            ("host.name", "web-1"),
            ("deployment.environment", "prod"),
            ("team", "payments"),
        ])
    );
    let (status, body) = post(
        collector.address(PPROF),
        "/v1/pprof",
        &[("X-Service-Name", "from-header")],
        &file.bytes,
    );
    assert_eq!(status, 204, "{body}");
    requests_for(&collector.data, "from-header", 1);

    // Pyroscope: the application name and its labels, the spy, the time.
    let (status, body) = push_pyroscope(
        &collector,
        "name=ride-sharing-app.cpu%7Bregion%3Deu-north%2Cvehicle%3Dbike%7D&from=1700000000&until=1700000015&spyName=gospy&sampleRate=250&aggregationType=average",
        b"main;dispatch;find_nearest 7\nmain;dispatch 3\n",
    );
    assert_eq!(status, 200, "{body}");
    let requests = requests_for(&collector.data, "ride-sharing-app.cpu", 1);
    assert_eq!(
        resource_of(&requests[0]),
        attributes(&[
            ("service.name", "ride-sharing-app.cpu"),
            ("region", "eu-north"),
            ("vehicle", "bike"),
            ("pyroscope.spy_name", "gospy"),
        ])
    );
    let profiles = &requests[0].resource_profiles[0].scope_profiles[0].profiles;
    assert!(profiles
        .iter()
        .all(|p| p.time_unix_nano == 1_700_000_000_000_000_000
            && p.duration_nano == 15_000_000_000
            && p.period == 4_000_000));
    let mut expected = Totals::new();
    expected.insert(("samples".to_owned(), "count".to_owned()), 10);
    expected.insert(("cpu".to_owned(), "nanoseconds".to_owned()), 40_000_000);
    assert_eq!(otlp_totals(&requests), expected);
    // Folded text may come gzipped, with or without Content-Encoding.
    let (status, body) = push_pyroscope(
        &collector,
        "name=zipped&format=lines",
        &gzip(b"main;a\nmain;a\nmain\n"),
    );
    assert_eq!(status, 200, "{body}");
    let zipped = otlp_totals(&requests_for(&collector.data, "zipped", 1));
    assert_eq!(zipped[&("samples".to_owned(), "count".to_owned())], 3);

    let dictionary = requests[0].dictionary.as_ref().unwrap();
    let aggregation = dictionary
        .attribute_table
        .iter()
        .find(|a| dictionary.string_table[a.key_strindex as usize] == "pyroscope.aggregation")
        .expect("pyroscope.aggregation is recorded");
    assert_eq!(
        aggregation.value.as_ref().and_then(|v| v.value.clone()),
        Some(any_value::Value::StringValue("average".to_owned()))
    );
}

#[test]
fn pyroscope_multipart_uploads_carry_the_profile_and_its_sample_type_config() {
    let Some(file) = corpus_file("java.heap") else {
        return;
    };
    let collector = start_http_sink("legacy-multipart", "20MiB");
    let (expected, _) = parse_any(&file.bytes, &DecodeOptions::default()).unwrap();
    let config = br#"{"inuse_space": {"units": "bytes", "aggregation": "average", "display-name": "inuse_space_bytes"}}"#;
    let boundary = "profbridge-boundary-7f3a";
    let mut body = Vec::new();
    for (name, bytes) in [
        ("profile", file.bytes.as_slice()),
        ("sample_type_config", config),
    ] {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let (status, answer) = post(
        collector.address(PYROSCOPE),
        "/ingest?name=java-app&format=pprof",
        &[(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    let requests = requests_for(&collector.data, "java-app", 1);
    assert_eq!(otlp_totals(&requests), pprof_totals(&expected));
    let request = &requests[0];
    let dictionary = request.dictionary.as_ref().unwrap();
    let text = |index: i32| dictionary.string_table[index as usize].as_str();
    for profile in &request.resource_profiles[0].scope_profiles[0].profiles {
        let sample_type = text(profile.sample_type.unwrap().type_strindex);
        let recorded: BTreeMap<&str, String> = profile
            .attribute_indices
            .iter()
            .map(|&i| &dictionary.attribute_table[i as usize])
            .filter(|a| text(a.key_strindex).starts_with("pyroscope."))
            .map(|a| {
                let value = match a.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(any_value::Value::StringValue(s)) => s.clone(),
                    other => format!("{other:?}"),
                };
                (text(a.key_strindex), value)
            })
            .collect();
        if sample_type == "inuse_space" {
            assert_eq!(
                recorded,
                BTreeMap::from([
                    ("pyroscope.aggregation", "average".to_owned()),
                    ("pyroscope.display_name", "inuse_space_bytes".to_owned()),
                    ("pyroscope.units", "bytes".to_owned()),
                ])
            );
        } else {
            assert!(recorded.is_empty(), "{sample_type}: {recorded:?}");
        }
    }
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let collector = start_http_sink("legacy-bad", "1KiB");
    let (status, body) = push_pprof(&collector, "service.name=x", b"\x00\x01 this is no profile");
    assert_eq!(status, 400);
    assert!(body.contains("unrecognized format"), "{body}");

    let (status, body) = push_pprof(&collector, "attr.=x", b"main 1\n");
    assert_eq!(status, 400);
    assert!(body.contains("empty key"), "{body}");

    let (status, body) = push_pyroscope(&collector, "name=app&format=folded", b"main;work lots\n");
    assert_eq!(status, 400);
    assert!(body.contains("line 1") && body.contains("lots"), "{body}");

    let (status, body) = push_pyroscope(&collector, "format=folded", b"main 1\n");
    assert_eq!(status, 400);
    assert!(body.contains("name"), "{body}");

    let (status, body) = push_pyroscope(&collector, "name=app&format=trie", b"x");
    assert_eq!(status, 400);
    assert!(body.contains("\"trie\" is not supported"), "{body}");

    let (status, body) = push_pyroscope(&collector, "name=app&format=jfr", b"x");
    assert_eq!(status, 400);
    assert!(body.contains("not a JFR recording"), "{body}");

    let (status, body) =
        push_pyroscope(&collector, "name=app&format=pprof", b"main;work 1\x00\xff");
    assert_eq!(status, 400, "{body}");

    let (status, body) = post(
        collector.address(PPROF),
        "/v1/pprof",
        &[("Content-Encoding", "br")],
        b"main 1\n",
    );
    assert_eq!(status, 415);
    assert!(body.contains("\"br\""), "{body}");

    // Too large as sent, after Content-Encoding, and inside gzip.
    let big = "main;work;inner_loop 1\n".repeat(1000);
    let small = gzip(big.as_bytes());
    assert!(small.len() < 1024);
    let (status, body) = push_pprof(&collector, "", big.as_bytes());
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("larger than max_request_body_size"), "{body}");
    let (status, body) = post(
        collector.address(PYROSCOPE),
        "/ingest?name=app&format=folded",
        &[("Content-Encoding", "gzip")],
        &small,
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("decompresses to more than max_request_body_size"),
        "{body}"
    );
    for (status, body) in [
        push_pprof(&collector, "", &small),
        push_pyroscope(&collector, "name=app&format=folded", &small),
    ] {
        assert_eq!(status, 413, "{body}");
        assert!(
            body.contains("decompresses to more than the limit"),
            "{body}"
        );
    }

    // Nothing refused was written.
    assert!(
        !collector.data.exists() || std::fs::read_dir(&collector.data).unwrap().next().is_none()
    );
}

#[test]
fn a_full_pipeline_answers_503_with_retry_after() {
    let Some(file) = corpus_file("go.crc32.cpu") else {
        return;
    };
    // The exporter cannot connect and retries, so the first request keeps
    // its share of the pipeline's small budget.
    let collector = InProcess::start(
        "legacy-full",
        "receivers:\n  pprof:\n    endpoint: 127.0.0.1:0\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
         exporters:\n  otlp:\n    endpoint: 127.0.0.1:1\n    retry_on_failure:\n      initial_interval: 30s\n      max_elapsed_time: 0\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof, pyroscope]\n      exporters: [otlp]\n      queue:\n        max_bytes: 1KiB\n  telemetry:\n    metrics:\n      address: \"\"\n",
    );
    let (status, body) = push_pprof(&collector, "service.name=first", &file.bytes);
    assert_eq!(status, 204, "{body}");
    for (what, target) in [
        (PPROF, "/v1/pprof?service.name=second"),
        (PYROSCOPE, "/ingest?name=second&format=pprof"),
    ] {
        let (status, head, body) =
            post_with_head(collector.address(what), target, &[], &file.bytes);
        assert_eq!(status, 503, "{what}: {body}");
        assert!(
            head.to_ascii_lowercase().contains("retry-after: 1"),
            "{what}: {head}"
        );
        assert!(body.contains("retry later"), "{what}: {body}");
    }
    let push = PushRequest {
        series: vec![series(
            &[("service_name", "second")],
            vec![file.bytes.clone()],
        )],
    };
    let (status, head, body) = connect_push(
        &collector,
        &[("Content-Type", "application/proto")],
        &push.encode_to_vec(),
    );
    assert_eq!(status, 503, "push: {body}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "push: {head}"
    );
    assert_eq!(
        connect_error(&body),
        (
            "unavailable".to_owned(),
            "the pipeline is full; retry later".to_owned()
        )
    );
}

// ------------------------------------------------- profiles of real tools

const GPERFTOOLS_PURPOSE: &str = "the gperftools CPU profile ingest test";

/// Burns CPU through a few call paths under libprofiler.
const C_PROGRAM: &str = r#"
#include <stdio.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static double churn(long n, double x) {
    for (long i = 0; i < n; i++) x = x * 1.0000003 + 0.25 / (x + 2.0);
    return x;
}
__attribute__((noinline)) static void left(void) { sink += churn(150000, 1.0); }
__attribute__((noinline)) static void right(void) { sink += churn(250000, 2.0); }
__attribute__((noinline)) static void both(void) { left(); right(); }

int main(void) {
    clock_t start = clock();
    while ((double)(clock() - start) < 0.6 * CLOCKS_PER_SEC) both();
    printf("%f\n", sink);
    return 0;
}
"#;

/// A CPU profile written by gperftools, or `None` after a loud skip.
fn gperftools_profile(dir: &Path) -> Option<Vec<u8>> {
    require_tool("cc", &["--version"], GPERFTOOLS_PURPOSE)?;
    let compiled = profbridge_testkit::c::build_once(
        "churn",
        C_PROGRAM,
        &["-O1", "-fno-omit-frame-pointer"],
        &["-Wl,--no-as-needed", "-lprofiler"],
    );
    let program = match compiled {
        Ok(program) => program,
        Err(failed) => {
            missing_prerequisite(
                "gperftools' libprofiler (Debian's libgoogle-perftools-dev)",
                &format!(
                    "{GPERFTOOLS_PURPOSE} (`cc ... -lprofiler` failed: {})",
                    failed.stderr.trim()
                ),
            );
            return None;
        }
    };
    let profile = dir.join("churn.prof");
    let run = Command::new(&program)
        .env("CPUPROFILE", &profile)
        .env("CPUPROFILE_FREQUENCY", "1000")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    Some(std::fs::read(&profile).unwrap())
}

#[test]
fn a_gperftools_cpu_profile_survives_every_receiver() {
    let dir = TempDir::new("legacy-gperftools");
    let Some(bytes) = gperftools_profile(dir.path()) else {
        return;
    };
    let chain = start_chain("legacy-gperftools-sink");
    check_every_receiver(&chain, "gperftools", &bytes);
}

const GO_PURPOSE: &str = "the Go runtime profile ingest test";

/// Writes a CPU profile and a heap profile as pprof, and heap and goroutine
/// profiles in the legacy text format (debug=1).
const GO_PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"
)

var kept [][]byte
var sink float64

//go:noinline
func spin(d time.Duration) {
	x := 1.0
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 10000; i++ {
			x = x*1.0000001 + 0.5/(x+1.0)
		}
	}
	sink += x
}

//go:noinline
func keep(n, size int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, size))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	dir := os.Args[1]
	runtime.MemProfileRate = 1
	keep(300, 128)
	keep(20, 32<<10)
	cpu, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	check(err)
	check(pprof.StartCPUProfile(cpu))
	spin(500 * time.Millisecond)
	pprof.StopCPUProfile()
	check(cpu.Close())
	runtime.GC()
	for _, p := range []struct {
		name, file string
		debug      int
	}{{"heap", "heap.pb.gz", 0}, {"heap", "heap.txt", 1}, {"goroutine", "goroutine.txt", 1}} {
		f, err := os.Create(filepath.Join(dir, p.file))
		check(err)
		check(pprof.Lookup(p.name).WriteTo(f, p.debug))
		check(f.Close())
	}
}
"#;

#[test]
fn go_runtime_profiles_survive_every_receiver() {
    if require_tool("go", &["version"], GO_PURPOSE).is_none() {
        return;
    }
    let dir = TempDir::new("legacy-go");
    let program = profbridge_testkit::go::build_once("go-runtime-profiles", GO_PROGRAM)
        .unwrap_or_else(|failed| panic!("go build: {}", failed.stderr));
    let run = Command::new(program).arg(dir.path()).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let chain = start_chain("legacy-go-sink");
    for name in ["cpu.pb.gz", "heap.pb.gz", "heap.txt", "goroutine.txt"] {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        check_every_receiver(&chain, &format!("go-{}", name.replace('.', "-")), &bytes);
    }
}

// ------------------------------------------- the Pyroscope push API (Connect)

/// A gzip bomb's kind of gzip: as small as it gets.
fn gzip_best(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// What Pyroscope's SDKs send: a pprof, gzipped, in a `RawSample`.
fn folded_pprof(text: &[u8]) -> (Profile, Vec<u8>) {
    let profile = profbridge_pprof::parse_folded(text, ("samples", "count")).unwrap();
    let bytes = profbridge_pprof::encode(&profile, &profbridge_pprof::EncodeOptions::default());
    (profile, gzip(&bytes))
}

fn series(labels: &[(&str, &str)], raw_profiles: Vec<Vec<u8>>) -> RawProfileSeries {
    RawProfileSeries {
        labels: labels
            .iter()
            .map(|(name, value)| LabelPair::new(*name, *value))
            .collect(),
        samples: raw_profiles
            .into_iter()
            .map(|raw_profile| RawSample {
                raw_profile,
                id: String::new(),
            })
            .collect(),
    }
}

/// A Connect POST to the push method: (status, response head, body).
fn connect_push(
    collector: &InProcess,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    post_with_head(collector.address(PYROSCOPE), PUSH_PATH, headers, body)
}

/// The code and message of a Connect error body.
fn connect_error(body: &str) -> (String, String) {
    let json: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not a Connect error: {body:?}: {e}"));
    (
        json["code"].as_str().unwrap_or_default().to_owned(),
        json["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// As pyroscope-rs sends it (protobuf, the whole body gzipped, no
/// Connect-Protocol-Version) and as a Connect client's JSON codec does:
/// each series becomes a resource named by `service_name`, with its labels.
#[test]
fn pyroscope_push_takes_protobuf_and_json() {
    let collector = start_http_sink("legacy-push", "20MiB");
    let (cpu, cpu_raw) = folded_pprof(b"main;work 30\nmain;idle 5\n");
    let (mem, mem_raw) = folded_pprof(b"main;alloc 7\n");
    let request = PushRequest {
        series: vec![
            series(
                &[
                    ("__name__", "process_cpu"),
                    ("service_name", "push-proto"),
                    ("env", "prod"),
                    ("__delta__", "false"),
                    ("__session_id__", "0011223344556677"),
                    ("__period_type__", "cpu"),
                ],
                vec![cpu_raw.clone()],
            ),
            series(
                &[("__name__", "memory"), ("service_name", "push-proto-mem")],
                vec![mem_raw.clone(), mem_raw.clone()],
            ),
        ],
    };
    let (status, head, body) = connect_push(
        &collector,
        &[
            ("Content-Type", "application/proto"),
            ("Content-Encoding", "gzip"),
        ],
        &gzip(&request.encode_to_vec()),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/proto"),
        "{head}"
    );
    assert!(body.is_empty(), "{body:?}");

    // One OTLP request, written under its first resource's service.name:
    // a resource per series.
    let requests = requests_for(&collector.data, "push-proto", 1);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].resource_profiles.len(), 2);
    assert_eq!(
        resource_of(&requests[0]),
        attributes(&[
            ("pyroscope.profile_name", "process_cpu"),
            ("service.name", "push-proto"),
            ("env", "prod"),
            ("pyroscope.delta", "false"),
            ("pyroscope.session_id", "0011223344556677"),
        ])
    );
    let second = ExportProfilesServiceRequest {
        resource_profiles: requests[0].resource_profiles[1..].to_vec(),
        dictionary: requests[0].dictionary.clone(),
    };
    assert_eq!(
        resource_of(&second),
        attributes(&[
            ("pyroscope.profile_name", "memory"),
            ("service.name", "push-proto-mem"),
        ])
    );
    let first = ExportProfilesServiceRequest {
        resource_profiles: requests[0].resource_profiles[..1].to_vec(),
        dictionary: requests[0].dictionary.clone(),
    };
    assert_eq!(otlp_totals(&[first]), pprof_totals(&cpu));
    let mut twice = pprof_totals(&mem);
    twice.values_mut().for_each(|total| *total *= 2);
    assert_eq!(otlp_totals(&[second]), twice);

    let json = push_v1::json::encode(&PushRequest {
        series: vec![series(
            &[("service_name", "push-json"), ("__name__", "process_cpu")],
            vec![cpu_raw],
        )],
    });
    let (status, head, body) = connect_push(
        &collector,
        &[
            ("Content-Type", "application/json"),
            ("Connect-Protocol-Version", "1"),
            ("Connect-Timeout-Ms", "10000"),
        ],
        &json,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert_eq!(body, "{}");
    assert_eq!(
        otlp_totals(&requests_for(&collector.data, "push-json", 1)),
        pprof_totals(&cpu)
    );
}

/// A series whose profile cannot be read does not take the valid ones
/// with it: they are kept, and the answer is `invalid_argument` naming
/// what was left out (Pyroscope's answer to an invalid profile).
#[test]
fn pyroscope_push_keeps_the_valid_series_of_a_partly_invalid_push() {
    let collector = start_http_sink("legacy-push-partial", "20MiB");
    let (cpu, cpu_raw) = folded_pprof(b"main;work 12\n");
    let request = PushRequest {
        series: vec![
            series(&[("service_name", "kept")], vec![cpu_raw]),
            series(
                &[("service_name", "broken"), ("__name__", "memory")],
                vec![b"\x1f\x8b\x08\x00 not gzip".to_vec()],
            ),
        ],
    };
    let (status, head, body) = connect_push(
        &collector,
        &[("Content-Type", "application/proto")],
        &request.encode_to_vec(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let (code, message) = connect_error(&body);
    assert_eq!(code, "invalid_argument");
    assert!(message.starts_with("kept 1 of 2 profiles; left out: series 1 (service_name=\"broken\", __name__=\"memory\"), sample 0: "), "{message}");
    assert_eq!(
        otlp_totals(&requests_for(&collector.data, "kept", 1)),
        pprof_totals(&cpu)
    );
    assert!(!collector.data.join("broken").exists());
}

/// What is sent (a name, headers, body) and the status, Connect code and
/// part of the message it must get.
type Refusal<'a> = (
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<u8>,
    u16,
    &'a str,
    &'a str,
);

/// Connect's answers to what cannot be taken: the JSON error body with
/// the status of its code, and 415 for a Content-Type Connect does not
/// use.
#[test]
fn pyroscope_push_refusals_are_connect_errors() {
    let collector = start_http_sink("legacy-push-refusals", "64KiB");
    let proto = [("Content-Type", "application/proto")];
    let cases: [Refusal; 7] = [
        (
            "garbage",
            proto.to_vec(),
            b"\xff\xff\xff".to_vec(),
            400,
            "invalid_argument",
            "not a protobuf PushRequest",
        ),
        (
            "empty",
            proto.to_vec(),
            Vec::new(),
            400,
            "invalid_argument",
            "no profiles received",
        ),
        (
            "bad json",
            vec![("Content-Type", "application/json")],
            b"{\"series\": [{\"samples\": [{\"rawProfile\": \"%%%\"}]}]}".to_vec(),
            400,
            "invalid_argument",
            "rawProfile is not base64",
        ),
        (
            "brotli",
            vec![
                ("Content-Type", "application/proto"),
                ("Content-Encoding", "br"),
            ],
            b"x".to_vec(),
            501,
            "unimplemented",
            "Content-Encoding \"br\"",
        ),
        (
            "protocol version",
            vec![
                ("Content-Type", "application/proto"),
                ("Connect-Protocol-Version", "2"),
            ],
            b"".to_vec(),
            400,
            "invalid_argument",
            "Connect-Protocol-Version",
        ),
        (
            "too large",
            proto.to_vec(),
            vec![0u8; 100 << 10],
            400,
            "invalid_argument",
            "max_request_body_size",
        ),
        (
            "gzip bomb",
            vec![
                ("Content-Type", "application/proto"),
                ("Content-Encoding", "gzip"),
            ],
            gzip_best(&vec![0u8; 8 << 20]),
            400,
            "invalid_argument",
            "decompresses to more than max_request_body_size",
        ),
    ];
    for (what, headers, body, status, code, text) in cases {
        let (got, _, reply) = connect_push(&collector, &headers, &body);
        assert_eq!(got, status, "{what}: {reply}");
        let (got_code, message) = connect_error(&reply);
        assert_eq!(got_code, code, "{what}: {reply}");
        assert!(message.contains(text), "{what}: {message}");
    }
    // A raw profile that unzips past the limit is refused, not inflated.
    let bomb = PushRequest {
        series: vec![series(
            &[("service_name", "bomb")],
            vec![gzip_best(&vec![0u8; 8 << 20])],
        )],
    };
    let (status, _, reply) = connect_push(&collector, &proto, &bomb.encode_to_vec());
    assert_eq!(status, 400, "{reply}");
    assert!(
        connect_error(&reply).1.contains("max_request_body_size"),
        "{reply}"
    );
    let (status, head, reply) =
        connect_push(&collector, &[("Content-Type", "application/grpc")], b"");
    assert_eq!(status, 415, "{reply}");
    assert!(
        head.to_ascii_lowercase()
            .contains("accept-post: application/proto, application/json"),
        "{head}"
    );
    assert!(
        !collector.data.exists() || std::fs::read_dir(&collector.data).unwrap().next().is_none()
    );
}

// --------------------------------------------- the Pyroscope Python SDK

const PYTHON_PURPOSE: &str = "the Pyroscope Python SDK (pyroscope-io) push test";

/// Burns CPU in two named functions under the Pyroscope SDK, with static
/// tags and a thread tag, then shuts the SDK down, which sends what it
/// has.
const PYTHON_PROGRAM: &str = r#"
import sys
import time

import pyroscope

pyroscope.configure(
    application_name="py-burner",
    server_address=sys.argv[1],
    tags={"region": "test-1", "team": "interop"},
    upload_interval=1,
    enable_logging=True,
)


def burn_alpha(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def burn_beta(n):
    x = 1.0
    for i in range(n):
        x = x * 1.0000001 + 0.5 / (x + 1.0)
    return x


deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    with pyroscope.tag_wrapper({"phase": "alpha"}):
        burn_alpha(200000)
    burn_beta(200000)

pyroscope.shutdown()
"#;

/// Runs `command` to its end, killing it after `limit`.
fn run_bounded(mut command: Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{command:?} ran longer than {limit:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The real Python SDK pushes (the push API, as pyroscope-io 1.x does) to
/// a collector that writes pprof files: `go tool pprof` reads them, they
/// hold the Python functions and the thread tag, and the application name
/// and static tags became `service.name` and resource attributes (the
/// file names say so).
#[test]
fn the_pyroscope_python_sdk_pushes_through_to_pprof_files() {
    let Some(python) = venv_python("pyroscope", "pyroscope-io", PYTHON_PURPOSE) else {
        return;
    };
    if require_tool("go", &["version"], PYTHON_PURPOSE).is_none() {
        return;
    }
    let collector = InProcess::start(
        "legacy-python-sdk",
        "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
         exporters:\n  file:\n    path: {data}\n    format: pprof\n    path_template: \"{service.name}/{region}/{team}/{profile_type}/{time}-{seq}.pb.gz\"\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
    );
    let dir = TempDir::new("legacy-python-sdk-program");
    let program = dir.path().join("burner.py");
    std::fs::write(&program, PYTHON_PROGRAM).unwrap();
    let mut command = Command::new(&python);
    command
        .arg(&program)
        .arg(format!("http://{}", collector.address(PYROSCOPE)))
        .arg("3");
    let run = run_bounded(command, Duration::from_secs(120));
    let log = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "the Python program failed: {log}");

    let folder = collector.data.join("py-burner/test-1/interop");
    let deadline = Instant::now() + Duration::from_secs(60);
    let files = loop {
        let files = pprof_files(&folder);
        if !files.is_empty() {
            break files;
        }
        assert!(
            Instant::now() < deadline,
            "nothing was written under {} within 60 s; the SDK said: {log}; the collector wrote {:?}",
            folder.display(),
            pprof_files(&collector.data)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let home = TempDir::new("legacy-python-sdk-pprof");
    let mut text = String::new();
    for file in &files {
        let raw = raw_text::go_tool_pprof(&["-raw"], file, home.path())
            .unwrap_or_else(|e| panic!("go tool pprof -raw {}: {e}", file.display()));
        assert!(raw.contains("Samples:"), "{raw}");
        text.push_str(&raw);
    }
    for expected in ["burn_alpha", "burn_beta", "phase:[alpha]"] {
        assert!(
            text.contains(expected),
            "{expected} is not in the profiles: {text}"
        );
    }
}

/// Every `.pb.gz` file under `dir`, at any depth.
fn pprof_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.to_string_lossy().ends_with(".pb.gz") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

// ------------------------------------------------------- the file receiver

/// A folder to watch and one for the receiver's state, outside the
/// collector's own folder so that they outlive a restart.
struct Watched {
    dir: TempDir,
}

impl Watched {
    fn new(label: &str) -> Self {
        let dir = TempDir::new(label);
        for sub in ["in", "state", "done", "in-delete", "in-move", "in-end"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// Writes a file elsewhere and renames it in, as a profiler would.
    fn drop_file(&self, sub: &str, name: &str, bytes: &[u8]) {
        let staging = self.dir.path().join(format!("staging-{name}"));
        std::fs::write(&staging, bytes).unwrap();
        std::fs::rename(&staging, self.path(sub).join(name)).unwrap();
    }
}

fn file_sink_config(watched: &Watched, receivers: &str, ids: &str) -> String {
    let root = watched.dir.path().display();
    format!(
        "receivers:\n{}\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [{ids}]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        receivers.replace("ROOT", &root.to_string())
    )
}

fn otlp_request_bytes(profile: &Profile) -> Vec<u8> {
    pprof_to_otlp(
        &[PprofInput {
            profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    )
    .request
    .encode_to_vec()
}

/// How many requests are written for `service` once nothing more comes
/// for a few polls.
fn settled_count(data: &Path, service: &str) -> usize {
    std::thread::sleep(Duration::from_millis(800));
    otlp_files(&data.join(service)).len()
}

#[test]
fn the_file_receiver_delivers_each_file_once_across_restarts() {
    let Some(heap) = corpus_file("cppbench.heap") else {
        return;
    };
    let cpu = corpus_file("go.crc32.cpu").unwrap();
    let watched = Watched::new("legacy-files");
    let config = file_sink_config(
        &watched,
        "  file:\n    include: [ROOT/in/*]\n    poll_interval: 100ms\n    checkpoint: ROOT/state/checkpoint.json\n    service_name_from: filename\n    resource_attributes:\n      deployment.environment: test\n",
        "file",
    );
    let collector = Collector::start_logged("legacy-files-collector", &config);
    let (cpu_profile, _) = parse_any(&cpu.bytes, &DecodeOptions::default()).unwrap();
    let folded = write_folded(&cpu_profile, 1).unwrap();
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("heap.prof", heap.bytes.clone()),
        ("cpu.pb.gz", cpu.bytes.clone()),
        ("folded.txt", folded.clone().into_bytes()),
        ("otlp.otlp.pb", otlp_request_bytes(&cpu_profile)),
    ];
    for (name, bytes) in &inputs {
        watched.drop_file("in", name, bytes);
    }
    for (name, bytes) in &inputs {
        let service = name.split('.').next().unwrap();
        let requests = requests_for(&collector.data, service, 1);
        let expected = match parse_any(bytes, &DecodeOptions::default()) {
            Ok((profile, _)) => pprof_totals(&profile),
            Err(_) => pprof_totals(&cpu_profile),
        };
        assert_eq!(otlp_totals(&requests), expected, "{name}");
        assert_eq!(
            resource_of(&requests[0]),
            attributes(&[
                ("deployment.environment", "test"),
                ("service.name", service)
            ]),
            "{name}"
        );
    }
    for (name, _) in &inputs {
        let service = name.split('.').next().unwrap();
        assert_eq!(
            settled_count(&collector.data, service),
            1,
            "{name} was sent again"
        );
    }
    let watching = std::fs::read_to_string(watched.path("state/checkpoint.json")).unwrap();
    assert!(
        watching.contains("heap.prof") && watching.contains("\"sent\""),
        "{watching}"
    );

    // A restart on the same checkpoint sends nothing again…
    let (status, dir) = collector.terminate();
    assert!(status.success(), "{status}");
    let collector = Collector::restart_logged(dir);
    for (name, _) in &inputs {
        let service = name.split('.').next().unwrap();
        assert_eq!(
            settled_count(&collector.data, service),
            1,
            "{name} was sent again after a restart"
        );
    }
    // …but reads a changed file again, and a new one.
    watched.drop_file("in", "heap.prof", &gzip(&heap.bytes));
    watched.drop_file("in", "late.prof", &heap.bytes);
    assert_eq!(requests_for(&collector.data, "heap", 2).len(), 2);
    requests_for(&collector.data, "late", 1);
    assert_eq!(settled_count(&collector.data, "heap"), 2);
    assert!(collector.log().contains("delivered a profile file"));
}

#[test]
fn a_corrupt_file_is_logged_and_moved_aside_once() {
    let Some(heap) = corpus_file("cppbench.heap") else {
        return;
    };
    let watched = Watched::new("legacy-corrupt");
    let config = file_sink_config(
        &watched,
        "  file:\n    include: [ROOT/in/*.prof]\n    poll_interval: 100ms\n    checkpoint: ROOT/state/checkpoint.json\n    service_name_from: filename\n",
        "file",
    );
    let collector = Collector::start_logged("legacy-corrupt-collector", &config);
    watched.drop_file("in", "broken.prof", b"\x00\x01\x02 not a profile at all");
    let mut truncated = heap.bytes.clone();
    truncated.truncate(heap.bytes.len() / 3);
    truncated.extend_from_slice(b"\nthis line is not part of a heap profile\n");
    watched.drop_file("in", "cut.prof", &truncated);
    watched.drop_file("in", "good.prof", &heap.bytes);
    requests_for(&collector.data, "good", 1);

    let aside = watched.path("in/.failed");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(aside.join("broken.prof").exists() && aside.join("cut.prof").exists()) {
        assert!(
            Instant::now() < deadline,
            "the corrupt files were not moved aside"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!watched.path("in/broken.prof").exists());
    std::thread::sleep(Duration::from_millis(800));
    let log = collector.log();
    for name in ["broken.prof", "cut.prof"] {
        let path = watched.path("in").join(name).display().to_string();
        let lines: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("cannot deliver a profile file") && line.contains(&path))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: {lines:#?}\n{log}");
    }
    assert!(log.contains("unrecognized format"), "{log}");
    assert!(!collector.data.join("broken").exists() && !collector.data.join("cut").exists());
}

#[test]
fn the_file_receiver_deletes_moves_or_skips_as_configured() {
    let Some(heap) = corpus_file("cppbench.heap") else {
        return;
    };
    let watched = Watched::new("legacy-after");
    // One file is there before the first start: start_at end skips it.
    watched.drop_file("in-end", "old.prof", &heap.bytes);
    let config = file_sink_config(
        &watched,
        "  file/delete:\n    include: [ROOT/in-delete/*]\n    poll_interval: 100ms\n    checkpoint: ROOT/state/delete.json\n    after_success: delete\n    service_name_from: filename\n\
         \x20 file/move:\n    include: [ROOT/in-move/*]\n    poll_interval: 100ms\n    checkpoint: ROOT/state/move.json\n    after_success: move\n    move_to: ROOT/done\n    service_name_from: filename\n\
         \x20 file/end:\n    include: [ROOT/in-end/*]\n    poll_interval: 100ms\n    checkpoint: ROOT/state/end.json\n    start_at: end\n    service_name_from: filename\n",
        "file/delete, file/move, file/end",
    );
    let collector = InProcess::start("legacy-after-collector", &config);
    watched.drop_file("in-delete", "deleted.prof", &heap.bytes);
    watched.drop_file("in-move", "moved.prof", &heap.bytes);
    watched.drop_file("in-end", "new.prof", &heap.bytes);
    requests_for(&collector.data, "deleted", 1);
    requests_for(&collector.data, "moved", 1);
    requests_for(&collector.data, "new", 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    while watched.path("in-delete/deleted.prof").exists()
        || !watched.path("done/moved.prof").exists()
    {
        assert!(
            Instant::now() < deadline,
            "delivered files were neither deleted nor moved"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!watched.path("in-move/moved.prof").exists());
    assert_eq!(settled_count(&collector.data, "old"), 0);
    assert!(watched.path("in-end/old.prof").exists());
    assert_eq!(settled_count(&collector.data, "moved"), 1);
}

// ------------------------------------------------------- example configs

#[test]
fn every_example_configuration_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/examples");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    examples.sort();
    for name in [
        "pprof-push.yaml",
        "pprof-scrape-sidecar.yaml",
        "java-agent.yaml",
        "pyroscope-ingest.yaml",
        "file-watch.yaml",
        "kafka-agent.yaml",
        "kafka-gateway.yaml",
        "symbolize-node-agent.yaml",
    ] {
        assert!(
            examples.iter().any(|path| path.ends_with(name)),
            "config/examples/{name} is missing"
        );
    }
    for example in examples {
        let output = Command::new(env!("CARGO_BIN_EXE_profbridge"))
            .args(["validate", "--config"])
            .arg(&example)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            example.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.ends_with(": OK\n"),
            "{}: {stdout}",
            example.display()
        );
        // Examples are written in the current shape: nothing deprecated.
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("warning"),
            "{}: {stderr}",
            example.display()
        );
    }
}
