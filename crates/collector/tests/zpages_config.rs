//! `extensions: zpages:` options: the Collector's endpoint by default, and
//! what profbridge cannot do named at its key path.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::extensions::zpages::{ZPagesConfig, DEFAULT_ENDPOINT};

fn with_zpages(options: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  nop:\n\
         extensions:\n  zpages:\n{options}\
         service:\n  extensions: [zpages]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n"
    )
}

fn problems(yaml: &str) -> Vec<String> {
    match parse_yaml(yaml, &BTreeMap::new()) {
        Ok(config) => panic!("loaded, but should not have: {config:?}"),
        Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn zpages_listen_where_the_collectors_do_by_default() {
    let config = parse_yaml(&with_zpages(""), &BTreeMap::new()).unwrap();
    let options = config.extensions[0]
        .1
        .options::<ZPagesConfig>()
        .unwrap()
        .clone();
    assert_eq!(options.endpoint, "localhost:55679");
    assert_eq!(DEFAULT_ENDPOINT, "localhost:55679");
    assert!(!options.expvar.enabled);

    let config = parse_yaml(
        &with_zpages("    endpoint: 0.0.0.0:55680\n    expvar:\n      enabled: false\n"),
        &BTreeMap::new(),
    )
    .unwrap();
    let options = config.extensions[0].1.options::<ZPagesConfig>().unwrap();
    assert_eq!(options.endpoint, "0.0.0.0:55680");
}

#[test]
fn what_profbridge_cannot_serve_is_refused_at_its_key() {
    let found = problems(&with_zpages(
        "    endpoint: \"\"\n    expvar:\n      enabled: true\n",
    ));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("extensions.zpages.endpoint: \"\" is not host:port"),
        "{found:?}"
    );
    assert_eq!(
        found[1..],
        [
            "extensions.zpages.expvar.enabled: is not available in profbridge (expvar shows a Go runtime's variables); /metrics serves the process figures (profbridge_process_*)",
        ]
    );
    let found = problems(&with_zpages("    tls: {}\n"));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("extensions.zpages.tls: unknown key")),
        "{found:?}"
    );
}

#[test]
fn zpages_share_no_port_with_a_receiver() {
    let found = problems(&with_zpages("    endpoint: 127.0.0.1:4317\n").replace(
        "      grpc:\n",
        "      grpc:\n        endpoint: 127.0.0.1:4317\n",
    ));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("extensions.zpages.endpoint:")),
        "{found:?}"
    );
}
