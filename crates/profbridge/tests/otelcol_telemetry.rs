//! `service.telemetry` in the OpenTelemetry Collector's shapes, end to end:
//! the `otelcol_*` metrics a Collector dashboard reads, read back by an
//! independent Prometheus parser (prometheus-client's) and checked against
//! profbridge's own names and against what the test sent; the endpoint set
//! through `readers`; `level: none`; and the log keys (`encoding`,
//! `initial_fields`, `output_paths`) in the real binary's output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use profbridge_testkit::{ebpf_like_request, venv_python};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

use crate::support::collector::Collector;
use crate::support::http::{exchange, get};
use crate::support::in_process::InProcess;

fn post_protobuf(address: SocketAddr, request: &ExportProfilesServiceRequest) -> (u16, String) {
    let body = request.encode_to_vec();
    exchange(
        address,
        &format!(
            "POST /v1development/profiles HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ),
        &body,
    )
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

/// Family name → (type, [(labels, value)]), as prometheus-client parses it.
type Families = BTreeMap<String, (String, Vec<(BTreeMap<String, String>, f64)>)>;

const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    out[family.name] = [family.type, [[s.labels, s.value] for s in family.samples]]
print(json.dumps(out))
"#;

fn parse_independently(python: &PathBuf, exposition: &str) -> Families {
    let mut child = Command::new(python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "prometheus-client could not parse /metrics: {}\n{exposition}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The value of `family` at exactly `labels`.
fn at(families: &Families, family: &str, labels: &BTreeMap<String, String>) -> f64 {
    let (_, samples) = families
        .get(family)
        .unwrap_or_else(|| panic!("no family {family}: {:?}", families.keys()));
    samples
        .iter()
        .find(|(found, _)| found == labels)
        .map(|(_, value)| *value)
        .unwrap_or_else(|| panic!("{family} has no series {labels:?}: {samples:?}"))
}

/// Checks `family` has `kind` and every series exactly the label names
/// `names`; returns its series.
fn collector_family<'a>(
    families: &'a Families,
    family: &str,
    kind: &str,
    names: &[&str],
) -> &'a [(BTreeMap<String, String>, f64)] {
    let (found_kind, samples) = families
        .get(family)
        .unwrap_or_else(|| panic!("no family {family}: {:?}", families.keys()));
    assert_eq!(found_kind, kind, "{family}");
    assert!(!samples.is_empty(), "{family} has no series");
    let expected: BTreeSet<&str> = names.iter().copied().collect();
    for (labels, _) in samples {
        let found: BTreeSet<&str> = labels.keys().map(String::as_str).collect();
        assert_eq!(found, expected, "{family}: the Collector's labels");
    }
    samples
}

/// The value of the series printed as `series` in our own exposition.
fn printed(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (name, number) = line.rsplit_once(' ')?;
        (name == series).then(|| number.parse().unwrap())
    })
}

/// The Prometheus endpoint spelled as a Collector's `readers`; a
/// `resource` processor; `nop` exports, `otlp` fails at once (nothing
/// listens on port 9, no retries).
const CONFIG: &str = "receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
      http:
        endpoint: 127.0.0.1:0
processors:
  resource:
    attributes:
      - {key: deployment.environment, value: test, action: upsert}
exporters:
  nop:
  otlp:
    endpoint: 127.0.0.1:9
    tls:
      insecure: true
    timeout: 2s
    retry_on_failure:
      enabled: false
service:
  pipelines:
    profiles:
      receivers: [otlp]
      processors: [resource]
      exporters: [nop, otlp]
  telemetry:
    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: 0
";

#[test]
fn collector_names_agree_with_profbridge_names_and_with_what_was_sent() {
    let Some(python) = venv_python(
        "prometheus_client.parser",
        "prometheus-client",
        "reading /metrics with an independent Prometheus parser",
    ) else {
        return;
    };
    let collector = InProcess::start("otelcol-names", CONFIG);
    let telemetry = collector.telemetry.expect("readers set the endpoint");

    let valid = ebpf_like_request(40, 1);
    let (profiles, samples) = profiles_and_samples(&valid);
    assert!(profiles > 0.0 && samples > profiles);
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

    // Exporters count after the response: wait until both have finished.
    let done = |text: &str| {
        printed(
            text,
            "profbridge_exporter_sent_profiles_total{exporter=\"nop\"}",
        ) == Some(profiles)
            && printed(
                text,
                "profbridge_exporter_send_failed_profiles_total{exporter=\"otlp\"}",
            ) == Some(profiles)
    };
    let mut text = get(telemetry, "/metrics").1;
    for _ in 0..400 {
        if done(&text) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        text = get(telemetry, "/metrics").1;
    }
    assert!(done(&text), "the exporters did not finish:\n{text}");
    let families = parse_independently(&python, &text);

    let http = labels(&[("receiver", "otlp"), ("transport", "http")]);
    // Receivers: samples, as the Collector counts profiles.
    let accepted = collector_family(
        &families,
        "otelcol_receiver_accepted_profile_samples",
        "counter",
        &["receiver", "transport"],
    );
    assert_eq!(
        at(
            &families,
            "otelcol_receiver_accepted_profile_samples",
            &http
        ),
        samples
    );
    for (series, value) in accepted {
        assert_eq!(
            *value,
            at(&families, "profbridge_receiver_accepted_samples", series),
            "{series:?}"
        );
    }
    collector_family(
        &families,
        "otelcol_receiver_refused_profile_samples",
        "counter",
        &["receiver", "transport"],
    );
    assert_eq!(
        at(&families, "otelcol_receiver_refused_profile_samples", &http),
        samples
    );
    let mut invalid_http = http.clone();
    invalid_http.insert("reason".to_owned(), "invalid".to_owned());
    assert_eq!(
        at(
            &families,
            "profbridge_receiver_refused_profiles",
            &invalid_http
        ),
        profiles
    );
    let grpc = labels(&[("receiver", "otlp"), ("transport", "grpc")]);
    assert_eq!(
        at(&families, "otelcol_receiver_refused_profile_samples", &grpc),
        0.0
    );

    // Exporters.
    let nop = labels(&[("exporter", "nop")]);
    let otlp = labels(&[("exporter", "otlp")]);
    for family in [
        "otelcol_exporter_sent_profile_samples",
        "otelcol_exporter_send_failed_profile_samples",
        "otelcol_exporter_enqueue_failed_profile_samples",
    ] {
        collector_family(&families, family, "counter", &["exporter"]);
    }
    assert_eq!(
        at(&families, "otelcol_exporter_sent_profile_samples", &nop),
        samples
    );
    assert_eq!(
        at(&families, "otelcol_exporter_sent_profile_samples", &otlp),
        0.0
    );
    assert_eq!(
        at(
            &families,
            "otelcol_exporter_send_failed_profile_samples",
            &otlp
        ),
        samples
    );
    assert_eq!(
        at(
            &families,
            "otelcol_exporter_send_failed_profile_samples",
            &nop
        ),
        0.0
    );
    assert_eq!(
        at(&families, "profbridge_exporter_sent_profiles", &nop),
        profiles
    );
    assert_eq!(
        at(&families, "profbridge_exporter_send_failed_profiles", &otlp),
        profiles
    );
    for exporter in [&nop, &otlp] {
        assert_eq!(
            at(
                &families,
                "otelcol_exporter_enqueue_failed_profile_samples",
                exporter
            ),
            0.0
        );
    }
    for (collector_name, ours) in [
        (
            "otelcol_exporter_queue_size",
            "profbridge_exporter_queue_size",
        ),
        (
            "otelcol_exporter_queue_capacity",
            "profbridge_exporter_queue_capacity",
        ),
    ] {
        let series = collector_family(
            &families,
            collector_name,
            "gauge",
            &["exporter", "data_type"],
        );
        assert_eq!(series.len(), 2, "{collector_name}: one series per exporter");
        for (series, value) in series {
            assert_eq!(series["data_type"], "profiles");
            let exporter = labels(&[("exporter", &series["exporter"])]);
            assert_eq!(
                *value,
                at(&families, ours, &exporter),
                "{collector_name} {series:?}"
            );
        }
    }
    assert!(
        at(
            &families,
            "otelcol_exporter_queue_capacity",
            &labels(&[("exporter", "nop"), ("data_type", "profiles")])
        ) > 0.0
    );

    // The processor: every valid sample in and out.
    let resource = labels(&[("processor", "resource"), ("otel_signal", "profiles")]);
    for (collector_name, ours) in [
        (
            "otelcol_processor_incoming_items",
            "profbridge_processor_incoming_samples",
        ),
        (
            "otelcol_processor_outgoing_items",
            "profbridge_processor_outgoing_samples",
        ),
    ] {
        collector_family(
            &families,
            collector_name,
            "counter",
            &["processor", "otel_signal"],
        );
        assert_eq!(at(&families, collector_name, &resource), samples);
        assert_eq!(
            at(&families, ours, &labels(&[("processor", "resource")])),
            samples,
            "{ours}"
        );
    }

    // The process. Families are rendered by name, otelcol_* first, so the
    // Collector's readings are never the later ones.
    let none = BTreeMap::new();
    collector_family(&families, "otelcol_process_uptime", "counter", &[]);
    collector_family(&families, "otelcol_process_cpu_seconds", "counter", &[]);
    collector_family(&families, "otelcol_process_memory_rss", "gauge", &[]);
    let uptime = at(&families, "otelcol_process_uptime", &none);
    assert!(uptime > 0.0);
    assert!(uptime <= at(&families, "profbridge_process_uptime_seconds", &none));
    let cpu = at(&families, "otelcol_process_cpu_seconds", &none);
    assert!(cpu <= at(&families, "profbridge_process_cpu_seconds", &none));
    if cfg!(target_os = "linux") {
        assert!(cpu > 0.0, "this process has used CPU time");
        assert!(at(&families, "otelcol_process_memory_rss", &none) > 0.0);
        assert!(at(&families, "profbridge_process_memory_rss_bytes", &none) > 0.0);
    }
    // The Collector's names as its endpoint prints them: no suffixes.
    assert!(text.contains("\n# TYPE otelcol_receiver_accepted_profile_samples counter\n"));
    assert!(!text.contains("otelcol_receiver_accepted_profile_samples_total"));
    collector.stop();
}

#[test]
fn metrics_level_none_serves_no_metrics_but_the_probes() {
    let collector = InProcess::start(
        "otelcol-level-none",
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
         \x20 telemetry:\n    metrics:\n      level: none\n      address: 127.0.0.1:0\n",
    );
    let telemetry = collector.telemetry.unwrap();
    assert_eq!(get(telemetry, "/metrics").0, 404);
    assert_eq!(get(telemetry, "/health"), (200, "ok".to_owned()));
    assert_eq!(get(telemetry, "/ready"), (200, "ready".to_owned()));
    collector.stop();
}

/// A collector whose log settings are `logs` (YAML under `logs:`).
fn config_with_logs(logs: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n    logs:\n{logs}"
    )
}

/// Starts `profbridge serve` with its stderr logged, and sends it a request
/// it refuses (a `warn` line); stopping it logs more.
fn start_and_refuse(label: &str, config: &str) -> Collector {
    let collector = Collector::start_logged(label, config);
    let (status, _) = exchange(
        collector.address("OTLP HTTP"),
        "POST /v1development/profiles HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
        b"\xff\xff\xff",
    );
    assert_eq!(status, 400);
    collector
}

#[test]
fn json_logs_carry_the_initial_fields_on_every_line() {
    let collector = start_and_refuse(
        "otelcol-json-logs",
        &config_with_logs(
            "      level: info\n      encoding: json\n      initial_fields:\n        deployment: eu-1\n        shard: 3\n        canary: true\n",
        ),
    );
    let (status, dir) = collector.terminate();
    assert!(status.success());
    let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    let lines: Vec<&str> = log.lines().filter(|line| !line.trim().is_empty()).collect();
    assert!(
        lines.iter().any(|line| line.contains("refused")),
        "the refusal was logged:\n{log}"
    );
    for line in &lines {
        let object: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
        assert_eq!(object["deployment"], "eu-1", "{line}");
        assert_eq!(object["shard"], 3, "{line}");
        assert_eq!(object["canary"], true, "{line}");
        assert!(object["level"].is_string(), "{line}");
    }
}

#[test]
fn console_logs_go_to_the_output_path_with_the_initial_fields() {
    let dir = profbridge_testkit::TempDir::new("otelcol-log-file");
    let file = dir.path().join("profbridge.log");
    let collector = start_and_refuse(
        "otelcol-console-logs",
        &config_with_logs(&format!(
            "      encoding: console\n      disable_caller: true\n      initial_fields:\n        deployment: eu 1\n      output_paths: [{}]\n",
            file.display()
        )),
    );
    let (status, folder) = collector.terminate();
    assert!(status.success());
    let stderr = std::fs::read_to_string(folder.path().join("stderr.log")).unwrap();
    assert!(stderr.trim().is_empty(), "nothing goes to stderr: {stderr}");
    let log = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = log.lines().filter(|line| !line.trim().is_empty()).collect();
    assert!(lines.iter().any(|line| line.contains("WARN")), "{log}");
    for line in &lines {
        assert!(line.ends_with(" deployment=\"eu 1\""), "{line}");
        assert!(
            !line.contains("profbridge_collector::"),
            "disable_caller: {line}"
        );
    }
}

#[test]
fn sampling_keeps_the_first_lines_of_a_call_site_then_every_nth() {
    let collector = Collector::start_logged(
        "otelcol-sampled-logs",
        &config_with_logs(
            "      encoding: json\n      sampling:\n        tick: 1h\n        initial: 2\n        thereafter: 10\n",
        ),
    );
    let undecodable = "POST /v1development/profiles HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 3\r\nConnection: close\r\n\r\n";
    let sent = 33;
    for _ in 0..sent {
        let (status, _) = exchange(collector.address("OTLP HTTP"), undecodable, b"\xff\xff\xff");
        assert_eq!(status, 400);
    }
    let (status, dir) = collector.terminate();
    assert!(status.success());
    let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    let refusals = log
        .lines()
        .filter(|line| line.contains("could not be decoded"))
        .count();
    // The 1st and 2nd, then the 12th, 22nd and 32nd.
    assert_eq!(refusals, 5, "{log}");
    assert!(
        log.contains("shutting down"),
        "other call sites count apart: {log}"
    );
}
