//! `service.telemetry` in the OpenTelemetry Collector's shapes: each key
//! accepted with its default, the endpoint set by `address` or `readers`,
//! and a problem naming the key for what profbridge cannot honour.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use profbridge_collector::config::{parse_yaml, Config};
use profbridge_collector::telemetry::config::{
    FieldValue, LogEncoding, LogOutput, MetricsLevel, TelemetryConfig,
};

/// A valid configuration with `telemetry` YAML (indented under
/// `telemetry:`).
fn with_telemetry(telemetry: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:4317\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
         \x20 telemetry:\n{telemetry}"
    )
}

fn telemetry(yaml: &str) -> TelemetryConfig {
    let config: Config = parse_yaml(&with_telemetry(yaml), &BTreeMap::new())
        .unwrap_or_else(|errors| panic!("{errors}"));
    config.service.telemetry
}

fn problems(yaml: &str) -> Vec<String> {
    match parse_yaml(&with_telemetry(yaml), &BTreeMap::new()) {
        Ok(config) => panic!(
            "loaded, but should not have: {:?}",
            config.service.telemetry
        ),
        Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
    }
}

fn prometheus_reader(host: &str, port: u16) -> String {
    format!(
        "      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: {host}\n                port: {port}\n"
    )
}

#[test]
fn defaults_are_the_collectors() {
    let defaults = telemetry("    metrics: {}\n");
    assert_eq!(defaults.metrics.level, MetricsLevel::Normal);
    assert_eq!(
        defaults.metrics.endpoint().as_deref(),
        Some("127.0.0.1:8888")
    );
    assert!(defaults.metrics.serves_metrics());
    assert_eq!(defaults.logs.level, "info");
    assert_eq!(defaults.logs.filter_level(), "info");
    assert_eq!(defaults.logs.encoding, LogEncoding::Console);
    assert!(defaults.logs.initial_fields.is_empty());
    assert_eq!(defaults.logs.output(), LogOutput::Stderr);
    assert_eq!(defaults.logs.sampling(), None);
    assert!(!defaults.logs.disable_caller);
}

#[test]
fn metrics_levels_use_the_collectors_names_in_any_case() {
    for (written, level) in [
        ("none", MetricsLevel::None),
        ("Basic", MetricsLevel::Basic),
        ("normal", MetricsLevel::Normal),
        ("DETAILED", MetricsLevel::Detailed),
    ] {
        let parsed = telemetry(&format!("    metrics:\n      level: {written}\n"));
        assert_eq!(parsed.metrics.level, level);
        assert_eq!(parsed.metrics.serves_metrics(), level != MetricsLevel::None);
    }
    assert_eq!(
        problems("    metrics:\n      level: verbose\n"),
        ["service.telemetry.metrics.level: unknown metrics level \"verbose\"; expected one of none, basic, normal, detailed"]
    );
}

#[test]
fn a_prometheus_reader_sets_the_endpoint() {
    let parsed = telemetry(&format!(
        "    metrics:\n{}",
        prometheus_reader("0.0.0.0", 9464)
    ));
    assert_eq!(parsed.metrics.endpoint().as_deref(), Some("0.0.0.0:9464"));
    let parsed = telemetry(&format!(
        "    metrics:\n{}",
        prometheus_reader("\"[::1]\"", 9464)
    ));
    assert_eq!(parsed.metrics.endpoint().as_deref(), Some("[::1]:9464"));
    let parsed = telemetry(&format!("    metrics:\n{}", prometheus_reader("::1", 9464)));
    assert_eq!(parsed.metrics.endpoint().as_deref(), Some("[::1]:9464"));
    // The Collector's defaults for the naming switches are accepted.
    let parsed = telemetry(&format!(
        "    metrics:\n{}                without_units: true\n                without_type_suffix: true\n                without_scope_info: true\n",
        prometheus_reader("localhost", 8888)
    ));
    assert_eq!(parsed.metrics.endpoint().as_deref(), Some("localhost:8888"));
}

#[test]
fn the_old_address_keeps_working() {
    let parsed = telemetry("    metrics:\n      address: 0.0.0.0:9000\n");
    assert_eq!(parsed.metrics.endpoint().as_deref(), Some("0.0.0.0:9000"));
    let parsed = telemetry("    metrics:\n      address: ''\n");
    assert_eq!(parsed.metrics.endpoint(), None);
}

#[test]
fn no_readers_turn_the_endpoint_off_at_level_none_only() {
    let parsed = telemetry("    metrics:\n      level: none\n      readers: []\n");
    assert_eq!(parsed.metrics.endpoint(), None);
    assert_eq!(
        problems("    metrics:\n      readers: []\n"),
        ["service.telemetry.metrics.readers: is empty while level is not none: add a pull Prometheus reader, or set level: none to serve no metrics"]
    );
}

#[test]
fn address_and_readers_together_are_refused() {
    assert_eq!(
        problems(&format!(
            "    metrics:\n      address: 127.0.0.1:9000\n{}",
            prometheus_reader("127.0.0.1", 9001)
        )),
        ["service.telemetry.metrics.address: set either address or readers, not both: both set the one Prometheus endpoint profbridge serves"]
    );
}

#[test]
fn readers_profbridge_cannot_serve_are_refused_by_path() {
    assert_eq!(
        problems("    metrics:\n      readers:\n        - periodic:\n            exporter:\n              otlp:\n                endpoint: http://x:4318\n"),
        ["service.telemetry.metrics.readers[0].periodic: not supported: profbridge does not push its metrics; use a pull reader (pull: {exporter: {prometheus: {host, port}}}) and scrape it"]
    );
    let two = format!(
        "    metrics:\n{}{}",
        prometheus_reader("127.0.0.1", 9001),
        prometheus_reader("127.0.0.1", 9002).replace("      readers:\n", "")
    );
    assert_eq!(
        problems(&two),
        ["service.telemetry.metrics.readers[1].pull: profbridge serves one Prometheus endpoint; keep one pull reader"]
    );
    assert_eq!(
        problems("    metrics:\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: localhost\n"),
        ["service.telemetry.metrics.readers[0].pull.exporter.prometheus.port: must be set: the Prometheus endpoint needs a host and a port"]
    );
    assert_eq!(
        problems(&format!(
            "    metrics:\n{}                without_type_suffix: false\n",
            prometheus_reader("localhost", 8888)
        )),
        ["service.telemetry.metrics.readers[0].pull.exporter.prometheus.without_type_suffix: only true is supported: profbridge serves the names a Collector serves by default (no unit or _total suffixes on otelcol_* names, no scope labels)"]
    );
    assert_eq!(
        problems("    metrics:\n      views:\n        - selector: {instrument_name: x}\n"),
        ["service.telemetry.metrics.views: not supported: profbridge's metrics are fixed; drop series in the scraper (Prometheus metric_relabel_configs) instead"]
    );
}

#[test]
fn a_reader_endpoint_is_checked_like_any_listener() {
    assert_eq!(
        problems(&format!("    metrics:\n{}", prometheus_reader("127.0.0.1", 4317))),
        ["service.telemetry.metrics.readers[0].pull.exporter.prometheus: port 4317 is already used by receivers.otlp.protocols.grpc.endpoint (127.0.0.1:4317)"]
    );
}

#[test]
fn log_levels_take_zaps_spellings() {
    for (written, filter) in [
        ("debug", "debug"),
        ("INFO", "info"),
        ("warn", "warn"),
        ("error", "error"),
        ("dpanic", "error"),
        ("panic", "error"),
        ("fatal", "error"),
        ("trace", "trace"),
    ] {
        let parsed = telemetry(&format!("    logs:\n      level: {written}\n"));
        assert_eq!(parsed.logs.filter_level(), filter, "{written}");
    }
}

#[test]
fn log_encodings_and_initial_fields() {
    for (written, encoding) in [
        ("console", LogEncoding::Console),
        ("text", LogEncoding::Console),
        ("json", LogEncoding::Json),
    ] {
        let parsed = telemetry(&format!("    logs:\n      encoding: {written}\n"));
        assert_eq!(parsed.logs.encoding, encoding);
    }
    assert_eq!(
        problems("    logs:\n      encoding: logfmt\n"),
        ["service.telemetry.logs.encoding: unknown encoding \"logfmt\"; expected console (or text) or json"]
    );
    let parsed = telemetry(
        "    logs:\n      initial_fields:\n        region: eu\n        shard: 3\n        ratio: 0.5\n        canary: true\n",
    );
    let fields: Vec<(&str, &FieldValue)> = parsed
        .logs
        .initial_fields
        .iter()
        .map(|(key, value)| (key.as_str(), value))
        .collect();
    assert_eq!(
        fields,
        [
            ("canary", &FieldValue::Bool(true)),
            ("ratio", &FieldValue::Float(0.5)),
            ("region", &FieldValue::Text("eu".to_owned())),
            ("shard", &FieldValue::Integer(3)),
        ]
    );
}

#[test]
fn the_collectors_other_log_keys_are_accepted_or_refused_clearly() {
    let parsed = telemetry(
        "    logs:\n      development: false\n      disable_caller: true\n      disable_stacktrace: true\n\
         \x20     sampling:\n        enabled: true\n        tick: 5s\n        initial: 2\n        thereafter: 50\n\
         \x20     output_paths: [file:///var/log/profbridge.log]\n      error_output_paths: [stderr]\n",
    );
    let sampling = parsed.logs.sampling().unwrap();
    assert_eq!(
        (sampling.tick.0, sampling.initial, sampling.thereafter),
        (Duration::from_secs(5), 2, 50)
    );
    assert!(parsed.logs.disable_caller);
    assert_eq!(
        parsed.logs.output(),
        LogOutput::File(PathBuf::from("/var/log/profbridge.log"))
    );
    // Written as the Collector's default has it.
    let parsed = telemetry("    logs:\n      sampling:\n        enabled: true\n");
    let sampling = parsed.logs.sampling().unwrap();
    assert_eq!(
        (sampling.tick.0, sampling.initial, sampling.thereafter),
        (Duration::from_secs(10), 10, 100)
    );
    let parsed = telemetry(
        "    logs:\n      sampling:\n        enabled: false\n      output_paths: [stdout]\n",
    );
    assert_eq!(parsed.logs.sampling(), None);
    assert_eq!(parsed.logs.output(), LogOutput::Stdout);

    assert_eq!(
        problems("    logs:\n      development: true\n"),
        ["service.telemetry.logs.development: only false is supported: profbridge has no development logging mode"]
    );
    assert_eq!(
        problems("    logs:\n      output_paths: [stderr, /tmp/x.log]\n"),
        ["service.telemetry.logs.output_paths: must name exactly one output: stderr, stdout or a file path"]
    );
    assert_eq!(
        problems("    logs:\n      processors:\n        - batch: {}\n"),
        ["service.telemetry.logs.processors: not supported: profbridge writes its logs to output_paths only; it does not export them over OTLP"]
    );
    assert_eq!(
        problems("    traces:\n      level: none\n"),
        ["service.telemetry.traces: not supported: profbridge does not trace itself; remove this section"]
    );
}
