#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The configuration reference (docs/configuration.md) and the operations
//! guide (docs/operations.md) are kept complete by these tests.
//!
//! Every option the code accepts comes from the registry: each component
//! type's factory lists its options' key paths
//! (`settings::key_paths`, embedded settings included), so a new type is
//! checked without any change here.
//!
//! The convention configuration.md follows, which `documented_paths` reads:
//!
//! - Under `## Receivers`, `## Processors`, `## Exporters` and
//!   `## Extensions`, a level-3
//!   heading that is just a component type in backticks (`` ### `otlp` ``)
//!   opens that component's section: the rows of the tables below it
//!   document `receivers.otlp.KEY`.
//! - Any heading that holds a full key path in backticks, starting with
//!   `receivers.`, `processors.`, `exporters.`, `extensions.` or `service` (or just
//!   `service`), like `` #### `receivers.otlp.protocols.grpc` ``, documents the keys
//!   under that path; several such paths in one heading share the table,
//!   and `*` stands for every component type (`exporters.*.sending_queue`).
//!   Items of a list are written `KEY[]`.
//! - Any other heading ends the section.
//! - The component sections (`` ### `TYPE` `` under each of the four) are
//!   exactly the registry's types.
//! - An option table is one whose header's first cell is `key`; the first
//!   cell of each of its rows holds the key, or several keys separated by
//!   commas, each in backticks. Other tables are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use profbridge_collector::components::Registry;
use profbridge_collector::config::parse_yaml;
use profbridge_collector::config::{Catalog, Section};
use profbridge_collector::pipeline::config::QueueConfig;
use profbridge_collector::service;
use profbridge_collector::settings::key_paths::key_paths;
use profbridge_collector::settings::options_key_paths;
use profbridge_collector::telemetry::config::TelemetryConfig;
use profbridge_testkit::TempDir;

// ---------------------------------------------------------------------------
// Every option path in the code.

/// The sections components are defined in.
const SECTIONS: [Section; 4] = [
    Section::Receivers,
    Section::Processors,
    Section::Exporters,
    Section::Extensions,
];

/// `paths` under `root`.
fn under(root: &str, paths: BTreeSet<String>) -> BTreeSet<String> {
    paths
        .into_iter()
        .map(|path| format!("{root}.{path}"))
        .collect()
}

/// Every option path of a component type, as the registry lists them.
fn component_paths(section: Section, kind: &str) -> BTreeSet<String> {
    let root = format!("{}.{kind}", section.key());
    match Registry.key_paths(section, kind) {
        Some(Ok(paths)) => under(&root, paths),
        Some(Err(error)) => panic!("{root}: {error}"),
        None => panic!("{root}: the registry has no such type"),
    }
}

/// The types of a section, as the registry lists them.
fn component_types(section: Section) -> Vec<&'static str> {
    Registry.types(section)
}

/// Every option path the code accepts.
fn code_paths() -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for section in SECTIONS {
        for kind in component_types(section) {
            paths.extend(component_paths(section, kind));
        }
    }
    let queue = key_paths::<QueueConfig>().unwrap_or_else(|e| panic!("{e}"));
    paths.extend(under("service.pipelines.profiles.queue", queue));
    let telemetry = options_key_paths::<TelemetryConfig>().unwrap_or_else(|e| panic!("{e}"));
    paths.extend(under("service.telemetry", telemetry));
    // FALLBACK, listed by hand: `service` and its pipelines are read by
    // config/parse.rs without a Deserialize struct.
    for key in ["extensions", "pipelines", "telemetry"] {
        paths.insert(format!("service.{key}"));
    }
    for key in ["receivers", "processors", "exporters", "queue"] {
        paths.insert(format!("service.pipelines.profiles.{key}"));
    }
    paths
}

// ---------------------------------------------------------------------------
// What the documentation says.

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn read_doc(name: &str) -> String {
    let path = docs_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text between each pair of backticks.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

const ROOTS: [&str; 5] = [
    "receivers",
    "processors",
    "exporters",
    "extensions",
    "service",
];

/// The key paths documented in configuration.md, by the convention in
/// the module's comment, and the sections (heading paths) it has.
fn documented_paths(doc: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut documented = BTreeSet::new();
    let mut sections = BTreeSet::new();
    let mut component_section: Option<&str> = None;
    let mut prefixes: Vec<String> = Vec::new();
    let mut in_code = false;
    // Inside a table: whether its header's first cell is `key`.
    let mut table: Option<bool> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if line.starts_with('#') {
            let level = line.chars().take_while(|&c| c == '#').count();
            let title = line[level..].trim();
            if level <= 2 {
                component_section = match title {
                    "Receivers" => Some("receivers"),
                    "Processors" => Some("processors"),
                    "Exporters" => Some("exporters"),
                    "Extensions" => Some("extensions"),
                    _ => None,
                };
            }
            prefixes = backticked(title)
                .into_iter()
                .filter(|path| {
                    let root = path.split_once('.').map_or(*path, |(root, _)| root);
                    ROOTS.contains(&root)
                })
                .map(str::to_owned)
                .collect();
            if prefixes.is_empty() && level == 3 {
                if let Some(section) = component_section {
                    let kind = title.trim_matches('`');
                    if title.starts_with('`') && title.ends_with('`') && !kind.contains('`') {
                        prefixes.push(format!("{section}.{kind}"));
                    }
                }
            }
            sections.extend(prefixes.iter().cloned());
            continue;
        }
        if !line.starts_with('|') {
            table = None;
            continue;
        }
        let Some(first) = line.split('|').nth(1) else {
            continue;
        };
        let Some(is_options) = table else {
            // The header row says what the table lists.
            table = Some(first.trim() == "key");
            continue;
        };
        if !is_options || prefixes.is_empty() {
            continue;
        }
        for key in backticked(first) {
            for prefix in &prefixes {
                documented.insert(format!("{prefix}.{key}"));
            }
        }
    }
    (documented, sections)
}

/// The component types configuration.md gives a section (`` ### `TYPE` ``
/// under `## Receivers` and the other three), as `SECTION.TYPE`.
fn documented_components(doc: &str) -> BTreeSet<String> {
    let mut components = BTreeSet::new();
    let mut section: Option<Section> = None;
    let mut in_code = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let level = line.chars().take_while(|&c| c == '#').count();
        let title = line[level..].trim();
        if level <= 2 {
            section = SECTIONS
                .into_iter()
                .find(|section| title.eq_ignore_ascii_case(section.key()));
        } else if level == 3 {
            let kind = title
                .strip_prefix('`')
                .and_then(|rest| rest.strip_suffix('`'))
                .filter(|kind| !kind.contains('`'));
            if let (Some(section), Some(kind)) = (section, kind) {
                components.insert(format!("{}.{kind}", section.key()));
            }
        }
    }
    components
}

/// The registry's types, as `SECTION.TYPE`.
fn registered_components() -> BTreeSet<String> {
    SECTIONS
        .into_iter()
        .flat_map(|section| {
            component_types(section)
                .into_iter()
                .map(move |kind| format!("{}.{kind}", section.key()))
        })
        .collect()
}

/// The "known: …" lists of unknown-type messages quoted in `doc`, each
/// with its section.
fn quoted_known_lists(doc: &str) -> Vec<(Section, String)> {
    let mut lists = Vec::new();
    for line in doc.lines() {
        for section in SECTIONS {
            let role = section.key().trim_end_matches('s');
            let Some((_, after)) = line.split_once(&format!("unknown {role} type ")) else {
                continue;
            };
            if let Some((_, known)) = after.split_once("; known: ") {
                lists.push((section, known.trim_end_matches(['`', '"']).to_owned()));
            }
        }
    }
    lists
}

/// Whether `documented` names `path`, `*` standing for any one level.
fn matches(documented: &str, path: &str) -> bool {
    let documented: Vec<&str> = documented.split('.').collect();
    let path: Vec<&str> = path.split('.').collect();
    documented.len() == path.len()
        && documented
            .iter()
            .zip(&path)
            .all(|(doc, code)| *doc == "*" || doc == code)
}

#[test]
fn the_walker_finds_nested_options_aliases_and_list_items() {
    let otlp = component_paths(Section::Receivers, "otlp");
    for path in [
        "receivers.otlp.protocols",
        "receivers.otlp.protocols.grpc",
        "receivers.otlp.protocols.grpc.max_recv_msg_size_mib",
        "receivers.otlp.protocols.grpc.keepalive.timeout",
        "receivers.otlp.protocols.http.max_request_body_size",
    ] {
        assert!(otlp.contains(path), "{path} not found in {otlp:#?}");
    }
    let file = component_paths(Section::Exporters, "file");
    for path in [
        "exporters.file.retention.max_age",
        "exporters.file.sending_queue.storage",
        "exporters.file.sending_queue.block_on_overflow",
        // After sending_queue, whose try_from rejects the placeholders.
        "exporters.file.retry_on_failure.multiplier",
        "exporters.file.dead_letter",
    ] {
        assert!(file.contains(path), "{path} not found in {file:#?}");
    }
    let resource = component_paths(Section::Processors, "resource");
    assert!(
        resource.contains("processors.resource.attributes[].from_attribute"),
        "{resource:#?}"
    );
}

#[test]
fn every_option_is_in_the_configuration_reference() {
    let doc = read_doc("configuration.md");
    let (documented, sections) = documented_paths(&doc);
    let missing: Vec<String> = code_paths()
        .into_iter()
        .filter(|path| !documented.iter().any(|doc| matches(doc, path)))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md does not document these options ({} of them); give each a row \
         (first cell: the key in backticks) in a table under a heading naming its section, \
         like #### `receivers.otlp.protocols.grpc`:\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
    let mut no_section = Vec::new();
    for section in SECTIONS {
        for kind in component_types(section) {
            let path = format!("{}.{kind}", section.key());
            if !sections.contains(&path) {
                no_section.push(path);
            }
        }
    }
    assert!(
        no_section.is_empty(),
        "docs/configuration.md has no section (### `TYPE` under its ## heading) for: {}",
        no_section.join(", ")
    );
}

#[test]
fn every_option_in_the_configuration_reference_exists() {
    let (documented, _) = documented_paths(&read_doc("configuration.md"));
    let code = code_paths();
    let stale: Vec<&String> = documented
        .iter()
        .filter(|doc| !code.iter().any(|path| matches(doc, path)))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/configuration.md documents options the code does not accept: {stale:?}"
    );
}

#[test]
fn the_configuration_reference_has_a_section_for_each_registered_type_and_no_other() {
    let documented = documented_components(&read_doc("configuration.md"));
    let registered = registered_components();
    let missing: Vec<&String> = registered.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md has no section (### `TYPE` under its ## heading) for these \
         types of the registry (crates/collector/src/components/mod.rs): {missing:?}"
    );
    let unknown: Vec<&String> = documented.difference(&registered).collect();
    assert!(
        unknown.is_empty(),
        "docs/configuration.md has a section for types the registry \
         (crates/collector/src/components/mod.rs) does not have: {unknown:?}"
    );
}

#[test]
fn the_known_types_the_docs_quote_are_the_registrys() {
    let mut quoted = 0;
    for entry in std::fs::read_dir(docs_dir()).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let doc = std::fs::read_to_string(&path).unwrap();
        for (section, known) in quoted_known_lists(&doc) {
            quoted += 1;
            assert_eq!(
                known,
                component_types(section).join(", "),
                "{}: the {} \"known: …\" message it quotes lists other types than the registry",
                path.display(),
                section.key()
            );
        }
    }
    assert!(quoted > 0, "no \"known: …\" message found in docs/");
}

#[test]
fn the_convention_reader_understands_the_reference() {
    let header = "| key | default | meaning |\n| --- | --- | --- |\n";
    let doc = format!(
        "## Receivers\n\n### `otlp`\n\n{header}| `protocols` | | x |\n\n\
         #### `receivers.otlp.protocols.grpc`\n\n{header}| `a`, `b` | `1s` | x |\n\n\
         | format | template |\n| --- | --- |\n| `not_a_key` | x |\n\n\
         ## Exporters\n\n### Helper (`exporters.*`)\n\n{header}| `timeout` | | |\n\n\
         ### Other\n\n{header}| `ignored` | | |\n"
    );
    let (documented, sections) = documented_paths(&doc);
    let expected: BTreeSet<String> = [
        "receivers.otlp.protocols",
        "receivers.otlp.protocols.grpc.a",
        "receivers.otlp.protocols.grpc.b",
        "exporters.*.timeout",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(documented, expected);
    assert!(sections.contains("receivers.otlp"));
    let components: Vec<String> = documented_components(&doc).into_iter().collect();
    assert_eq!(components, ["receivers.otlp"]);
    assert_eq!(
        quoted_known_lists("`x.y: unknown exporter type \"z\"; known: file, nop`"),
        [(Section::Exporters, "file, nop".to_owned())]
    );
    assert!(matches("exporters.*.timeout", "exporters.file.timeout"));
    assert!(!matches(
        "exporters.*.timeout",
        "exporters.file.retry.timeout"
    ));
}

// ---------------------------------------------------------------------------
// Metrics.

/// `"profbridge_…"` and `"otelcol_…"` string literals in the collector's
/// sources.
fn metric_names_in_sources() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for literal in text.split('"').skip(1).step_by(2) {
                    let prefix = ["profbridge_", "otelcol_"]
                        .into_iter()
                        .find(|prefix| literal.starts_with(prefix));
                    let is_name = prefix.is_some_and(|prefix| literal.len() > prefix.len())
                        && literal
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                    if is_name {
                        names.insert(literal.to_owned());
                    }
                }
            }
        }
    }
    names
}

/// The metric names of a Prometheus text exposition.
fn metric_names_rendered(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The metrics docs/operations.md lists: first cells of table rows.
fn metric_names_documented(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1))
        .flat_map(backticked)
        .filter(|name| name.starts_with("profbridge_") || name.starts_with("otelcol_"))
        .map(str::to_owned)
        .collect()
}

fn assert_documented(what: &str, names: &BTreeSet<String>, documented: &BTreeSet<String>) {
    let missing: Vec<&String> = names.difference(documented).collect();
    assert!(
        missing.is_empty(),
        "docs/operations.md has no metric table row for these metrics ({what}): {missing:?}"
    );
}

#[test]
fn every_metric_in_the_sources_is_in_the_operations_guide() {
    let names = metric_names_in_sources();
    assert!(
        names.contains("profbridge_exporter_queue_size"),
        "found {names:?}"
    );
    let documented = metric_names_documented(&read_doc("operations.md"));
    assert_documented("named in crates/collector/src", &names, &documented);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_a_running_collector_serves_is_in_the_operations_guide() {
    let dir = TempDir::new("config-reference");
    let root = dir.path();
    let spool = root.join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    // Every component type of the registry, in one pipeline: those that
    // cannot start on their defaults alone get options here.
    let options = |section: Section, kind: &str| match (section, kind) {
        (Section::Receivers, "otlp") => "    protocols:\n      grpc:\n      http:\n".to_owned(),
        (Section::Receivers, "file") => format!(
            "    include: [\"{}/*.pb.gz\"]\n    checkpoint: {}/file.checkpoint.json\n",
            spool.display(),
            root.display()
        ),
        (Section::Processors, "resource") => "    attributes:\n      \
             - {key: deployment.environment, value: test, action: upsert}\n"
            .to_owned(),
        (Section::Processors, "memory_limiter") => {
            "    check_interval: 1s\n    limit_mib: 1000000\n".to_owned()
        }
        (Section::Exporters, "file") => format!("    path: {}/out\n", root.display()),
        // The sending exporters connect on their first export only.
        (Section::Exporters, "otlp" | "otlphttp" | "pyroscope") => {
            "    endpoint: http://127.0.0.1:1\n".to_owned()
        }
        _ => String::new(),
    };
    let mut yaml = String::new();
    let mut pipeline = String::new();
    for section in Section::ALL {
        let types = component_types(section);
        yaml.push_str(&format!("{}:\n", section.key()));
        for kind in &types {
            yaml.push_str(&format!("  {kind}:\n{}", options(section, kind)));
        }
        pipeline.push_str(&format!(
            "      {}: [{}]\n",
            section.key(),
            types.join(", ")
        ));
    }
    yaml.push_str(&format!(
        "service:\n  pipelines:\n    profiles:\n{pipeline}  \
         telemetry:\n    metrics:\n      address: \"\"\n"
    ));
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    // Every listener on a free port, through environment overrides.
    let mut free_ports = BTreeMap::new();
    for section in Section::ALL {
        for (id, component) in config.section(section) {
            for (key, _) in component.listeners() {
                let path = format!("{}.{id}.{key}", section.key());
                let name = format!("PROFBRIDGE__{}", path.replace('.', "__"));
                free_ports.insert(name.to_ascii_uppercase(), "127.0.0.1:0".to_owned());
            }
        }
    }
    let config = parse_yaml(&yaml, &free_ports).unwrap_or_else(|e| {
        panic!(
            "{e}\nstarting every registry type; give a type that needs options some here\n{yaml}"
        )
    });
    let running = service::start(&config).await.unwrap();
    let rendered = running.metrics.render();
    assert!(running.shutdown(Duration::from_secs(30)).await);
    let names = metric_names_rendered(&rendered);
    assert!(
        names.contains("profbridge_receiver_accepted_profiles_total"),
        "{rendered}"
    );
    let documented = metric_names_documented(&read_doc("operations.md"));
    assert_documented("served by a running collector", &names, &documented);
}
