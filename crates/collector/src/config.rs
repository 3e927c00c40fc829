//! The collector's configuration, as callers load it: parsed and checked
//! by [`crate::settings`] with the component registry
//! ([`crate::components`]) for each component's options.

use std::collections::BTreeMap;
use std::path::Path;

use crate::components::Registry;
pub use crate::settings::{
    queue, telemetry, units, Catalog, ComponentConfig, ComponentId, Config, ConfigErrors,
    ExporterConfig, Options, OwnedFile, PipelineConfig, Problem, ProcessorConfig, ReceiverConfig,
    Section, ServiceConfig, DEFAULT_CONFIG, ENV_PREFIX,
};

/// Loads the configuration file at `path`, or the embedded default for
/// `None`, with the process's environment for `${env:…}` and overrides.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigErrors> {
    crate::settings::load(path, &Registry)
}

/// [`load`] with the given environment variables instead of the process's.
pub fn load_with_vars(
    path: Option<&Path>,
    vars: &BTreeMap<String, String>,
) -> Result<Config, ConfigErrors> {
    crate::settings::load_with_vars(path, vars, &Registry)
}

/// Parses, expands, overrides and checks configuration text.
pub fn parse_yaml(text: &str, vars: &BTreeMap<String, String>) -> Result<Config, ConfigErrors> {
    crate::settings::parse_yaml(text, vars, &Registry)
}
