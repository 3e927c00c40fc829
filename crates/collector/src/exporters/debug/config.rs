use serde::Deserialize;

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::{EmbeddedPart, Options};

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

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugExporterConfig {
    pub verbosity: Verbosity,
    /// The sending queue, retries, timeout and dead letters, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl EmbedsHelper for DebugExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

impl Options for DebugExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.helper]
    }
}
