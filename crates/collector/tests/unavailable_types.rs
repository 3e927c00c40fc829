//! OpenTelemetry Collector component types profbridge does not have are
//! refused with a message that names them, says they are not available and
//! what to use instead; typos keep the "unknown type" message; connectors
//! are refused where they are defined, and only there.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use profbridge_collector::components::Registry;
use profbridge_collector::config::{parse_yaml, Catalog, Section};
use profbridge_collector::settings::unavailable::{Role, UNAVAILABLE};

/// The problems of a configuration that must not load, one string each.
fn problems(yaml: &str) -> Vec<String> {
    match parse_yaml(yaml, &BTreeMap::new()) {
        Ok(config) => panic!("loaded, but should not have: {config:?}"),
        Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
    }
}

/// A profiles pipeline from `otlp` to `debug` through `processors`, with
/// `sections` (YAML) added at the top level.
fn pipeline(processors: &str, sections: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  debug:\n\
         service:\n  telemetry:\n    metrics:\n      address: \"\"\n  pipelines:\n    profiles:\n\
         \x20     receivers: [otlp]\n      processors: [{processors}]\n      exporters: [debug]\n\
         {sections}"
    )
}

/// [`pipeline`] with `id` defined, and used by no pipeline, under
/// `section`.
fn with_component(section: &str, id: &str) -> String {
    let yaml = pipeline("", "");
    let header = format!("{section}:\n");
    let defined = format!("{section}:\n  {id}:\n");
    if yaml.starts_with(&header) || yaml.contains(&format!("\n{header}")) {
        yaml.replacen(&header, &defined, 1)
    } else {
        yaml + &defined
    }
}

/// The one problem at `path`, whose message must start with `start`.
fn assert_refused(problems: &[String], path: &str, start: &str) -> String {
    let at: Vec<&String> = problems
        .iter()
        .filter(|problem| problem.starts_with(&format!("{path}: ")))
        .collect();
    assert_eq!(at.len(), 1, "one problem at {path}: {problems:#?}");
    let message = at[0].trim_start_matches(&format!("{path}: ")).to_owned();
    assert!(message.starts_with(start), "{path}: {message}");
    message
}

#[test]
fn collector_processors_profbridge_lacks_say_what_to_use_instead() {
    let yaml = pipeline(
        "k8sattributes/profiles, attributes, filter",
        "processors:\n  k8sattributes/profiles:\n    auth_type: serviceAccount\n    passthrough: false\n\
         \x20 attributes:\n    actions:\n      - key: env\n        value: prod\n        action: upsert\n\
         \x20 filter:\n    error_mode: ignore\n",
    );
    let problems = problems(&yaml);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let k8s = assert_refused(
        &problems,
        "processors.k8sattributes/profiles",
        "the OpenTelemetry Collector's k8sattributes processor is not available in profbridge; ",
    );
    assert!(k8s.contains("`resource` processor"), "{k8s}");
    let attributes = assert_refused(
        &problems,
        "processors.attributes",
        "the OpenTelemetry Collector's attributes processor is not available in profbridge; ",
    );
    assert!(attributes.contains("`resource` processor"), "{attributes}");
    let filter = assert_refused(
        &problems,
        "processors.filter",
        "the OpenTelemetry Collector's filter processor is not available in profbridge; ",
    );
    assert!(filter.contains("nothing"), "{filter}");
}

#[test]
fn collector_receivers_and_exporters_profbridge_lacks_are_refused_with_their_paths() {
    let yaml = pipeline("", "")
        .replace("receivers: [otlp]", "receivers: [otlp, profiling]")
        .replace(
            "exporters: [debug]",
            "exporters: [debug, prometheus, loadbalancing/lb]",
        )
        .replace(
            "receivers:\n  otlp:",
            "receivers:\n  profiling:\n    samples_per_second: 19\n  otlp:",
        )
        .replace(
            "exporters:\n  debug:\n",
            "exporters:\n  debug:\n  prometheus:\n    endpoint: 0.0.0.0:8889\n  \
             loadbalancing/lb:\n    routing_key: service\n",
        );
    let problems = problems(&yaml);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let profiling = assert_refused(
        &problems,
        "receivers.profiling",
        "the OpenTelemetry Collector's profiling receiver is not available in profbridge; ",
    );
    assert!(profiling.contains("eBPF profiler"), "{profiling}");
    let prometheus = assert_refused(
        &problems,
        "exporters.prometheus",
        "the OpenTelemetry Collector's prometheus exporter is not available in profbridge; ",
    );
    assert!(prometheus.contains("/metrics"), "{prometheus}");
    let balancing = assert_refused(
        &problems,
        "exporters.loadbalancing/lb",
        "the OpenTelemetry Collector's loadbalancing exporter is not available in profbridge; ",
    );
    assert!(balancing.contains("load balancer"), "{balancing}");
}

#[test]
fn the_collectors_newer_exporter_names_are_the_same_exporters_under_their_own_ids() {
    let yaml = pipeline("", "")
        .replace(
            "exporters: [debug]",
            "exporters: [otlp_grpc/pyroscope, otlp_http]",
        )
        .replace(
            "exporters:\n  debug:\n",
            "exporters:\n  otlp_grpc/pyroscope:\n    endpoint: pyroscope:4040\n    tls:\n      \
             insecure: true\n  otlp_http:\n    profiles_endpoint: http://backend:4318/v1/profiles\n",
        );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|errors| panic!("{errors}"));
    let exporters: Vec<(String, &str)> = config
        .exporters
        .iter()
        .map(|(id, exporter)| (id.to_string(), exporter.kind()))
        .collect();
    assert_eq!(
        exporters,
        [
            ("otlp_grpc/pyroscope".to_owned(), "otlp"),
            ("otlp_http".to_owned(), "otlphttp")
        ]
    );
    // Their options are the older names' own.
    let yaml = yaml.replace("    tls:\n      insecure: true\n", "    compresion: gzip\n");
    let problems = problems(&yaml);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("exporters.otlp_grpc/pyroscope.compresion: unknown key; "),
        "{problems:#?}"
    );
}

#[test]
fn a_misspelt_type_is_still_unknown_and_lists_the_known_ones() {
    let yaml = pipeline("fliter", "processors:\n  fliter:\n");
    assert_eq!(
        problems(&yaml),
        [format!(
            "processors.fliter: unknown processor type \"fliter\"; known: {}",
            Registry.types(Section::Processors).join(", ")
        )]
    );
}

#[test]
fn connectors_are_refused_where_they_are_defined_and_only_there() {
    // A forward connector joining two pipelines, as Collector users write
    // it: exporter of one, receiver of the other.
    let yaml = pipeline("", "connectors:\n  forward/fan:\n  spanner:\n").replace(
        "exporters: [debug]\n",
        "exporters: [forward/fan]\n    profiles/out:\n      receivers: [forward/fan, spanner]\n\
             \x20     exporters: [debug]\n",
    );
    let problems = problems(&yaml);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    let forward = assert_refused(
        &problems,
        "connectors.forward/fan",
        "the OpenTelemetry Collector's forward connector is not available in profbridge; ",
    );
    assert!(forward.contains("same receivers"), "{forward}");
    assert_refused(
        &problems,
        "connectors.spanner",
        "connector type \"spanner\" is not available in profbridge",
    );
}

#[test]
fn an_empty_connectors_section_is_accepted() {
    // The eBPF profiler's example configuration has `connectors:` with
    // nothing under it.
    for empty in ["connectors:\n", "connectors: {}\n"] {
        let yaml = pipeline("", empty);
        parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|errors| panic!("{empty}: {errors}"));
    }
}

#[test]
fn every_listed_type_is_one_profbridge_lacks_and_is_refused_with_its_advice() {
    let registry = Registry;
    let mut seen = Vec::new();
    for entry in UNAVAILABLE {
        assert!(
            !seen.contains(&(entry.role, entry.kind)),
            "{} is listed twice",
            entry.kind
        );
        seen.push((entry.role, entry.kind));
        let (section, has_it) = match entry.role {
            Role::Receiver => ("receivers", registry.receiver(entry.kind).is_some()),
            Role::Processor => ("processors", registry.processor(entry.kind).is_some()),
            Role::Exporter => ("exporters", registry.exporter(entry.kind).is_some()),
            Role::Connector => ("connectors", false),
            // Refused by the `extensions:` section's parser, once there is one.
            Role::Extension => continue,
        };
        assert!(
            !has_it,
            "{section}.{} is listed but profbridge has it",
            entry.kind
        );
        let yaml = with_component(section, &format!("{}/x", entry.kind));
        let problems = problems(&yaml);
        let path = format!("{section}.{}/x", entry.kind);
        let message = assert_refused(&problems, &path, "the OpenTelemetry Collector's ");
        assert!(
            message.contains(" is not available in profbridge; ")
                && message.ends_with(entry.instead),
            "{path}: {message}"
        );
    }
}

#[test]
fn the_configuration_reference_lists_every_type_profbridge_lacks() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    let section = docs
        .split("## Coming from the OpenTelemetry Collector")
        .nth(1)
        .expect("docs/configuration.md has a \"Coming from the OpenTelemetry Collector\" section");
    let section = section.split("\n## ").next().unwrap();
    for entry in UNAVAILABLE {
        let role = match entry.role {
            Role::Receiver => "receiver",
            Role::Processor => "processor",
            Role::Exporter => "exporter",
            Role::Extension => "extension",
            Role::Connector => "connector",
        };
        let row = format!("| `{}` | {role} |", entry.kind);
        assert!(
            section.contains(&row),
            "docs/configuration.md's Collector section has no row starting {row:?}"
        );
    }
}
