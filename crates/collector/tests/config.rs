//! Loading the collector's configuration: the embedded default, `${env:…}`
//! expansion, `PROFBRIDGE__…` overrides, and the exact message of every kind
//! of problem.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::time::Duration;

use profbridge_collector::components::Registry;
use profbridge_collector::config::{
    load_with_vars, parse_yaml, Catalog, ComponentId, Config, ExporterConfig, PipelineConfig,
    Section, DEFAULT_CONFIG,
};
use profbridge_collector::exporters::debug::config::Verbosity;
use profbridge_collector::exporters::file::config::FileFormat;
use profbridge_collector::exporters::nop::NopExporterConfig;

/// The types of `section`, as "known: …" messages list them.
fn known(section: Section) -> String {
    Registry.types(section).join(", ")
}

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn parse(yaml: &str) -> Config {
    parse_yaml(yaml, &BTreeMap::new()).unwrap_or_else(|errors| panic!("{errors}"))
}

/// The problems of a configuration that must not load, one string each.
fn problems_with(yaml: &str, env: &[(&str, &str)]) -> Vec<String> {
    match parse_yaml(yaml, &vars(env)) {
        Ok(config) => panic!("loaded, but should not have: {config:?}"),
        Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
    }
}

fn problems(yaml: &str) -> Vec<String> {
    problems_with(yaml, &[])
}

/// A valid configuration with `extra` YAML at its end, under `exporters`;
/// `extra` may add options to `file` or more exporters.
fn with_exporters(extra: &str) -> String {
    format!(
        "service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n\
         receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  file:\n{extra}\n"
    )
}

/// A valid configuration with `extra` YAML under `service`.
fn with_service(extra: &str) -> String {
    with_exporters("").replace("service:\n", &format!("service:\n{extra}"))
}

fn file_exporter(
    config: &Config,
) -> &profbridge_collector::exporters::file::config::FileExporterConfig {
    let found = config.exporters.iter().find(|(id, _)| id.kind == "file");
    match found.and_then(|(_, exporter)| exporter.options()) {
        Some(file) => file,
        None => panic!("no file exporter: {found:?}"),
    }
}

fn debug_exporter(
    exporter: &ExporterConfig,
) -> Option<&profbridge_collector::exporters::debug::config::DebugExporterConfig> {
    exporter.options()
}

fn otlp_receiver(
    config: &Config,
) -> &profbridge_collector::receivers::otlp::config::OtlpReceiverConfig {
    let first = config.receivers.first();
    match first.and_then(|(_, receiver)| receiver.options()) {
        Some(otlp) => otlp,
        None => panic!("no OTLP receiver first: {first:?}"),
    }
}

#[test]
fn the_embedded_default_loads_without_warnings() {
    let config = load_with_vars(None, &BTreeMap::new()).unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(config.receivers.len(), 1);
    let otlp = otlp_receiver(&config);
    assert_eq!(
        otlp.protocols.grpc.as_ref().map(|g| g.endpoint.as_str()),
        Some("127.0.0.1:4317")
    );
    assert_eq!(
        otlp.protocols
            .http
            .as_ref()
            .map(|h| h.listener.server.endpoint.as_str()),
        Some("127.0.0.1:4318")
    );
    assert_eq!(file_exporter(&config).path, "./profbridge-data");
    assert_eq!(file_exporter(&config).format, FileFormat::Pprof);
    assert_eq!(
        config.service.pipelines,
        [(
            "profiles".to_owned(),
            PipelineConfig {
                receivers: vec![ComponentId::new("otlp")],
                processors: vec![],
                exporters: vec![ComponentId::new("file")],
                queue: Default::default(),
            }
        )]
    );
    assert_eq!(
        config.service.telemetry.metrics.endpoint().as_deref(),
        Some("127.0.0.1:8888")
    );
    assert_eq!(config.service.telemetry.logs.level, "info");
    assert!(config.warnings().is_empty());
    assert_eq!(config.validate(), Ok(vec![]));
    assert_eq!(parse(DEFAULT_CONFIG), config);
}

#[test]
fn the_example_in_the_configuration_reference_loads() {
    let reference = include_str!("../../../docs/configuration.md");
    let example = reference
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/configuration.md has a yaml example");
    let config = parse_yaml(example, &vars(&[("PROFILE_DIR", "/profiles")]))
        .unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(file_exporter(&config).path, "/profiles");
    assert_eq!(config.service.pipelines.len(), 2);
    assert!(config.warnings().is_empty());
}

#[test]
fn a_file_on_disk_loads_and_a_missing_one_is_named() {
    let dir = std::env::temp_dir().join(format!("profbridge-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("collector.yaml");
    std::fs::write(&path, with_exporters("    path: /var/lib/profiles")).unwrap();
    let config = load_with_vars(Some(&path), &BTreeMap::new()).unwrap();
    assert_eq!(file_exporter(&config).path, "/var/lib/profiles");

    let missing = dir.join("missing.yaml");
    let errors = load_with_vars(Some(&missing), &BTreeMap::new()).unwrap_err();
    assert!(
        errors
            .to_string()
            .starts_with(&format!("cannot read {}: ", missing.display())),
        "{errors}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn options_and_named_components_load_in_file_order() {
    let config = parse(
        "receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 0.0.0.0:4317
        max_recv_msg_size_mib: 32
        keepalive:
          time: 1m30s
      http:
        max_request_body_size: 4MiB
exporters:
  file/archive:
    path: /archive
    format: otlp_json
    fsync: true
    retention:
      max_files: 100
      max_age: 24h
  debug:
    verbosity: detailed
  nop:
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file/archive, debug]
    profiles/drop:
      receivers: [otlp]
      exporters: [nop]
  telemetry:
    metrics:
      address: ''
    logs:
      level: debug
      encoding: json
",
    );
    let otlp = otlp_receiver(&config);
    let grpc = otlp.protocols.grpc.as_ref().unwrap();
    assert_eq!(grpc.endpoint, "0.0.0.0:4317");
    assert_eq!(grpc.max_recv_msg_size_mib, 32);
    assert_eq!(grpc.keepalive.time.0, Duration::from_secs(90));
    assert_eq!(
        otlp.protocols
            .http
            .as_ref()
            .unwrap()
            .listener
            .server
            .max_request_body_size
            .0,
        4 << 20
    );
    let ids: Vec<String> = config
        .exporters
        .iter()
        .map(|(id, _)| id.to_string())
        .collect();
    assert_eq!(ids, ["file/archive", "debug", "nop"]);
    let file = file_exporter(&config);
    assert_eq!((file.format, file.fsync), (FileFormat::OtlpJson, true));
    assert_eq!(file.retention.max_files, Some(100));
    assert_eq!(
        file.retention.max_age.map(|d| d.0),
        Some(Duration::from_secs(86_400))
    );
    assert!(
        debug_exporter(&config.exporters[1].1).is_some_and(|d| d.verbosity == Verbosity::Detailed)
    );
    assert_eq!(
        config.exporters[2].1,
        ExporterConfig::new("nop", NopExporterConfig::default())
    );
    let pipelines: Vec<&str> = config
        .service
        .pipelines
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(pipelines, ["profiles", "profiles/drop"]);
    assert_eq!(config.service.telemetry.metrics.endpoint(), None);
    assert!(config.warnings().is_empty());
}

#[test]
fn a_protocol_written_without_options_is_on_with_its_defaults() {
    let config = parse(&with_exporters("").replace("      grpc:\n", "      grpc:\n      http:\n"));
    let otlp = otlp_receiver(&config);
    assert_eq!(
        otlp.protocols.grpc.as_ref().map(|g| g.endpoint.as_str()),
        Some("127.0.0.1:4317")
    );
    assert_eq!(
        otlp.protocols
            .http
            .as_ref()
            .map(|h| h.listener.server.endpoint.as_str()),
        Some("127.0.0.1:4318")
    );
    assert_eq!(
        problems(&with_exporters("").replace("    protocols:\n      grpc:\n", "")),
        ["receivers.otlp.protocols: no protocol is on; add grpc:, http: or both (with no options they listen on 127.0.0.1:4317 and :4318)"]
    );
    assert_eq!(
        problems(&with_exporters("    retention:\n      max_files:")),
        ["exporters.file.retention.max_files: expected u64, found nothing; leave the key out to use the default"]
    );
}

#[test]
fn load_reads_the_process_environment() {
    // Whatever the environment holds, the default must still load unless
    // it sets PROFBRIDGE__ overrides.
    let overridden =
        std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("PROFBRIDGE__"));
    if !overridden {
        profbridge_collector::config::load(None).unwrap();
    }
}

#[test]
fn env_references_expand_with_and_without_defaults() {
    let yaml = with_exporters("    path: ${env:DATA_DIR}/${env:SUBDIR:-profiles}/$$literal");
    let config = parse_yaml(&yaml, &vars(&[("DATA_DIR", "/data")])).unwrap();
    assert_eq!(file_exporter(&config).path, "/data/profiles/$literal");

    let config = parse_yaml(&yaml, &vars(&[("DATA_DIR", "/data"), ("SUBDIR", "cpu")])).unwrap();
    assert_eq!(file_exporter(&config).path, "/data/cpu/$literal");

    // A whole value from a variable still gets its option's type.
    let yaml =
        with_exporters("    fsync: ${env:FSYNC}\n    retention:\n      max_files: ${env:KEEP:-7}");
    let config = parse_yaml(&yaml, &vars(&[("FSYNC", "true")])).unwrap();
    assert!(file_exporter(&config).fsync);
    assert_eq!(file_exporter(&config).retention.max_files, Some(7));
}

#[test]
fn a_missing_env_variable_without_default_names_it_and_its_key() {
    assert_eq!(
        problems(&with_exporters("    path: ${env:DATA_DIR}/profiles")),
        ["exporters.file.path: environment variable DATA_DIR is not set; set it or give a default: ${env:DATA_DIR:-default}"]
    );
    assert_eq!(
        problems(&with_exporters("    path: ${DATA_DIR}")),
        ["exporters.file.path: ${DATA_DIR} is not supported; write ${env:NAME} or ${env:NAME:-default} (and $$ for a literal $)"]
    );
}

#[test]
fn env_overrides_replace_add_and_convert() {
    let env = vars(&[
        ("PROFBRIDGE__SERVICE__TELEMETRY__LOGS__LEVEL", "debug"),
        ("PROFBRIDGE__EXPORTERS__FILE__FORMAT", "otlp"),
        ("PROFBRIDGE__EXPORTERS__FILE__RETENTION__MAX_FILES", "10"),
        ("PROFBRIDGE__EXPORTERS__DEBUG__VERBOSITY", "normal"),
        (
            "PROFBRIDGE__SERVICE__PIPELINES__PROFILES__EXPORTERS",
            "file, debug",
        ),
        (
            "PROFBRIDGE__RECEIVERS__OTLP__PROTOCOLS__GRPC__ENDPOINT",
            "0.0.0.0:14317",
        ),
        ("PROFBRIDGE_NOT_AN_OVERRIDE", "x"),
    ]);
    let config = load_with_vars(None, &env).unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(config.service.telemetry.logs.level, "debug");
    assert_eq!(file_exporter(&config).format, FileFormat::Otlp);
    assert_eq!(file_exporter(&config).retention.max_files, Some(10));
    let exporters = &config.service.pipelines[0].1.exporters;
    assert_eq!(
        exporters,
        &[ComponentId::new("file"), ComponentId::new("debug")]
    );
    assert!(
        debug_exporter(&config.exporters[1].1).is_some_and(|d| d.verbosity == Verbosity::Normal)
    );
    let grpc = otlp_receiver(&config).protocols.grpc.as_ref().unwrap();
    assert_eq!(grpc.endpoint, "0.0.0.0:14317");
}

#[test]
fn env_overrides_are_checked_like_the_file() {
    let env = vars(&[
        ("PROFBRIDGE__EXPORTERS__FILE__PATHH", "/x"),
        ("PROFBRIDGE__EXPORTERS__FILE__PATH__DIR", "/x"),
    ]);
    let errors = load_with_vars(None, &env).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "PROFBRIDGE__EXPORTERS__FILE__PATH__DIR: exporters.file.path holds a value, not a section, so it has no key \"dir\"\n\
         exporters.file.pathh: unknown key; expected one of path, format, path_template, fsync, gzip_level, retention, sending_queue, retry_on_failure, timeout, dead_letter"
    );
}

#[test]
fn a_gzip_level_past_9_is_a_problem() {
    assert_eq!(
        problems(&with_exporters("    gzip_level: 12")),
        ["exporters.file.gzip_level: is 12; use 0 (stored) to 9 (smallest)"]
    );
}

#[test]
fn unknown_keys_are_reported_with_their_full_path() {
    assert_eq!(
        problems(&with_exporters("    pathh: /data")),
        ["exporters.file.pathh: unknown key; expected one of path, format, path_template, fsync, gzip_level, retention, sending_queue, retry_on_failure, timeout, dead_letter"]
    );
    assert_eq!(
        problems(&with_exporters("    retention:\n      max_agee: 1h")),
        ["exporters.file.retention.max_agee: unknown key; expected one of max_files, max_age"]
    );
    let yaml = with_exporters("").replace("      grpc:\n", "      grpc:\n      websocket:\n");
    assert_eq!(
        problems(&yaml),
        ["receivers.otlp.protocols.websocket: unknown key; expected one of grpc, http"]
    );
    let yaml = format!("extension:\n  health_check:\n{}", with_exporters(""));
    assert_eq!(
        problems(&yaml),
        ["extension: unknown key; expected one of receivers, processors, exporters, extensions, service"]
    );
    let yaml = with_exporters("").replace("      exporters: [file]", "      exporter: [file]");
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.profiles.exporter: unknown key; expected one of receivers, processors, exporters, queue"]
    );
    assert_eq!(
        problems(&with_service("  extension: [health_check]\n")),
        ["service.extension: unknown key; expected one of extensions, pipelines, telemetry"]
    );
    let yaml = format!("{}  nop:\n    verbose: true\n", with_exporters(""));
    assert_eq!(
        problems(&yaml),
        ["exporters.nop.verbose: unknown key; this section takes no keys"]
    );
}

#[test]
fn the_nop_receiver_feeds_a_pipeline_and_takes_no_options() {
    let yaml = with_exporters("")
        .replace("receivers:\n", "receivers:\n  nop:\n")
        .replace("receivers: [otlp]", "receivers: [otlp, nop]");
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let kinds: Vec<&str> = config.receivers.iter().map(|(_, r)| r.kind()).collect();
    assert!(kinds.contains(&"nop"), "{kinds:?}");
    let yaml = yaml.replace("  nop:\n", "  nop:\n    endpoint: 127.0.0.1:9\n");
    assert_eq!(
        problems(&yaml),
        ["receivers.nop.endpoint: unknown key; this section takes no keys"]
    );
}

#[test]
fn the_embedded_exporter_helper_keys_read_beside_the_exporters_own() {
    let with = |exporter: &str| {
        let id = exporter.trim_start().split(':').next().unwrap_or_default();
        format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
             exporters:\n{exporter}\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{id}]\n"
        )
    };
    assert_eq!(
        problems(&with("  otlphttp/out:\n    endpoint: http://a:1\n    retries: 3\n")),
        ["exporters.otlphttp/out.retries: unknown key; expected one of profiles_endpoint, encoding, compression, endpoint, tls, headers, auth, sending_queue, retry_on_failure, timeout, dead_letter"]
    );
    assert_eq!(
        problems(&with("  otlp/out:\n    endpoint: a:1\n    timeout: soon\n")).len(),
        1
    );
    assert!(
        problems(&with("  otlp/out:\n    endpoint: a:1\n    timeout: soon\n"))[0]
            .starts_with("exporters.otlp/out.timeout: ")
    );
    let yaml = with("  pyroscope/out:\n    endpoint: http://a:1\n    dead_letter: /dead\n");
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let pyroscope = config.exporters[0]
        .1
        .options::<profbridge_collector::exporters::pyroscope::config::PyroscopeExporterConfig>()
        .unwrap();
    assert_eq!(pyroscope.helper.timeout.0, Duration::from_secs(10));
    assert_eq!(pyroscope.helper.dead_letter.as_deref(), Some("/dead"));
}

#[test]
fn unknown_component_types_list_the_known_ones() {
    let yaml = with_exporters("")
        .replace("  otlp:\n", "  otlpp:\n")
        .replace("[otlp]", "[otlpp]");
    assert_eq!(
        problems(&yaml),
        [format!(
            "receivers.otlpp: unknown receiver type \"otlpp\"; known: {}",
            known(Section::Receivers)
        )]
    );
    let yaml = format!("processors:\n  filtre:\n{}", with_exporters(""));
    assert_eq!(
        problems(&yaml),
        [format!(
            "processors.filtre: unknown processor type \"filtre\"; known: {}",
            known(Section::Processors)
        )]
    );
    let yaml = with_exporters("  kafkaa/out:\n    brokers: [a]");
    assert_eq!(
        problems(&yaml),
        [format!(
            "exporters.kafkaa/out: unknown exporter type \"kafkaa\"; known: {}",
            known(Section::Exporters)
        )]
    );
    let yaml = with_exporters("  File:\n");
    assert_eq!(
        problems(&yaml),
        ["exporters.File: \"File\" is not a component id: the type must be lowercase letters, digits and _ (like otlp or file/archive)"]
    );
}

#[test]
fn pipelines_must_name_defined_components() {
    let yaml = with_exporters("").replace("exporters: [file]", "exporters: [file, file/2]");
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.profiles.exporters: \"file/2\" is not defined under exporters"]
    );
    let yaml = with_exporters("").replace(
        "receivers: [otlp]",
        "receivers: [otlp]\n      processors: [batch]",
    );
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.profiles.processors: \"batch\" is not defined under processors"]
    );
    let yaml = with_exporters("").replace("exporters: [file]", "exporters: [file, file]");
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.profiles.exporters: \"file\" is listed twice"]
    );
}

#[test]
fn pipelines_need_receivers_and_exporters() {
    let yaml = with_exporters("")
        .replace("receivers: [otlp]", "receivers: []")
        .replace("exporters: [file]", "exporters:");
    let errors = parse_yaml(&yaml, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "service.pipelines.profiles.receivers: a pipeline needs at least one receiver\n\
         service.pipelines.profiles.exporters: a pipeline needs at least one exporter"
    );
    assert_eq!(
        problems("receivers:\n  otlp:\n    protocols:\n      grpc:\n"),
        ["service.pipelines: no pipelines; define at least one, like profiles: {receivers: [otlp], exporters: [file]}"]
    );
}

#[test]
fn pipeline_keys_are_profiles_or_profiles_slash_name() {
    let yaml = with_exporters("").replace("    profiles:\n", "    traces:\n");
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.traces: a pipeline's key is profiles or profiles/NAME (profbridge carries profiles only)"]
    );
    let yaml = with_exporters("").replace("    profiles:\n", "    profiles/:\n");
    assert_eq!(
        problems(&yaml),
        ["service.pipelines.profiles/: a pipeline's key is profiles or profiles/NAME (profbridge carries profiles only)"]
    );
    parse(&with_exporters("").replace("    profiles:\n", "    profiles/cpu:\n"));
}

#[test]
fn unused_components_are_warnings_not_errors() {
    let yaml = format!("{}  debug:\n", with_exporters(""));
    let config = parse(&yaml);
    let warnings: Vec<String> = config.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        ["exporters.debug: defined but used by no pipeline, so it does not run"]
    );

    // Warnings come along with the errors too.
    let yaml = format!("{}  debug:\n    verbosity: loud\n", with_exporters(""));
    let errors = parse_yaml(&yaml, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "exporters.debug.verbosity: unknown value \"loud\"; expected one of basic, normal, detailed"
    );
    assert_eq!(errors.warnings.len(), 1);
}

#[test]
fn bad_durations_and_sizes_keep_their_key_path() {
    let yaml = with_exporters("    retention:\n      max_age: soon");
    assert_eq!(
        problems(&yaml),
        ["exporters.file.retention.max_age: \"soon\" is not a duration (like 5s, 250ms, 1m30s)"]
    );
    let yaml = with_exporters("    retention:\n      max_age: 5 parsecs");
    assert_eq!(
        problems(&yaml),
        ["exporters.file.retention.max_age: \"5 parsecs\" has unit \" parsecs\"; use ns, us, ms, s, m or h"]
    );
    let yaml = with_exporters("    retention:\n      max_age: 30");
    assert_eq!(
        problems(&yaml),
        ["exporters.file.retention.max_age: 30 has no unit; write a duration like 30s or 30ms"]
    );
    let yaml = with_exporters("").replace(
        "      grpc:\n",
        "      http:\n        max_request_body_size: 20 apples\n",
    );
    assert_eq!(
        problems(&yaml),
        ["receivers.otlp.protocols.http.max_request_body_size: \"20 apples\" has unit \"apples\"; use B, KB, MB, GB, KiB, MiB or GiB"]
    );
}

#[test]
fn values_of_the_wrong_type_say_what_was_expected() {
    assert_eq!(
        problems(&with_exporters("    fsync: maybe")),
        ["exporters.file.fsync: expected a boolean, found string \"maybe\""]
    );
    assert_eq!(
        problems(&with_exporters("    format: xml")),
        ["exporters.file.format: unknown value \"xml\"; expected one of pprof, otlp, otlp_json"]
    );
    assert_eq!(
        problems(&with_exporters("    retention:\n      max_files: -1")),
        ["exporters.file.retention.max_files: expected u64, found integer `-1`"]
    );
    let yaml = with_exporters("").replace(
        "  otlp:\n    protocols:\n      grpc:\n",
        "  otlp: yes please\n",
    );
    assert_eq!(
        problems(&yaml),
        ["receivers.otlp: expected a section of keys and values, found string \"yes please\""]
    );
    let yaml = with_exporters("").replace(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n",
        "receivers: [otlp]\n",
    );
    assert_eq!(
        problems(&yaml),
        [
            "receivers: expected a section of keys and values, found a list",
            "service.pipelines.profiles.receivers: \"otlp\" is not defined under receivers"
        ]
    );
}

#[test]
fn endpoints_must_be_host_and_port() {
    let yaml = with_exporters("").replace("      grpc:\n", "      grpc:\n        endpoint: 4317\n");
    assert_eq!(
        problems(&yaml),
        ["receivers.otlp.protocols.grpc.endpoint: \"4317\" is not host:port (like 127.0.0.1:4317, or 0.0.0.0:4317 for every interface)"]
    );
    let yaml = with_service("  telemetry:\n    metrics:\n      address: localhost:metrics\n");
    assert_eq!(
        problems(&yaml),
        ["service.telemetry.metrics.address: \"localhost:metrics\" has port \"metrics\"; a port is a number from 0 to 65535"]
    );
}

#[test]
fn listeners_may_not_share_a_port() {
    let yaml = with_service("  telemetry:\n    metrics:\n      address: 127.0.0.1:4317\n");
    assert_eq!(
        problems(&yaml),
        ["service.telemetry.metrics.address: port 4317 is already used by receivers.otlp.protocols.grpc.endpoint (127.0.0.1:4317)"]
    );
    let yaml = "receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 0.0.0.0:5000
  otlp/second:
    protocols:
      http:
        endpoint: 10.1.2.3:5000
exporters:
  nop:
service:
  pipelines:
    profiles:
      receivers: [otlp, otlp/second]
      exporters: [nop]
";
    assert_eq!(
        problems(yaml),
        ["receivers.otlp/second.protocols.http.endpoint: port 5000 is already used by receivers.otlp.protocols.grpc.endpoint (0.0.0.0:5000)"]
    );
}

#[test]
fn log_levels_and_file_paths_are_checked() {
    let yaml = with_exporters("    path: ''").replace(
        "service:\n",
        "service:\n  telemetry:\n    logs:\n      level: verbose\n",
    );
    assert_eq!(
        problems(&yaml),
        [
            "exporters.file.path: is empty; name the directory to write under",
            "service.telemetry.logs.level: unknown level \"verbose\"; expected one of debug, info, warn, error, dpanic, panic, fatal, trace",
        ]
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let yaml = "receivers:
  otlpp:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:4317
      http:
        endpoint: 127.0.0.1:4317
exporters:
  file:
    pathh: /data
  file/old:
    retention:
      max_age: soon
  debug:
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file/old, file/2]
    traces:
      receivers: []
      exporters: [file]
  telemetry:
    logs:
      level: ${env:LOG_LEVEL}
";
    let errors = parse_yaml(yaml, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        errors.to_string(),
        format!("service.telemetry.logs.level: environment variable LOG_LEVEL is not set; set it or give a default: ${{env:LOG_LEVEL:-default}}
receivers.otlpp: unknown receiver type \"otlpp\"; known: {}
exporters.file.pathh: unknown key; expected one of path, format, path_template, fsync, gzip_level, retention, sending_queue, retry_on_failure, timeout, dead_letter
exporters.file/old.retention.max_age: \"soon\" is not a duration (like 5s, 250ms, 1m30s)
service.pipelines.traces: a pipeline's key is profiles or profiles/NAME (profbridge carries profiles only)
service.pipelines.profiles.exporters: \"file/2\" is not defined under exporters
service.pipelines.traces.receivers: a pipeline needs at least one receiver
receivers.otlp.protocols.http.endpoint: port 4317 is already used by receivers.otlp.protocols.grpc.endpoint (127.0.0.1:4317)",
            known(Section::Receivers)
        )
    );
    let warnings: Vec<String> = errors.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "receivers.otlpp: defined but used by no pipeline, so it does not run",
            "exporters.debug: defined but used by no pipeline, so it does not run",
        ]
    );
}

#[test]
fn yaml_that_does_not_parse_is_one_problem() {
    let errors = parse_yaml("receivers: [otlp\n", &BTreeMap::new()).unwrap_err();
    assert_eq!(errors.problems.len(), 1);
    assert!(
        errors.to_string().starts_with("not valid YAML: "),
        "{errors}"
    );
    let errors = parse_yaml("- a\n- b\n", &BTreeMap::new()).unwrap_err();
    assert!(
        errors.to_string().starts_with("not valid YAML: "),
        "{errors}"
    );
}

/// Settings embedded in several components keep each component's own
/// defaults for the keys a file leaves out, whichever of their keys it
/// writes: the pprof receiver stays on its port when only its timeout is
/// set, and so on for every kind of embedded settings.
#[test]
fn a_key_of_embedded_settings_written_alone_keeps_the_components_other_defaults() {
    use profbridge_collector::exporters::pyroscope::config::PyroscopeExporterConfig;
    use profbridge_collector::extensions::health_check::HealthCheckConfig;
    use profbridge_collector::extensions::pprof::PprofConfig;
    use profbridge_collector::receivers::pprof::config::PprofReceiverConfig;
    let config = parse(
        "receivers:\n\
         \x20 otlp:\n    protocols:\n      http:\n        max_connections: 3\n\
         \x20 pprof:\n    read_timeout: 5s\n\
         exporters:\n\
         \x20 pyroscope:\n    endpoint: http://pyroscope:4040\n\
         \x20 file:\n    sending_queue:\n      queue_size: 7\n\
         extensions:\n\
         \x20 health_check:\n    max_connections: 3\n\
         \x20 pprof:\n    read_header_timeout: 2s\n\
         service:\n  extensions: [health_check, pprof]\n\
         \x20 telemetry:\n    metrics:\n      idle_timeout: 3s\n\
         \x20 pipelines:\n    profiles:\n      receivers: [otlp, pprof]\n      exporters: [pyroscope, file]\n",
    );
    let otlp = otlp_receiver(&config);
    let http = otlp.protocols.http.as_ref().map(|http| &http.listener);
    assert_eq!(http.map(|l| l.connection.max_connections), Some(Some(3)));
    assert_eq!(
        http.map(|l| l.server.endpoint.as_str()),
        Some("127.0.0.1:4318")
    );
    assert_eq!(
        http.map(|l| l.connection.idle_timeout.0),
        Some(Duration::from_secs(60))
    );

    let pprof = config
        .receivers
        .iter()
        .find_map(|(_, receiver)| receiver.options::<PprofReceiverConfig>())
        .unwrap_or_else(|| panic!("no pprof receiver"));
    assert_eq!(pprof.listener.server.read_timeout.0, Duration::from_secs(5));
    assert_eq!(pprof.listener.server.endpoint, "127.0.0.1:4041");
    assert_eq!(pprof.path, "/v1/pprof");

    let pyroscope = config
        .exporters
        .iter()
        .find_map(|(_, exporter)| exporter.options::<PyroscopeExporterConfig>())
        .unwrap_or_else(|| panic!("no pyroscope exporter"));
    assert_eq!(pyroscope.client.endpoint, "http://pyroscope:4040");
    // The pyroscope exporter's own default attempt timeout, not the
    // helper's 5 s.
    assert_eq!(pyroscope.helper.timeout.0, Duration::from_secs(10));

    // A section written in part takes the section type's defaults for the
    // rest, as before: the file exporter's whole sending_queue.
    let file = file_exporter(&config);
    assert_eq!(file.helper.sending_queue.queue_size, 7);
    assert_eq!(file.helper.sending_queue.num_consumers, 10);

    let health = config
        .extensions
        .iter()
        .find_map(|(_, extension)| extension.options::<HealthCheckConfig>())
        .unwrap_or_else(|| panic!("no health_check extension"));
    assert_eq!(health.connection.max_connections, Some(3));
    assert_eq!(
        health.connection.read_header_timeout.0,
        Duration::from_secs(10)
    );
    assert_eq!(health.endpoint, "localhost:13133");
    let pprof_extension = config
        .extensions
        .iter()
        .find_map(|(_, extension)| extension.options::<PprofConfig>())
        .unwrap_or_else(|| panic!("no pprof extension"));
    assert_eq!(
        pprof_extension.connection.read_header_timeout.0,
        Duration::from_secs(2)
    );
    // Longer than the longest profile it records, unlike health_check's.
    assert!(pprof_extension.connection.idle_timeout.0 > health.connection.idle_timeout.0);

    let metrics = &config.service.telemetry.metrics;
    assert_eq!(metrics.connection.idle_timeout.0, Duration::from_secs(3));
    assert_eq!(metrics.connection.max_connections, Some(64));
}

/// A nested section that embeds settings (the OTLP receiver's
/// `protocols.http`, `service.telemetry.metrics`) refuses a value that is
/// not a section, and an unknown key in it, at its own key path.
#[test]
fn malformed_nested_sections_are_refused_at_their_paths() {
    let otlp = |http: &str| {
        format!(
            "receivers:\n  otlp:\n    protocols:\n      http:{http}\n\
             exporters:\n  nop:\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n"
        )
    };
    let found = problems(&otlp(" 5"));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("receivers.otlp.protocols.http: expected")),
        "{found:?}"
    );
    let found = problems(&otlp("\n        endpont: 127.0.0.1:0"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("receivers.otlp.protocols.http.endpont: unknown key; expected one of profiles_url_path, endpoint,"),
        "{found:?}"
    );
    let found = problems(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  nop:\n\
         service:\n  telemetry:\n    metrics: [1]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n",
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("service.telemetry.metrics: expected")),
        "{found:?}"
    );
}
