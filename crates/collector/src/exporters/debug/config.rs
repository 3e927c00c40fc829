use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::Options;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// One line per request.
    #[default]
    Basic,
    /// Also one line per profile.
    Normal,
    /// Also every sample.
    Detailed,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugExporterConfig {
    pub verbosity: Verbosity,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others (see [`EmbedsHelper`]).
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for DebugExporterConfig {
    const KEYS: &'static [&'static str] = &[
        "verbosity",
        "sending_queue",
        "retry_on_failure",
        "timeout",
        "dead_letter",
    ];

    fn helper_mut(&mut self) -> &mut ExporterHelperConfig {
        &mut self.helper
    }
}

impl Default for DebugExporterConfig {
    fn default() -> Self {
        Self {
            verbosity: Verbosity::default(),
            helper: Self::default_helper(),
        }
    }
}

impl DebugExporterConfig {}

impl Options for DebugExporterConfig {}
