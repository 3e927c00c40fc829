#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The Pyroscope receiver takes what the Pyroscope Java agent uploads:
//! `POST /ingest?…&format=jfr` with a multipart form of a gzipped JFR
//! recording (`jfr`) and a gzipped labels snapshot (`labels`), through a
//! spawned `profbridge serve` into pprof files, and through the Pyroscope
//! exporter into a second collector whose pprof files hold the same.
//!
//! The agent itself (async-profiler in a jar from Maven) cannot run here,
//! so the request is built byte for byte as grafana/pyroscope-java 2.9.1
//! (commit eaf9428, agent/src/main/java/io/pyroscope/javaagent/impl/
//! PyroscopeExporter.java) has OkHttp 4.12 write it; the recording is a
//! real one, made by the JDK's own recorder around the testkit's Java
//! workload (profbridge_testkit::jdk). JDK recordings carry no context ids,
//! so the agent's context labels and native and kernel frames are tested
//! with a recording shaped as the agent's async-profiler writes it
//! (profbridge_testkit::jfr_writer::async_profiler).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use profbridge_pprof::{parse_any, DecodeOptions, Profile};
use profbridge_testkit::jdk::{self, RecordSpec};
use profbridge_testkit::jfr_writer::async_profiler::{AsyncProfilerRecording, Frame, FrameType};
use profbridge_testkit::{files_under, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::validate_request;
use prost::Message;

use crate::jfr_cli::{profbridge, string_attribute, succeeded};
use crate::support::collector::Collector;

/// The receiver's description on its `listening on` line.
const PYROSCOPE: &str = "Pyroscope ingest";

/// A JFR recording of the testkit's Java workload (3 s, the JDK's
/// `profile` settings with every event Pyroscope reads), made once per
/// machine; `None` (skipped loudly) without a JDK.
fn recording() -> Option<&'static [u8]> {
    static RECORDING: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    RECORDING
        .get_or_init(|| {
            let purpose = "recording a JFR file for the Pyroscope JFR ingest tests";
            jdk::record(&RecordSpec::standard(), purpose).map(|(_, recording)| recording.bytes())
        })
        .as_deref()
}

// ------------------------------------------- the request as the agent makes it

/// `LabelsSnapshot` of pyroscope-java's agent/jfr_labels.proto.
#[derive(Clone, PartialEq, prost::Message)]
struct LabelsSnapshot {
    #[prost(map = "int64, message", tag = "1")]
    contexts: std::collections::HashMap<i64, LabelsContext>,
    #[prost(map = "int64, string", tag = "2")]
    strings: std::collections::HashMap<i64, String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LabelsContext {
    #[prost(map = "int64, int64", tag = "1")]
    labels: std::collections::HashMap<i64, i64>,
}

/// A snapshot as `Pyroscope.LabelsWrapper.dump()` makes it: each context
/// (its id from the agent's counter, from 1) maps label key and value to
/// ids of one string table, numbered from 1 in order of first use.
fn labels_snapshot(contexts: &[&[(&str, &str)]]) -> Vec<u8> {
    let mut snapshot = LabelsSnapshot::default();
    let mut ids: BTreeMap<String, i64> = BTreeMap::new();
    let mut id_of = |text: &str| {
        let next = i64::try_from(ids.len()).unwrap() + 1;
        *ids.entry(text.to_owned()).or_insert(next)
    };
    for (index, labels) in contexts.iter().enumerate() {
        let mut context = LabelsContext::default();
        for (key, value) in *labels {
            let (key, value) = (id_of(key), id_of(value));
            context.labels.insert(key, value);
        }
        snapshot
            .contexts
            .insert(i64::try_from(index).unwrap() + 1, context);
    }
    snapshot.strings = ids.into_iter().map(|(text, id)| (id, text)).collect();
    snapshot.encode_to_vec()
}

/// gzip as the agent's `GzipSink` writes it: a 10-byte header with no
/// flags, no time, no extra flags and OS 0, raw deflate at the agent's
/// default level (`Deflater.BEST_SPEED`), CRC-32 and length.
fn agent_gzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0];
    let mut deflate = flate2::write::DeflateEncoder::new(out, flate2::Compression::fast());
    deflate.write_all(bytes).unwrap();
    out = deflate.finish().unwrap();
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    out.extend(crc.sum().to_le_bytes());
    out.extend(u32::try_from(bytes.len()).unwrap().to_le_bytes());
    out
}

/// A query value encoded as OkHttp's `HttpUrl.addQueryParameter` encodes
/// it (its query component set, `+`, controls and non-ASCII as %XX).
fn query_component(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        let keep = byte.is_ascii_graphic() && !b" !\"#$&'(),/:;<=>?@[]\\^`{|}~+".contains(&byte);
        if keep {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// What one agent upload holds.
struct Upload<'a> {
    /// `AppName.toString()`: the application name and the labels, sorted.
    name: String,
    from: u64,
    until: u64,
    recording: &'a [u8],
    labels: Option<Vec<u8>>,
}

impl Upload<'_> {
    /// The agent's name for an application `shop` with the static label
    /// `env=staging` and the labels it adds itself (sorted, as its
    /// `TreeMap` keeps them).
    fn shop(recording: &[u8], labels: Option<Vec<u8>>) -> Upload<'_> {
        let until = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        Upload {
            name: "shop{env=staging,otel.scope.name=com.grafana.pyroscope/java,\
                   process.runtime.name=OpenJDK Runtime Environment,\
                   process.runtime.version=17.0.15+6-Debian-1deb12u1}"
                .to_owned(),
            from: until - 10,
            until,
            recording,
            labels,
        }
    }

    /// `urlForSnapshot` for the default event (itimer: units samples,
    /// aggregation sum, and `sampleRate` from the 10 ms interval).
    fn target(&self) -> String {
        format!(
            "/ingest?name={}&units=samples&aggregationType=sum&from={}&until={}&spyName=javaspy&sampleRate=100&format=jfr",
            query_component(&self.name),
            self.from,
            self.until
        )
    }

    /// `requestBody`: OkHttp's `MultipartBody` (type form-data, a random
    /// UUID boundary) with the `jfr` part (filename `jfr`, no Content-Type)
    /// and, when the snapshot is not empty, the `labels` part (filename
    /// `labels`, `application/x-protobuf`), each gzipped. A gzipped part's
    /// length is unknown, so no part has a Content-Length.
    fn body(&self, boundary: &str) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n\r\n"
            )
            .bytes(),
        );
        body.extend(agent_gzip(self.recording));
        body.extend(b"\r\n");
        if let Some(labels) = self.labels.as_ref().filter(|labels| !labels.is_empty()) {
            body.extend(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"labels\"; filename=\"labels\"\r\n\
                     Content-Type: application/x-protobuf\r\n\r\n"
                )
                .bytes(),
            );
            body.extend(agent_gzip(labels));
            body.extend(b"\r\n");
        }
        body.extend(format!("--{boundary}--\r\n").bytes());
        body
    }

    /// Sends the upload as OkHttp does (chunked: the body's length is not
    /// known in advance; `Connection: close` here so that the answer is
    /// read to its end): (status, answer).
    fn send(&self, address: SocketAddr) -> (u16, String) {
        let boundary = "0b6e3a52-8f3c-4c4e-9d7a-3f1a2b3c4d5e";
        let head = format!(
            "POST {} HTTP/1.1\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
             Transfer-Encoding: chunked\r\nHost: {address}\r\nConnection: close\r\n\
             Accept-Encoding: gzip\r\nUser-Agent: okhttp/4.12.0\r\n\r\n",
            self.target()
        );
        let body = self.body(boundary);
        let mut chunked = Vec::new();
        for chunk in body.chunks(8192) {
            chunked.extend(format!("{:x}\r\n", chunk.len()).bytes());
            chunked.extend(chunk);
            chunked.extend(b"\r\n");
        }
        chunked.extend(b"0\r\n\r\n");
        exchange(address, &head, &chunked)
    }
}

/// One exchange on a fresh connection: (status, answer body). A refused
/// body may be cut off; the answer is still read.
fn exchange(address: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {text:?}"));
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        body.to_owned(),
    )
}

/// A POST with a Content-Length: (status, answer body).
fn post(address: SocketAddr, target: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    exchange(address, &head, body)
}

// ------------------------------------------------------ what was written

/// pprof files under `{service.name}/{env}/{pyroscope.profile_name}/…`.
const PPROF_SINK: &str = "    format: pprof\n    path_template: \"{service.name}/{env}/{pyroscope.profile_name}/{profile_type}/{time}-{seq}.pb.gz\"\n";

/// The profiles written under `data/shop/staging/`, by metric name, once
/// there are `files` of them.
fn written(data: &Path, files: usize) -> BTreeMap<String, Vec<Profile>> {
    let root = data.join("shop").join("staging");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut by_metric: BTreeMap<String, Vec<Profile>> = BTreeMap::new();
        let mut read = 0;
        for file in files_under(&root, ".pb.gz") {
            let metric = file.strip_prefix(&root).unwrap().iter().next().unwrap();
            let bytes = std::fs::read(&file).unwrap();
            let Ok((profile, _)) = parse_any(&bytes, &DecodeOptions::default()) else {
                continue; // still being written
            };
            read += 1;
            by_metric
                .entry(metric.to_string_lossy().into_owned())
                .or_default()
                .push(profile);
        }
        if read >= files {
            return by_metric;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {read} profiles, not {files}: {:?}",
            root.display(),
            by_metric.keys().collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[usize::try_from(index).unwrap()]
}

fn sample_types(profile: &Profile) -> Vec<(String, String)> {
    profile
        .sample_type
        .iter()
        .map(|t| {
            (
                text(profile, t.r#type).to_owned(),
                text(profile, t.unit).to_owned(),
            )
        })
        .collect()
}

fn function_names(profile: &Profile) -> BTreeSet<String> {
    profile
        .function
        .iter()
        .map(|f| text(profile, f.name).to_owned())
        .collect()
}

/// Per metric: the sample types and each type's total.
fn totals(written: &BTreeMap<String, Vec<Profile>>) -> BTreeMap<String, Vec<(String, i128)>> {
    written
        .iter()
        .map(|(metric, profiles)| {
            let mut sums: BTreeMap<String, i128> = BTreeMap::new();
            for profile in profiles {
                for (index, (name, unit)) in sample_types(profile).into_iter().enumerate() {
                    let sum: i128 = profile
                        .sample
                        .iter()
                        .map(|s| i128::from(s.value[index]))
                        .sum();
                    *sums.entry(format!("{name}/{unit}")).or_default() += sum;
                }
            }
            (metric.clone(), sums.into_iter().collect())
        })
        .collect()
}

/// The profiles a recording of the workload makes, by metric name: the
/// sample types Pyroscope gives each.
fn expected_profiles() -> BTreeMap<&'static str, BTreeSet<Vec<(&'static str, &'static str)>>> {
    let lock = vec![("contentions", "count"), ("delay", "nanoseconds")];
    BTreeMap::from([
        (
            "process_cpu",
            BTreeSet::from([vec![("cpu", "nanoseconds")]]),
        ),
        (
            "memory",
            BTreeSet::from([
                vec![
                    ("alloc_in_new_tlab_objects", "count"),
                    ("alloc_in_new_tlab_bytes", "bytes"),
                ],
                vec![
                    ("alloc_outside_tlab_objects", "count"),
                    ("alloc_outside_tlab_bytes", "bytes"),
                ],
                vec![
                    ("alloc_sample_objects", "count"),
                    ("alloc_sample_bytes", "bytes"),
                ],
            ]),
        ),
        ("mutex", BTreeSet::from([lock.clone()])),
        ("block", BTreeSet::from([lock])),
    ])
}

fn owned(types: &[(&str, &str)]) -> Vec<(String, String)> {
    types
        .iter()
        .map(|(t, u)| ((*t).to_owned(), (*u).to_owned()))
        .collect()
}

/// A collector whose Pyroscope receiver (with `receiver_settings`, lines
/// indented under it) writes pprof files.
fn files_collector(label: &str, receiver_settings: &str) -> Collector {
    Collector::start(
        label,
        &format!(
            "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n{receiver_settings}\
             exporters:\n  file:\n    path: {{data}}\n{PPROF_SINK}\
             service:\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n"
        ),
    )
}

// ------------------------------------------------------------------ tests

#[test]

fn the_java_agents_upload_reaches_the_files_and_pyroscope_again() {
    let Some(recording) = recording() else {
        return;
    };
    // The collector the front's Pyroscope exporter pushes to, as to a
    // Pyroscope server.
    let back = Collector::start(
        "jfr-back",
        &format!(
            "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
             exporters:\n  file:\n    path: {{data}}\n{PPROF_SINK}\
             service:\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n"
        ),
    );
    let front = Collector::start(
        "jfr-front",
        &format!(
            "receivers:\n  pyroscope:\n    endpoint: 127.0.0.1:0\n\
             exporters:\n  file:\n    path: {{data}}\n{PPROF_SINK}\
             \x20 pyroscope:\n    endpoint: http://{back}\n    labels_from_resource_attributes: [env, jfr_event]\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [pyroscope]\n      exporters: [file, pyroscope]\n  telemetry:\n    metrics:\n      address: \"\"\n",
            back = back.address(PYROSCOPE)
        ),
    );
    // JDK recordings carry no context ids, so these labels reach no
    // sample; the snapshot is still read (a bad one is refused, below).
    let labels = labels_snapshot(&[&[("span_name", "checkout")], &[("span_name", "pay")]]);
    let upload = Upload::shop(recording, Some(labels));
    let (status, answer) = upload.send(front.address(PYROSCOPE));
    assert_eq!(status, 200, "{answer}");

    let expected = expected_profiles();
    let files: usize = expected.values().map(BTreeSet::len).sum();
    let front_written = written(&front.data, files);
    for (metric, profiles) in &front_written {
        let types = expected
            .get(metric.as_str())
            .unwrap_or_else(|| panic!("unexpected metric {metric}"));
        let found: BTreeSet<Vec<(String, String)>> = profiles.iter().map(sample_types).collect();
        let wanted: BTreeSet<Vec<(String, String)>> = types.iter().map(|t| owned(t)).collect();
        assert_eq!(found, wanted, "{metric}");
        for profile in profiles {
            // Time and duration are the agent's from and until.
            assert_eq!(
                profile.time_nanos,
                i64::try_from(upload.from).unwrap() * 1_000_000_000,
                "{metric}"
            );
            assert_eq!(profile.duration_nanos, 10_000_000_000, "{metric}");
        }
    }
    let has = |metric: &str, function: &str| {
        front_written[metric]
            .iter()
            .any(|p| function_names(p).contains(function))
    };
    assert!(has("process_cpu", "Burn.spinA") && has("process_cpu", "Burn.spinB"));
    assert!(has("memory", "Alloc.large") && has("memory", "Alloc.small"));
    assert!(has("mutex", "Contend.hold"));
    assert!(has("block", "Park.nap"));
    // A CPU sample weighs 1e9 / sampleRate nanoseconds.
    let cpu_total: i64 = front_written["process_cpu"]
        .iter()
        .flat_map(|p| &p.sample)
        .map(|s| s.value[0])
        .sum();
    assert!(cpu_total > 0 && cpu_total % 10_000_000 == 0, "{cpu_total}");

    // Pushed on as Pyroscope would have stored each series (`__name__`
    // the metric, `service_name`, `env`): the same files, the same totals.
    let back_written = written(&back.data, files);
    assert_eq!(totals(&back_written), totals(&front_written));
}

#[test]
fn bad_uploads_are_refused_and_nothing_is_written() {
    let collector = files_collector("jfr-refusals", "    max_request_body_size: 1MiB\n");
    let address = collector.address(PYROSCOPE);
    // A recording cut short: the real one when a JDK is here, else a
    // chunk header that stops after the magic and version.
    let cut: Vec<u8> = match recording() {
        Some(recording) => recording[..recording.len() / 3].to_vec(),
        None => b"FLR\0\0\x02\0\0".to_vec(),
    };
    let refuse = |upload: &Upload<'_>, status: u16, needle: &str| {
        let (got, answer) = upload.send(address);
        assert_eq!(got, status, "{needle}: {answer}");
        assert!(answer.contains(needle), "{needle:?} not in {answer:?}");
    };
    refuse(
        &Upload::shop(&cut, None),
        400,
        "cannot read the JFR recording",
    );
    refuse(
        &Upload::shop(b"PK\x03\x04 a zip, not a recording", None),
        400,
        "not a JFR recording",
    );
    refuse(
        &Upload::shop(b"FLR\0\0\x02\0\0", Some(b"\xff\xff\xff\xff".to_vec())),
        400,
        "the labels part is not a Pyroscope labels snapshot",
    );
    // The bare recording as the body.
    let upload = Upload::shop(&cut, None);
    let (status, answer) = post(address, &upload.target(), "application/octet-stream", &cut);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("cannot read the JFR recording"), "{answer}");
    // A form without a jfr part.
    let form = b"--b\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile\"\r\n\r\nx\r\n--b--\r\n";
    let (status, answer) = post(
        address,
        &upload.target(),
        "multipart/form-data; boundary=b",
        form,
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("no jfr part (its parts: \"profile\")"),
        "{answer}"
    );
    // Past max_request_body_size: as sent, and once the jfr part is
    // gunzipped.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<u8> = (0..2 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    refuse(&Upload::shop(&noise, None), 413, "max_request_body_size");
    let mut bomb = b"FLR\0\0\x02\0\0".to_vec();
    bomb.resize(8 << 20, 0);
    refuse(&Upload::shop(&bomb, None), 413, "max_request_body_size");

    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        files_under(&collector.data, ".pb.gz"),
        Vec::<PathBuf>::new()
    );
}

// ------------------------------- the agent's own recording: contexts, native frames

/// The agent's contexts in the order its `ScopedContext`s were opened
/// (context ids 1, 2, 3); the recording's samples have these, none (0),
/// and 7, which the snapshot does not hold.
const AGENT_CONTEXTS: &[&[(&str, &str)]] = &[
    &[("span_name", "checkout"), ("customer", "acme")],
    &[("span_name", "pay"), ("customer", "globex")],
    &[
        ("span_name", "checkout"),
        ("customer", "initech"),
        ("region", "eu-west-1"),
    ],
];

/// The labels of context `id` as the agent set them; none for 0 or an id
/// the snapshot does not hold.
fn context_labels(id: i64) -> Vec<(String, String)> {
    usize::try_from(id)
        .ok()
        .and_then(|id| id.checked_sub(1))
        .and_then(|at| AGENT_CONTEXTS.get(at))
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The OpenTelemetry frame type async-profiler's frame type means.
fn otel_frame_type(frame: &Frame) -> &'static str {
    match frame.frame_type() {
        FrameType::Native | FrameType::Cpp => "native",
        FrameType::Kernel => "kernel",
        FrameType::Interpreted
        | FrameType::JitCompiled
        | FrameType::Inlined
        | FrameType::C1Compiled => "jvm",
    }
}

/// Pyroscope's name of a frame: the method's class (for a native
/// function, its library) and name, joined by a dot.
fn pyroscope_frame_name(frame: &Frame) -> String {
    format!("{}.{}", frame.class_name(), frame.method_name())
}

/// `profile.frame.types` of a stack (docs/mapping.md): run-length items
/// `type` or `type*n`, leaf first.
fn frame_types_label(stack: &[Frame]) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for frame in stack {
        let kind = otel_frame_type(frame);
        match runs.last_mut() {
            Some((last, count)) if *last == kind => *count += 1,
            _ => runs.push((kind, 1)),
        }
    }
    runs.iter()
        .map(|(kind, count)| match count {
            1 => (*kind).to_owned(),
            n => format!("{kind}*{n}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A sample's stack as (frame name, line), leaf first, and its labels,
/// sorted.
type LabeledStack = (Vec<(String, i64)>, Vec<(String, String)>);

/// The samples of a pprof profile: values summed per stack and labels.
fn labeled_samples(profile: &Profile) -> BTreeMap<LabeledStack, i64> {
    let mut out = BTreeMap::new();
    for sample in &profile.sample {
        let stack = sample
            .location_id
            .iter()
            .flat_map(|id| {
                let location = profile.location.iter().find(|l| l.id == *id).unwrap();
                location.line.iter().map(|line| {
                    let function = profile
                        .function
                        .iter()
                        .find(|f| f.id == line.function_id)
                        .unwrap();
                    (text(profile, function.name).to_owned(), line.line)
                })
            })
            .collect();
        let mut labels: Vec<(String, String)> = sample
            .label
            .iter()
            .map(|l| {
                (
                    text(profile, l.key).to_owned(),
                    text(profile, l.str).to_owned(),
                )
            })
            .collect();
        labels.sort();
        *out.entry((stack, labels)).or_default() += sample.value[0];
    }
    out
}

/// The Java agent uploads what its async-profiler recorded (CPU samples
/// under the agent's contexts, in Java, native library and kernel code)
/// with its labels snapshot: each sample written carries exactly its
/// context's labels, its thread's name and its frames' types, and weighs
/// 1e9 / sampleRate nanoseconds.
#[test]
fn the_agents_context_labels_and_native_frames_reach_the_files() {
    let recording = AsyncProfilerRecording::agent_example();
    let bytes = recording.build();
    let contexts: BTreeSet<i64> = recording
        .execution_samples
        .iter()
        .map(|s| s.context_id)
        .collect();
    assert_eq!(contexts, BTreeSet::from([0, 1, 2, 3, 7]));
    let collector = files_collector("jfr-agent-labels", "");
    let upload = Upload::shop(&bytes, Some(labels_snapshot(AGENT_CONTEXTS)));
    let (status, answer) = upload.send(collector.address(PYROSCOPE));
    assert_eq!(status, 200, "{answer}");

    let written = written(&collector.data, 1);
    assert_eq!(written.keys().collect::<Vec<_>>(), ["process_cpu"]);
    assert_eq!(written["process_cpu"].len(), 1);
    let profile = &written["process_cpu"][0];
    assert_eq!(
        sample_types(profile),
        owned(&[("cpu", "nanoseconds")]),
        "async-profiler's itimer samples are CPU time"
    );

    // What the recording holds, sample by sample (the upload's sampleRate
    // is 100).
    let mut want: BTreeMap<LabeledStack, i64> = BTreeMap::new();
    for sample in &recording.execution_samples {
        let stack = sample
            .stack
            .iter()
            .map(|f| (pyroscope_frame_name(f), i64::from(f.line())))
            .collect();
        let thread = recording
            .threads
            .iter()
            .find(|t| t.tid == sample.tid)
            .unwrap();
        let mut labels = context_labels(sample.context_id);
        labels.push(("thread_name".to_owned(), thread.name.clone()));
        labels.push((
            "profile.frame.types".to_owned(),
            frame_types_label(&sample.stack),
        ));
        labels.sort();
        *want.entry((stack, labels)).or_default() += 1_000_000_000 / 100;
    }
    let got = labeled_samples(profile);
    assert!(got == want, "written:\n{got:#?}\nrecorded:\n{want:#?}");
    // Not vacuous: samples of each context, and of none, are there.
    let customers: BTreeSet<Option<&str>> = got
        .keys()
        .map(|(_, labels)| {
            let customer = labels.iter().find(|(key, _)| key == "customer");
            customer.map(|(_, value)| value.as_str())
        })
        .collect();
    assert_eq!(
        customers,
        BTreeSet::from([None, Some("acme"), Some("globex"), Some("initech")])
    );
}

/// `convert --to otlp` of the agent's recording: every location has the
/// frame type async-profiler gave its frame, and samples carry their
/// thread's name.
#[test]
fn the_agents_recording_converts_to_otlp_with_frame_types() {
    let recording = AsyncProfilerRecording::agent_example();
    let dir = TempDir::new("jfr-agent-otlp");
    let input = dir.path().join("agent.jfr");
    std::fs::write(&input, recording.build()).unwrap();
    let output = dir.path().join("agent.otlp");
    succeeded(&profbridge(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "otlp",
        "-o",
        output.to_str().unwrap(),
    ]));
    let request = ExportProfilesServiceRequest::decode(&*std::fs::read(&output).unwrap()).unwrap();
    let validated = validate_request(&request).unwrap();
    assert!(validated.invalid.is_empty(), "{:?}", validated.invalid);
    let dictionary = request.dictionary.as_ref().unwrap();

    let want: BTreeSet<(String, String)> = recording
        .execution_samples
        .iter()
        .flat_map(|s| &s.stack)
        .map(|f| (pyroscope_frame_name(f), otel_frame_type(f).to_owned()))
        .collect();
    let kinds: BTreeSet<&str> = want.iter().map(|(_, kind)| kind.as_str()).collect();
    assert_eq!(kinds, BTreeSet::from(["jvm", "kernel", "native"]));
    let got: BTreeSet<(String, String)> = dictionary
        .location_table
        .iter()
        .filter(|location| !location.lines.is_empty())
        .map(|location| {
            let function = &dictionary.function_table[location.lines[0].function_index as usize];
            (
                dictionary.string_table[function.name_strindex as usize].clone(),
                string_attribute(
                    dictionary,
                    &location.attribute_indices,
                    "profile.frame.type",
                ),
            )
        })
        .collect();
    assert_eq!(got, want);

    let samples: Vec<_> = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .flat_map(|p| &p.samples)
        .collect();
    let threads: BTreeSet<String> = samples
        .iter()
        .map(|s| string_attribute(dictionary, &s.attribute_indices, "thread_name"))
        .collect();
    let want_threads: BTreeSet<String> = recording.threads.iter().map(|t| t.name.clone()).collect();
    assert_eq!(threads, want_threads);
}
