//! The pprof receiver's configuration in the Collector's shape: `server`,
//! `remote`, `file` and `self`, each running only when written, and the
//! push server's keys beside them as before, deprecated.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::time::Duration;

use profbridge_collector::config::{parse_yaml, Config};
use profbridge_collector::receivers::pprof::config::PprofReceiverConfig;
use profbridge_collector::receivers::pprof::remote::config::ProfileSpec;

fn with_pprof(section: &str) -> String {
    format!(
        "receivers:\n  pprof:\n{section}\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [nop]\n"
    )
}

fn load(yaml: &str) -> Result<Config, Vec<String>> {
    parse_yaml(yaml, &BTreeMap::new())
        .map_err(|errors| errors.problems.iter().map(ToString::to_string).collect())
}

fn pprof(config: &Config) -> &PprofReceiverConfig {
    config
        .receivers
        .iter()
        .find_map(|(_, receiver)| receiver.options::<PprofReceiverConfig>())
        .unwrap_or_else(|| panic!("no pprof receiver"))
}

fn warnings(config: &Config) -> Vec<String> {
    config.warnings().iter().map(ToString::to_string).collect()
}

/// The remote source as contrib's pprof receiver configures it
/// (`remote:` with scraperhelper's and confighttp's client keys): it
/// loads unchanged, with no push server and no warning.
#[test]
fn the_collectors_remote_source_loads_unchanged() {
    let config = load(&with_pprof(
        "    remote:\n      endpoint: http://localhost:6060/debug/pprof/heap\n      collection_interval: 30s\n      initial_delay: 2s\n      timeout: 20s\n      headers:\n        x-scope-orgid: tenant\n      tls:\n        insecure: true\n",
    ))
    .unwrap();
    let pprof = pprof(&config);
    assert!(pprof.push_server().is_none());
    let remote = pprof.remote.as_ref().unwrap();
    assert_eq!(
        remote.client.endpoint,
        "http://localhost:6060/debug/pprof/heap"
    );
    assert_eq!(remote.collection_interval.0, Duration::from_secs(30));
    assert_eq!(remote.initial_delay.0, Duration::from_secs(2));
    assert_eq!(remote.timeout.0, Duration::from_secs(20));
    assert_eq!(remote.client.headers["x-scope-orgid"], "tenant");
    assert!(warnings(&config).is_empty(), "{:?}", warnings(&config));
}

#[test]
fn each_source_runs_only_when_written_and_server_takes_the_listener_keys() {
    let config = load(&with_pprof(
        "    server:\n      endpoint: 127.0.0.1:4999\n      path: /push\n    self:\n",
    ))
    .unwrap();
    let pprof = pprof(&config);
    let (listener, path) = pprof.push_server().unwrap();
    assert_eq!(listener.server.endpoint, "127.0.0.1:4999");
    assert_eq!(path, "/push");
    assert!(pprof.remote.is_none() && pprof.file.is_none());
    assert_eq!(
        pprof.own.as_ref().map(|own| own.collection_interval.0),
        Some(Duration::from_secs(10))
    );
    assert!(warnings(&config).is_empty(), "{:?}", warnings(&config));
}

/// Configurations written before the sources keep working, with a
/// warning saying where the keys go now; beside a source they are an
/// error.
#[test]
fn flat_keys_still_run_the_push_server_with_a_deprecation_warning() {
    let config = load(&with_pprof(
        "    endpoint: 127.0.0.1:4998\n    path: /old\n    read_timeout: 5s\n",
    ))
    .unwrap();
    let (listener, path) = pprof(&config).push_server().unwrap();
    assert_eq!(listener.server.endpoint, "127.0.0.1:4998");
    assert_eq!(listener.server.read_timeout.0, Duration::from_secs(5));
    assert_eq!(path, "/old");
    let warnings = warnings(&config);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("receivers.pprof: ") && warnings[0].contains("under server:"),
        "{warnings:?}"
    );

    // `pprof:` alone is the push server on its default address, as it
    // always was, and nothing was written to warn about.
    let config = load(&with_pprof("")).unwrap();
    let (listener, _) = pprof(&config).push_server().unwrap();
    assert_eq!(listener.server.endpoint, "127.0.0.1:4041");
    assert!(self::warnings(&config).is_empty());

    let problems = load(&with_pprof(
        "    endpoint: 127.0.0.1:4998\n    remote:\n      endpoint: http://localhost:6060/debug/pprof/heap\n",
    ))
    .unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("receivers.pprof: ") && p.contains("move them under server:")),
        "{problems:?}"
    );
}

#[test]
fn targets_profiles_and_cpu_seconds_follow_the_interval() {
    let config = load(&with_pprof(
        "    remote:\n      collection_interval: 15s\n      targets:\n        - targets: [localhost:6060, 'http://10.0.0.2:6060/prefix']\n          labels: {service_name: checkout, team: a}\n      file_sd_configs:\n        - files: [/etc/profbridge/targets/*.json]\n      profiles: [cpu, heap, {name: fgprof, path: '/debug/fgprof?format=pprof'}, {name: block, delta: false}]\n",
    ))
    .unwrap();
    let remote = pprof(&config).remote.as_ref().unwrap();
    assert_eq!(remote.targets[0].targets.len(), 2);
    assert_eq!(remote.targets[0].labels["service_name"], "checkout");
    assert_eq!(
        remote.file_sd_configs[0].refresh_interval.0,
        Duration::from_secs(300)
    );
    let specs = remote.profile_specs().unwrap();
    let spec = |name: &str| -> &ProfileSpec { specs.iter().find(|s| s.name == name).unwrap() };
    assert_eq!(spec("cpu").path, "/debug/pprof/profile");
    assert_eq!(spec("cpu").seconds, Some(Duration::from_secs(14)));
    assert!(!spec("cpu").delta);
    assert!(spec("heap").delta);
    assert_eq!(spec("fgprof").path, "/debug/fgprof?format=pprof");
    assert!(!spec("fgprof").delta);
    assert!(!spec("block").delta);

    // Left out, the Go types a sidecar wants.
    let config = load(&with_pprof(
        "    remote:\n      targets:\n        - targets: [localhost:6060]\n",
    ))
    .unwrap();
    let names: Vec<String> = pprof(&config)
        .remote
        .as_ref()
        .unwrap()
        .profile_specs()
        .unwrap()
        .into_iter()
        .map(|spec| format!("{}:{}", spec.name, spec.delta))
        .collect();
    assert_eq!(
        names,
        [
            "cpu:false",
            "heap:true",
            "goroutine:false",
            "mutex:true",
            "block:true"
        ]
    );
}

#[test]
fn remote_problems_name_their_key() {
    let problems = load(&with_pprof("    remote:\n      collection_interval: 10s\n")).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("receivers.pprof.remote: nothing to scrape")),
        "{problems:?}"
    );
    let problems = load(&with_pprof(
        "    remote:\n      endpoint: localhost:6060\n      targets:\n        - targets: [localhost:6060]\n      profiles: [cpu, goroutines]\n",
    ))
    .unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("receivers.pprof.remote.endpoint: ")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with(
            "receivers.pprof.remote.profiles: \"goroutines\" is not a Go profile type"
        )),
        "{problems:?}"
    );
    let problems = load(&with_pprof(
        "    remote:\n      collection_interval: 5s\n      targets:\n        - targets: [localhost:6060]\n      profiles: [{name: cpu, seconds: 5s}]\n",
    ))
    .unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("seconds (5s) must be shorter than collection_interval (5s)")),
        "{problems:?}"
    );
    let problems = load(&with_pprof(
        "    remote:\n      targets:\n        - targets: [localhost:6060]\n      bogus: 1\n",
    ))
    .unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("receivers.pprof.remote") && p.contains("bogus")),
        "{problems:?}"
    );
}
