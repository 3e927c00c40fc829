//! `profbridge send`, end to end: the built binary sends corpus files
//! (pprof and legacy) and generated inputs to a collector running in the
//! test process, over gRPC and HTTP; what the collector wrote must hold the same totals
//! per sample type. Failures are named, with exit code 1.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use profbridge_pprof::{parse_any, DecodeOptions, Profile};
use profbridge_testkit::{corpus_files, ebpf_like_request, gperftools_cpu_profile, TempDir};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, ProfilesDictionary};
use prost::Message;

use crate::support::in_process::InProcess;

/// Totals keyed by (sample type, unit).
type Totals = BTreeMap<(String, String), i128>;

fn profbridge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(args)
        .output()
        .expect("run profbridge")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A collector on free ports writing every request as an OTLP file.
fn start_collector(label: &str) -> InProcess {
    InProcess::start(
        label,
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  file:\n    path: {data}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
    )
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if !path.file_name().unwrap().to_string_lossy().starts_with('.') {
            files.push(path);
        }
    }
    files
}

fn pprof_totals(profile: &Profile, totals: &mut Totals) {
    let text = |i: i64| profile.string_table[usize::try_from(i).unwrap()].clone();
    for sample in &profile.sample {
        for (value_type, value) in profile.sample_type.iter().zip(&sample.value) {
            *totals
                .entry((text(value_type.r#type), text(value_type.unit)))
                .or_default() += i128::from(*value);
        }
    }
}

fn otlp_totals(request: &ExportProfilesServiceRequest, totals: &mut Totals) {
    let empty = ProfilesDictionary::default();
    let dictionary = request.dictionary.as_ref().unwrap_or(&empty);
    let text = |i: i32| dictionary.string_table[usize::try_from(i).unwrap()].clone();
    let profiles = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles);
    for profile in profiles {
        let sample_type = profile.sample_type.as_ref().unwrap();
        let key = (
            text(sample_type.type_strindex),
            text(sample_type.unit_strindex),
        );
        let sum: i128 = profile
            .samples
            .iter()
            .flat_map(|s| &s.values)
            .map(|v| i128::from(*v))
            .sum();
        *totals.entry(key).or_default() += sum;
    }
}

/// The inputs: every corpus file (pprof and legacy formats), a generated
/// gperftools CPU profile and an OTLP request; and their expected totals.
fn inputs(dir: &Path) -> (Vec<String>, Totals) {
    let mut paths = Vec::new();
    let mut expected = Totals::new();
    for file in corpus_files() {
        let (profile, _) = parse_any(&file.bytes, &DecodeOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", file.name));
        pprof_totals(&profile, &mut expected);
        paths.push(file.path.to_str().unwrap().to_owned());
    }
    let gperftools = dir.join("generated.prof");
    let bytes = gperftools_cpu_profile(200, 11);
    let (profile, _) = parse_any(&bytes, &DecodeOptions::default()).unwrap();
    pprof_totals(&profile, &mut expected);
    std::fs::write(&gperftools, bytes).unwrap();
    paths.push(gperftools.to_str().unwrap().to_owned());
    let otlp = dir.join("ebpf.otlp.pb");
    let request = ebpf_like_request(200, 12);
    otlp_totals(&request, &mut expected);
    std::fs::write(&otlp, request.encode_to_vec()).unwrap();
    paths.push(otlp.to_str().unwrap().to_owned());
    (paths, expected)
}

/// Sends every input with `transport_args` and checks that the collector
/// wrote the same totals per sample type.
fn send_everything(label: &str, transport_args: &[&str], http: bool) {
    let dir = TempDir::new(label);
    let (paths, expected) = inputs(dir.path());
    let collector = start_collector(label);
    let endpoint = if http {
        format!("http://{}", collector.http.unwrap())
    } else {
        collector.grpc.unwrap().to_string()
    };
    let mut args = vec!["send", "--endpoint", &endpoint];
    args.extend_from_slice(transport_args);
    args.extend(["--resource-attr", "service.name=send-test"]);
    args.extend(paths.iter().map(String::as_str));
    let output = profbridge(&args);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        text(&output.stderr)
    );
    let sent_lines = stdout.lines().filter(|l| l.starts_with("sent ")).count();
    assert_eq!(sent_lines, paths.len(), "one line per file:\n{stdout}");

    let (drained, data) = collector.stop();
    assert!(drained);
    let mut received = Totals::new();
    let files = files_under(&data.path().join("data"));
    assert_eq!(files.len(), paths.len(), "one request per file");
    for file in &files {
        let request = ExportProfilesServiceRequest::decode(&*std::fs::read(file).unwrap()).unwrap();
        otlp_totals(&request, &mut received);
        assert!(
            file.to_str().unwrap().contains("send-test"),
            "the resource attribute names the file: {}",
            file.display()
        );
    }
    assert_eq!(received, expected);
}

#[test]
fn files_sent_over_grpc_arrive_with_their_totals() {
    send_everything("send-grpc", &[], false);
}

#[test]
fn files_sent_over_http_arrive_with_their_totals() {
    send_everything(
        "send-http",
        &["--protocol", "http", "--compression", "zstd"],
        true,
    );
}

#[test]
fn files_sent_as_json_arrive_with_their_totals() {
    send_everything(
        "send-json",
        &[
            "--protocol",
            "http",
            "--encoding",
            "json",
            "--compression",
            "none",
        ],
        true,
    );
}

#[test]
fn a_file_that_is_not_a_profile_is_named_and_the_rest_delivered() {
    let dir = TempDir::new("send-garbage");
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\x00\x01 this is not a profile \xff\xfe").unwrap();
    let good = dir.path().join("good.prof");
    std::fs::write(&good, gperftools_cpu_profile(50, 3)).unwrap();
    let collector = start_collector("send-garbage");
    let endpoint = collector.grpc.unwrap().to_string();
    let output = profbridge(&[
        "send",
        "--endpoint",
        &endpoint,
        garbage.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(
        stdout.contains(&format!("sent {}", good.display())),
        "{stdout}"
    );
    assert!(!stdout.contains("garbage.bin"), "{stdout}");
    assert!(
        stderr.contains(&format!("{}: not delivered", garbage.display())),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 files not delivered"), "{stderr}");
}

#[test]
fn an_unreachable_endpoint_is_reported_after_retrying() {
    let dir = TempDir::new("send-unreachable");
    let good = dir.path().join("good.prof");
    std::fs::write(&good, gperftools_cpu_profile(50, 4)).unwrap();
    // A port that was free a moment ago; nobody listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for protocol in ["grpc", "http"] {
        let endpoint = format!("http://127.0.0.1:{port}");
        let output = profbridge(&[
            "send",
            "--endpoint",
            &endpoint,
            "--protocol",
            protocol,
            "--retries",
            "1",
            "--max-elapsed-time",
            "5s",
            "--timeout",
            "2s",
            good.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{protocol}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("{}: not delivered", good.display())),
            "{protocol}: {stderr}"
        );
        assert!(
            stderr.contains("gave up after 2 tries"),
            "{protocol}: {stderr}"
        );
        assert!(text(&output.stdout).is_empty());
    }
}

#[test]
fn usage_errors_exit_with_2() {
    let dir = TempDir::new("send-usage");
    let good = dir.path().join("good.prof");
    std::fs::write(&good, gperftools_cpu_profile(10, 5)).unwrap();
    let good = good.to_str().unwrap();
    let cases: [&[&str]; 4] = [
        &["send", good],
        &[
            "send",
            "--endpoint",
            "127.0.0.1:1",
            "--encoding",
            "json",
            good,
        ],
        &["send", "--endpoint", "ftp://127.0.0.1:1", good],
        &[
            "send",
            "--endpoint",
            "127.0.0.1:1",
            "--header",
            "novalue",
            good,
        ],
    ];
    for args in cases {
        let output = profbridge(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}
