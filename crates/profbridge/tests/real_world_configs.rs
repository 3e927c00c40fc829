//! Profiles configurations as OpenTelemetry Collector users publish them
//! (tests/real_world_configs/, each file naming where its shape comes
//! from), run through the real binary: each either validates and starts
//! unchanged, or is refused only for Collector components profbridge does
//! not have, each with its "not available in profbridge" message.
//!
//! [`CASES`] holds the expectation of every file. Some files need a
//! feature that is being built (extensions, memory_limiter, the Collector's
//! telemetry shapes): they are marked pending with the feature and the key
//! paths refused until it lands. A pending feature that is no longer
//! refused fails the test, which says to remove it from the list; a file
//! with nothing pending must then validate and start.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use profbridge_testkit::TempDir;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use crate::support::collector::Collector;

/// What a configuration file is expected to do.
struct Case {
    file: &'static str,
    /// Key paths of the components refused as Collector types profbridge
    /// does not have; empty when the file must be valid.
    refused: &'static [&'static str],
    /// Features the file needs that are not in profbridge yet.
    pending: &'static [Pending],
}

/// A feature being built, and the key paths refused until it lands.
struct Pending {
    feature: &'static str,
    paths: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        file: "pyroscope_docker_gateway.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "otlp_forwarding_gateway.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "ebpf_profiler_agent.yaml",
        refused: &["receivers.profiling"],
        pending: &[],
    },
    Case {
        file: "pyroscope_kubernetes_agent.yaml",
        refused: &["receivers.profiling", "processors.k8sattributes/pods"],
        pending: &[],
    },
    Case {
        file: "elastic_edot_profiling.yaml",
        refused: &["receivers.profiling", "exporters.elasticsearch"],
        pending: &[],
    },
    Case {
        file: "openobserve_otlp_http.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "otelcol_contrib_default.yaml",
        refused: &["receivers.jaeger", "receivers.zipkin"],
        pending: &[],
    },
    Case {
        file: "memory_limiter_first.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "internal_telemetry.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "persistent_queue_and_auth.yaml",
        refused: &[],
        pending: &[],
    },
    Case {
        file: "otelcol_contrib_pprof_receiver.yaml",
        refused: &[],
        pending: &[],
    },
];

/// How the binary refuses a Collector type profbridge does not have.
const NOT_AVAILABLE: &str = " is not available in profbridge; ";

fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_world_configs")
}

#[test]
fn every_config_in_the_folder_has_an_expectation() {
    let mut files: Vec<String> = std::fs::read_dir(configs_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    let mut expected: Vec<String> = CASES.iter().map(|case| case.file.to_owned()).collect();
    expected.sort();
    assert_eq!(
        files, expected,
        "tests/real_world_configs/ and CASES differ"
    );
    for case in CASES {
        let text = std::fs::read_to_string(configs_dir().join(case.file)).unwrap();
        assert!(
            text.starts_with("# Shape from "),
            "{}: its first comment must say where its shape comes from",
            case.file
        );
    }
}

#[test]
fn collector_users_configs_validate_or_are_refused_only_for_components_profbridge_lacks() {
    let mut failures = Vec::new();
    for case in CASES {
        let dir = TempDir::new("real-world-config");
        let config = runnable_copy(case.file, dir.path());
        let validate = profbridge(&["validate", "--config", config.to_str().unwrap()]);
        if let Err(failure) = check_validate(case, &validate) {
            failures.push(format!("{}: {failure}", case.file));
            continue;
        }
        if !case.pending.is_empty() {
            continue;
        }
        if case.refused.is_empty() {
            // Valid: it starts as written (listen addresses aside) and
            // stops cleanly.
            let text = std::fs::read_to_string(&config).unwrap();
            let collector = Collector::start(&format!("real-world-{}", case.file), &text);
            assert!(
                !collector.listening.is_empty(),
                "{}: started without listening anywhere",
                case.file
            );
            let (status, _dir) = collector.terminate();
            if !status.success() {
                failures.push(format!("{}: serve stopped with {status}", case.file));
            }
        } else {
            // Refused: serve refuses it too, with the same problems.
            let serve = profbridge(&["serve", "--config", config.to_str().unwrap()]);
            let said = String::from_utf8_lossy(&serve.stderr);
            if serve.status.code() != Some(1)
                || case
                    .refused
                    .iter()
                    .any(|path| !said.contains(&format!("{path}: the OpenTelemetry Collector's")))
            {
                failures.push(format!(
                    "{}: serve did not refuse it for {:?} ({}):\n{said}",
                    case.file, case.refused, serve.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Checks `validate`'s answer against the case; for a pending case, says
/// loudly what still refuses it.
fn check_validate(case: &Case, output: &Output) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let problems = problems(&stderr);
    if case.refused.is_empty() && case.pending.is_empty() {
        return if output.status.success() && stdout.ends_with(": OK\n") {
            Ok(())
        } else {
            Err(format!("expected valid, but:\n{stderr}"))
        };
    }
    if output.status.code() != Some(1) {
        return Err(format!(
            "expected refusal, but validate ended with {}:\n{stdout}{stderr}",
            output.status
        ));
    }
    let mut wrong = Vec::new();
    for (path, message) in &problems {
        let is_refused = case.refused.contains(&path.as_str());
        let is_pending = case
            .pending
            .iter()
            .any(|pending| pending.paths.iter().any(|under| is_under(path, under)));
        if is_refused {
            if !(message.starts_with("the OpenTelemetry Collector's ")
                && message.contains(NOT_AVAILABLE))
            {
                wrong.push(format!(
                    "{path}: refused without the clear message: {message}"
                ));
            }
        } else if !is_pending {
            wrong.push(format!("{path}: refused for something else: {message}"));
        }
    }
    for path in case.refused {
        if problems.iter().filter(|(at, _)| at == path).count() != 1 {
            wrong.push(format!("{path}: expected exactly one refusal"));
        }
    }
    for pending in case.pending {
        let still = problems
            .iter()
            .any(|(path, _)| pending.paths.iter().any(|under| is_under(path, under)));
        if still {
            eprintln!(
                "real_world_configs: {} still waits for {}; refused with:\n{stderr}",
                case.file, pending.feature
            );
        } else {
            wrong.push(format!(
                "nothing at {:?} is refused any more: {} has landed; remove it from this \
                 case's pending list (the case then expects the file to validate and start)",
                pending.paths, pending.feature
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\nvalidate said:\n{stderr}", wrong.join("\n")))
    }
}

/// Each problem `validate` printed, as (key path, message); warnings are
/// left out.
fn problems(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter_map(|line| line.split_once(": ").map(|(_, rest)| rest))
        .filter(|rest| !rest.starts_with("warning: "))
        .map(|rest| match rest.split_once(": ") {
            Some((path, message)) => (path.to_owned(), message.to_owned()),
            None => (String::new(), rest.to_owned()),
        })
        .collect()
}

/// Whether key path `path` is `under` or inside it.
fn is_under(path: &str, under: &str) -> bool {
    path == under
        || path
            .strip_prefix(under)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn profbridge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(args)
        .output()
        .unwrap()
}

/// The file, written to `dir` with what a test machine needs instead of
/// what the publisher's machine had: every listen address on 127.0.0.1
/// port 0, and certificate, token and storage paths to files made here.
/// Nothing else changes.
fn runnable_copy(file: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(configs_dir().join(file)).unwrap();
    let mut docs = YamlLoader::load_from_str(&text).unwrap();
    let mut root = docs.remove(0);
    let files = LocalFiles::new(dir);
    if let Yaml::Hash(root) = &mut root {
        for (key, section) in root.iter_mut() {
            match key.as_str() {
                Some("receivers") => each_component(section, |_, receiver| {
                    rewrite_endpoints(receiver);
                    if let Some(protocols) = child(receiver, "protocols") {
                        each_component(protocols, |_, protocol| {
                            set(protocol, "endpoint", Yaml::String(ANY_PORT.to_owned()));
                        });
                    }
                }),
                Some("extensions") => each_component(section, |id, extension| {
                    let kind = id.split('/').next().unwrap_or_default();
                    if ["health_check", "pprof", "zpages"].contains(&kind) {
                        set(extension, "endpoint", Yaml::String(ANY_PORT.to_owned()));
                    }
                    replace_existing(extension, "filename", &files.token);
                    replace_existing(extension, "directory", &files.storage);
                }),
                Some("exporters") => each_component(section, |_, exporter| {
                    if let Some(tls) = child(exporter, "tls") {
                        replace_existing(tls, "ca_file", &files.ca);
                    }
                }),
                Some("service") => rewrite_telemetry(section),
                _ => {}
            }
        }
    }
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&root).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, out).unwrap();
    path
}

const ANY_PORT: &str = "127.0.0.1:0";

/// Files standing in for the publisher's: a CA certificate, a token, a
/// storage folder.
struct LocalFiles {
    ca: String,
    token: String,
    storage: String,
}

impl LocalFiles {
    fn new(dir: &Path) -> Self {
        let certified = rcgen::generate_simple_self_signed(vec!["backend".to_owned()]).unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, certified.cert.pem()).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "a-token-for-the-test\n").unwrap();
        let storage = dir.join("storage");
        std::fs::create_dir_all(&storage).unwrap();
        let text = |path: PathBuf| path.to_str().unwrap().to_owned();
        Self {
            ca: text(ca),
            token: text(token),
            storage: text(storage),
        }
    }
}

/// Calls `each` with the id and the value of every entry of a section,
/// turning empty entries into empty maps first.
fn each_component(section: &mut Yaml, mut each: impl FnMut(&str, &mut Yaml)) {
    if let Yaml::Hash(entries) = section {
        for (id, value) in entries.iter_mut() {
            if matches!(value, Yaml::Null) {
                *value = Yaml::Hash(Hash::new());
            }
            each(id.as_str().unwrap_or_default(), value);
        }
    }
}

fn child<'a>(node: &'a mut Yaml, key: &str) -> Option<&'a mut Yaml> {
    match node {
        Yaml::Hash(hash) => hash.get_mut(&Yaml::String(key.to_owned())),
        _ => None,
    }
}

fn set(node: &mut Yaml, key: &str, value: Yaml) {
    if let Yaml::Hash(hash) = node {
        hash.insert(Yaml::String(key.to_owned()), value);
    }
}

fn replace_existing(node: &mut Yaml, key: &str, value: &str) {
    if let Some(existing) = child(node, key) {
        *existing = Yaml::String(value.to_owned());
    }
}

/// A receiver's own `endpoint` (pprof, pyroscope, or one refused anyway).
fn rewrite_endpoints(receiver: &mut Yaml) {
    replace_existing(receiver, "endpoint", ANY_PORT);
    // The pprof receiver's push server; its `remote.endpoint` is a URL
    // it scrapes, not one it listens on.
    if let Some(server) = child(receiver, "server") {
        replace_existing(server, "endpoint", ANY_PORT);
    }
}

/// The metrics endpoint on a free port, in whichever shape it is written;
/// added when the file leaves it at its fixed default.
fn rewrite_telemetry(service: &mut Yaml) {
    if child(service, "telemetry").is_none() {
        set(service, "telemetry", Yaml::Hash(Hash::new()));
    }
    let Some(telemetry) = child(service, "telemetry") else {
        return;
    };
    if child(telemetry, "metrics").is_none() {
        set(telemetry, "metrics", Yaml::Hash(Hash::new()));
    }
    let Some(metrics) = child(telemetry, "metrics") else {
        return;
    };
    if let Some(Yaml::Array(readers)) = child(metrics, "readers") {
        for reader in readers.iter_mut() {
            let prometheus = child(reader, "pull")
                .and_then(|pull| child(pull, "exporter"))
                .and_then(|exporter| child(exporter, "prometheus"));
            if let Some(prometheus) = prometheus {
                set(prometheus, "host", Yaml::String("127.0.0.1".to_owned()));
                set(prometheus, "port", Yaml::Integer(0));
            }
        }
    } else {
        set(metrics, "address", Yaml::String(ANY_PORT.to_owned()));
    }
}
