//! The collector's configuration, in the OpenTelemetry Collector's shape:
//! the model, its parser and checks, and the option types components
//! share. It knows no component: the parser asks a [`Catalog`] (the
//! registry, passed in by `crate::config`) for each type's options.
//!
//! Loading goes: read the YAML (the file, or [`DEFAULT_CONFIG`]); expand
//! `${env:NAME}` / `${env:NAME:-default}` in text values (`$$` is a literal
//! `$`); apply `PROFBRIDGE__SECTION__KEY=value` environment overrides (see
//! [`ENV_PREFIX`]); deserialize each component, reporting unknown keys and
//! bad values with their key paths; then check pipelines, listen addresses
//! and option values. Every problem found is reported, not only the first.
//! docs/configuration.md is the reference for users.

mod catalog;
pub mod client;
pub mod embed;
pub mod exporter_helper;
pub mod kafka;
pub mod key_paths;
pub mod queue;
pub mod server;
pub mod telemetry;
pub mod tls;
pub mod unavailable;
pub mod units;

pub(crate) mod aliases;
mod component_id;
mod de;
mod expand;
mod listeners;
mod model;
mod options;
mod overrides;
mod parse;
pub mod parts;
mod problems;
mod refs;
mod validate;

use std::collections::BTreeMap;
use std::path::Path;

use ::config::{FileFormat, Map, Source, Value};

pub use catalog::Catalog;
pub use component_id::ComponentId;
pub use model::{
    Config, ExporterConfig, ExtensionConfig, PipelineConfig, ProcessorConfig, ReceiverConfig,
    Section, ServiceConfig,
};
pub use options::{ComponentConfig, Options};
pub use overrides::ENV_PREFIX;
pub use problems::{ConfigErrors, Problem};
pub use refs::{ExtensionRef, ExtensionRole, OwnedFile};

pub(crate) use embed::deserialize_embedding;
pub use embed::options_key_paths;
pub use key_paths::keys_of;
use parse::Defined;
pub use parts::{Embedded, EmbeddedPart, NestedSection, Written};

/// The configuration used when none is given: OTLP in on loopback, pprof
/// files out under `./profbridge-data`.
pub const DEFAULT_CONFIG: &str = include_str!("../../../../config/profbridge.yaml");

/// Loads the configuration file at `path`, or the embedded default for
/// `None`, with the process's environment for `${env:…}` and overrides.
pub fn load(path: Option<&Path>, catalog: &dyn Catalog) -> Result<Config, ConfigErrors> {
    load_with_vars(path, &process_environment(), catalog)
}

/// [`load`] with the given environment variables instead of the process's.
pub fn load_with_vars(
    path: Option<&Path>,
    vars: &BTreeMap<String, String>,
    catalog: &dyn Catalog,
) -> Result<Config, ConfigErrors> {
    match path {
        None => parse_yaml(DEFAULT_CONFIG, vars, catalog),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                ConfigErrors::single(Problem::new(
                    "",
                    format!("cannot read {}: {error}", path.display()),
                ))
            })?;
            parse_yaml(&text, vars, catalog)
        }
    }
}

/// Parses, expands, overrides and checks configuration text.
pub fn parse_yaml(
    text: &str,
    vars: &BTreeMap<String, String>,
    catalog: &dyn Catalog,
) -> Result<Config, ConfigErrors> {
    let mut root = read_yaml(text)?;
    let mut problems = Vec::new();
    for (key, value) in root.iter_mut() {
        expand::expand_tree(value, key, vars, &mut problems);
    }
    // A value left unexpanded would only cause more problems at its path.
    let unexpanded: Vec<String> = problems
        .iter()
        .map(|problem| problem.path.clone())
        .collect();
    overrides::apply_overrides(&mut root, vars, &mut problems);
    let mut later = Vec::new();
    let (config, defined) = parse::parse_root(root, catalog, &mut later);
    validate::check(&config, &defined, &mut later);
    problems.extend(
        later
            .into_iter()
            .filter(|problem| !unexpanded.contains(&problem.path)),
    );
    let warnings = validate::unused_components(&config, &defined);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors { problems, warnings })
    }
}

fn read_yaml(text: &str) -> Result<Map<String, Value>, ConfigErrors> {
    let not_yaml = |error: ::config::ConfigError| {
        ConfigErrors::single(Problem::new("", format!("not valid YAML: {error}")))
    };
    if aliases::expanded_nodes(text).is_some_and(|nodes| nodes > aliases::MAX_EXPANDED_NODES) {
        return Err(ConfigErrors::single(Problem::new(
            "",
            format!(
                "refused: its aliases expand to more than {} YAML nodes",
                aliases::MAX_EXPANDED_NODES
            ),
        )));
    }
    let built = ::config::Config::builder()
        .add_source(::config::File::from_str(text, FileFormat::Yaml))
        .build()
        .map_err(not_yaml)?;
    built.collect().map_err(not_yaml)
}

/// The process's environment; variables that are not UTF-8 are skipped.
fn process_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

impl Config {
    /// Checks a configuration built in code the way [`load`] checks a file;
    /// returns the warnings when there is no problem.
    pub fn validate(&self) -> Result<Vec<Problem>, ConfigErrors> {
        let defined = Defined::of(self);
        let mut problems = Vec::new();
        validate::check(self, &defined, &mut problems);
        let warnings = validate::unused_components(self, &defined);
        if problems.is_empty() {
            Ok(warnings)
        } else {
            Err(ConfigErrors { problems, warnings })
        }
    }

    /// Components that no pipeline uses, so they do not run.
    pub fn warnings(&self) -> Vec<Problem> {
        validate::unused_components(self, &Defined::of(self))
    }
}
