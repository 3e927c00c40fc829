//! The `extensions:` section and `service.extensions`: ids, unknown
//! types, what is listed but not defined, defined but not listed, the
//! extensions components name, and each extension's option problems.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use profbridge_collector::components::Registry;
use profbridge_collector::config::{parse_yaml, Catalog, ComponentId, Config, Section};
use profbridge_collector::extensions::health_check::HealthCheckConfig;

/// A valid configuration with `extensions` under `extensions:` and
/// `listed` as `service.extensions`; `exporter` is the file exporter's
/// extra options.
fn with_extensions(extensions: &str, listed: &str, exporter: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  file:\n{exporter}\
         extensions:\n{extensions}\
         service:\n  extensions: [{listed}]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n"
    )
}

fn load(yaml: &str) -> Result<Config, Vec<String>> {
    parse_yaml(yaml, &BTreeMap::new())
        .map_err(|errors| errors.problems.iter().map(ToString::to_string).collect())
}

fn problems(yaml: &str) -> Vec<String> {
    match load(yaml) {
        Ok(config) => panic!("loaded, but should not have: {config:?}"),
        Err(problems) => problems,
    }
}

#[test]
fn extensions_load_with_the_collectors_defaults_in_listed_order() {
    let config = load(&with_extensions(
        "  health_check:\n  health_check/deep:\n    endpoint: 0.0.0.0:13134\n    path: /health/status\n",
        "health_check/deep, health_check",
        "",
    ))
    .unwrap();
    assert_eq!(
        config.service.extensions,
        [
            ComponentId::named("health_check", "deep"),
            ComponentId::new("health_check")
        ]
    );
    let options = |index: usize| {
        config.extensions[index]
            .1
            .options::<HealthCheckConfig>()
            .unwrap()
            .clone()
    };
    assert_eq!(options(0).endpoint, "localhost:13133");
    assert_eq!(options(0).path, "/");
    assert_eq!(options(1).endpoint, "0.0.0.0:13134");
    assert_eq!(options(1).path, "/health/status");
}

#[test]
fn an_unknown_extension_type_lists_the_known_ones() {
    let found = problems(&with_extensions("  healthcheck:\n", "healthcheck", ""));
    assert!(
        found.iter().any(|p| *p
            == format!(
                "extensions.healthcheck: unknown extension type \"healthcheck\"; known: {}",
                Registry.types(Section::Extensions).join(", ")
            )),
        "{found:?}"
    );
}

#[test]
fn service_extensions_must_name_defined_extensions_once() {
    let found = problems(&with_extensions(
        "  health_check:\n",
        "health_check, health_check/missing, health_check",
        "",
    ));
    assert_eq!(
        found,
        [
            "service.extensions: \"health_check/missing\" is not defined under extensions",
            "service.extensions: \"health_check\" is listed twice",
        ]
    );
    let found = problems(
        &with_extensions("", "health_check", "").replace("extensions:\nservice", "service"),
    );
    assert_eq!(
        found,
        ["service.extensions: \"health_check\" is not defined under extensions"]
    );
}

#[test]
fn a_defined_but_unlisted_extension_is_a_warning_only() {
    let yaml = with_extensions(
        "  health_check:\n  health_check/spare:\n",
        "health_check",
        "",
    );
    let config = load(&yaml).unwrap();
    let warnings: Vec<String> = config.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        ["extensions.health_check/spare: defined but not listed in service.extensions, so it does not run"]
    );
}

#[test]
fn bad_ids_and_options_name_their_key_paths() {
    let found = problems(&with_extensions(
        "  Health:\n  health_check:\n    path: status\n    check_collector_pipeline:\n      enabled: true\n    tls: {}\n",
        "health_check",
        "",
    ));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("extensions.Health: \"Health\" is not a component id")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("extensions.health_check.tls: unknown key")),
        "{found:?}"
    );
    let found = problems(&with_extensions(
        "  health_check:\n    path: status\n    check_collector_pipeline:\n      enabled: true\n",
        "health_check",
        "",
    ));
    assert_eq!(
        found,
        [
            "extensions.health_check.path: must start with /",
            "extensions.health_check.check_collector_pipeline.enabled: is not available in profbridge (the Collector deprecated it); alert on profbridge_exporter_send_failed_profiles_total from /metrics instead",
        ]
    );
}

#[test]
fn a_running_extension_shares_no_port_with_a_receiver() {
    let found = problems(
        &with_extensions(
            "  health_check:\n    endpoint: 127.0.0.1:4317\n  health_check/spare:\n    endpoint: 127.0.0.1:4317\n",
            "health_check",
            "",
        )
        .replace("      grpc:\n", "      grpc:\n        endpoint: 127.0.0.1:4317\n"),
    );
    assert_eq!(
        found.len(),
        1,
        "the unlisted one does not listen: {found:?}"
    );
    assert!(
        found[0].starts_with("extensions.health_check.endpoint:"),
        "{found:?}"
    );
}

/// The file exporter's queue options: `sending_queue: {storage: …}`.
fn queue_in(storage: &str) -> String {
    format!("    sending_queue:\n      storage: {storage}\n")
}

#[test]
fn a_queue_in_file_storage_needs_it_defined_listed_and_a_storage() {
    let storage = "  file_storage/q:\n    directory: /tmp\n";
    let config = load(&with_extensions(
        storage,
        "file_storage/q",
        &queue_in("file_storage/q"),
    ))
    .unwrap();
    let helper = config.exporters[0].1.extension_refs();
    assert_eq!(helper.len(), 1);
    assert_eq!(helper[0].key, "sending_queue.storage");
    assert_eq!(helper[0].id, ComponentId::named("file_storage", "q"));

    assert_eq!(
        problems(&with_extensions(storage, "file_storage/q", &queue_in("file_storage/other"))),
        ["exporters.file.sending_queue.storage: \"file_storage/other\" is not defined under extensions"]
    );
    assert_eq!(
        problems(&with_extensions(
            &format!("{storage}  health_check:\n"),
            "health_check",
            &queue_in("file_storage/q")
        )),
        ["exporters.file.sending_queue.storage: \"file_storage/q\" is not listed in service.extensions, so it does not run; add it there"]
    );
    assert_eq!(
        problems(&with_extensions(
            "  health_check/storage:\n",
            "health_check/storage",
            &queue_in("file_storage")
        )),
        ["exporters.file.sending_queue.storage: \"file_storage\" is not defined under extensions"]
    );
}

#[test]
fn a_storage_reference_must_be_a_storage_extension() {
    // Only ids whose type ends in "storage" name an extension; a health
    // check cannot be named there, but an id-like directory can.
    let config = load(&with_extensions(
        "  health_check:\n",
        "health_check",
        &queue_in("health_check"),
    ))
    .unwrap();
    assert!(config.exporters[0].1.extension_refs().is_empty());
    let found = problems(&with_extensions(
        "  health_check:\n",
        "health_check",
        &queue_in("db_storage"),
    ));
    assert_eq!(
        found,
        ["exporters.file.sending_queue.storage: \"db_storage\" is not defined under extensions"]
    );
}

#[test]
fn storage_dir_keeps_meaning_a_directory() {
    for directory in ["/var/lib/profbridge-queue", "./file_storage", "queue"] {
        let config = load(&with_extensions(
            "  health_check:\n",
            "health_check",
            &queue_in(directory),
        ))
        .unwrap();
        assert!(
            config.exporters[0].1.extension_refs().is_empty(),
            "{directory} is a directory"
        );
    }
}

#[test]
fn file_storage_options_default_as_the_collector_and_are_checked() {
    use profbridge_collector::extensions::file_storage::FileStorageConfig;
    let config = load(&with_extensions(
        "  file_storage:\n    create_directory: true\n",
        "file_storage",
        "",
    ))
    .unwrap();
    let options = config.extensions[0]
        .1
        .options::<FileStorageConfig>()
        .unwrap();
    assert_eq!(options.directory, "/var/lib/otelcol/file_storage");
    assert_eq!(options.timeout.0, std::time::Duration::from_secs(1));
    assert_eq!(options.directory_permissions, "0750");
    assert!(!options.fsync);

    let missing = std::env::temp_dir().join("profbridge-no-such-dir-for-file-storage");
    let found = problems(&with_extensions(
        &format!(
            "  file_storage:\n    directory: {}\n    directory_permissions: \"0999\"\n    compaction:\n      on_rebound: true\n      check_interval: 10s\n",
            missing.display()
        ),
        "file_storage",
        "",
    ));
    assert_eq!(
        found,
        [
            format!(
                "extensions.file_storage.directory: {} does not exist; create it, or set create_directory: true",
                missing.display()
            ),
            "extensions.file_storage.directory_permissions: \"0999\" is not octal permission bits, like \"0750\"".to_owned(),
        ]
    );
    let found = problems(&with_extensions(
        "  file_storage:\n    directory: /tmp\n    compaction:\n      on_startt: true\n",
        "file_storage",
        "",
    ));
    assert!(
        found[0].starts_with("extensions.file_storage.compaction.on_startt: unknown key"),
        "{found:?}"
    );
}

#[test]
fn an_authenticator_must_be_an_authenticator_extension() {
    let yaml = with_extensions("  health_check:\n", "health_check", "").replace(
        "      grpc:\n",
        "      grpc:\n        auth:\n          authenticator: health_check\n",
    );
    assert_eq!(
        problems(&yaml),
        ["receivers.otlp.protocols.grpc.auth.authenticator: \"health_check\" is not an authenticator extension (like bearertokenauth)"]
    );
    let yaml = with_extensions(
        "  bearertokenauth/out:\n    token: t\n",
        "bearertokenauth/out",
        "",
    )
    .replace(
        "exporters:\n  file:\n",
        "exporters:\n  file:\n  otlp:\n    endpoint: backend:4317\n    auth:\n      authenticator: bearertokenauth/in\n",
    );
    assert_eq!(
        problems(&yaml),
        ["exporters.otlp.auth.authenticator: \"bearertokenauth/in\" is not defined under extensions"]
    );
}

#[test]
fn bearertokenauth_needs_one_source_of_tokens() {
    let found = problems(&with_extensions(
        "  bearertokenauth:\n",
        "bearertokenauth",
        "",
    ));
    assert_eq!(
        found,
        ["extensions.bearertokenauth.token: no bearer token: set token, tokens or filename"]
    );
    let found = problems(&with_extensions(
        "  bearertokenauth:\n    token: a\n    tokens: [b]\n    header: \"bad header\"\n",
        "bearertokenauth",
        "",
    ));
    assert_eq!(
        found,
        [
            "extensions.bearertokenauth.tokens: set token or tokens, not both",
            "extensions.bearertokenauth.header: \"bad header\" is not a valid header name",
        ]
    );
    let found = problems(&with_extensions(
        "  bearertokenauth:\n    filename: /nonexistent/token\n",
        "bearertokenauth",
        "",
    ));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with("extensions.bearertokenauth.filename: cannot read /nonexistent/token"),
        "{found:?}"
    );
}

#[test]
fn an_empty_health_check_endpoint_is_reported_once() {
    let found = problems(&with_extensions(
        "  health_check:\n    endpoint: \"\"\n",
        "health_check",
        "",
    ));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("extensions.health_check.endpoint: \"\" is not host:port"),
        "{found:#?}"
    );
}

#[test]
fn the_pyroscope_exporter_takes_an_authenticator_or_basic_auth_not_both() {
    let yaml = |auth: &str| {
        format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
             exporters:\n  pyroscope:\n    endpoint: http://127.0.0.1:4040\n{auth}\
             extensions:\n  bearertokenauth/out:\n    token: s3cret\n\
             service:\n  extensions: [bearertokenauth/out]\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [pyroscope]\n"
        )
    };
    let authenticator = "    auth:\n      authenticator: bearertokenauth/out\n";
    load(&yaml(authenticator)).unwrap_or_else(|problems| panic!("{problems:#?}"));
    let found = problems(&yaml(&format!(
        "{authenticator}    basic_auth:\n      username: u\n      password: p\n"
    )));
    assert_eq!(
        found,
        ["exporters.pyroscope.auth: set basic_auth or auth, not both: each is the Authorization header"]
    );
    let found = problems(&yaml(
        "    auth:\n      authenticator: bearertokenauth/missing\n",
    ));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("exporters.pyroscope.auth.authenticator")),
        "{found:#?}"
    );
}
