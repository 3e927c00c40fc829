//! `extensions: pprof:` options: the Collector's keys and defaults, its
//! Go-only rates accepted, problems named by key path.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use profbridge_collector::config::{parse_yaml, Config};
use profbridge_collector::extensions::pprof::PprofConfig;

fn with_pprof(extensions: &str, listed: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  nop:\n\
         extensions:\n{extensions}\
         service:\n  extensions: [{listed}]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n"
    )
}

fn load(yaml: &str) -> Result<Config, Vec<String>> {
    parse_yaml(yaml, &BTreeMap::new())
        .map_err(|errors| errors.problems.iter().map(ToString::to_string).collect())
}

fn options(config: &Config, index: usize) -> PprofConfig {
    config.extensions[index]
        .1
        .options::<PprofConfig>()
        .unwrap()
        .clone()
}

#[test]
fn pprof_loads_with_the_collectors_defaults() {
    let config = load(&with_pprof("  pprof:\n", "pprof")).unwrap();
    let defaults = options(&config, 0);
    assert_eq!(defaults.endpoint, "localhost:1777");
    assert_eq!(defaults.block_profile_fraction, 0);
    assert_eq!(defaults.mutex_profile_fraction, 0);
    assert_eq!(defaults.save_to(), None);
    assert!(defaults.go_only_options_set().is_empty());
}

#[test]
fn a_collector_config_with_go_runtime_rates_loads_unchanged() {
    // As the Collector's own example sets them.
    let config = load(&with_pprof(
        "  pprof/1:\n    endpoint: 0.0.0.0:1777\n    block_profile_fraction: 3\n    mutex_profile_fraction: 5\n    save_to_file: /var/tmp/profbridge-cpu.pprof\n",
        "pprof/1",
    ))
    .unwrap();
    let set = options(&config, 0);
    assert_eq!(set.endpoint, "0.0.0.0:1777");
    assert_eq!(
        set.go_only_options_set(),
        ["block_profile_fraction", "mutex_profile_fraction"]
    );
    assert_eq!(set.save_to(), Some("/var/tmp/profbridge-cpu.pprof".into()));
}

#[test]
fn pprof_problems_name_their_key_paths() {
    let found = load(&with_pprof(
        "  pprof:\n    endpoint: ''\n    dialer:\n      timeout: 5s\n",
        "pprof",
    ))
    .unwrap_err();
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("extensions.pprof.dialer: unknown key")),
        "{found:?}"
    );
    let found = load(&with_pprof("  pprof:\n    endpoint: ''\n", "pprof")).unwrap_err();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("extensions.pprof.endpoint: \"\" is not host:port"),
        "{found:?}"
    );
}

#[test]
fn two_pprof_extensions_cannot_save_to_one_file() {
    let found = load(&with_pprof(
        "  pprof:\n    save_to_file: /tmp/cpu.pprof\n  pprof/2:\n    endpoint: localhost:1778\n    save_to_file: /tmp/cpu.pprof\n",
        "pprof, pprof/2",
    ))
    .unwrap_err();
    assert_eq!(
        found,
        ["extensions.pprof/2.save_to_file: /tmp/cpu.pprof is the save_to_file of extensions.pprof too; give each pprof extension its own"]
    );
}
