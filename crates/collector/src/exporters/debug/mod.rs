//! The debug exporter: a summary line per request, or details.

pub mod config;
mod factory;
mod summary;

use config::{DebugExporterConfig, Verbosity};
pub use factory::DebugExporterFactory;
pub use summary::summarize;

use super::ExportError;
use crate::pipeline::Profiles;

/// Logs what each batch holds, at `info`, as [`summarize`] words it.
#[derive(Debug, Clone)]
pub struct DebugExporter {
    verbosity: Verbosity,
}

impl DebugExporter {
    pub fn new(config: &DebugExporterConfig) -> Self {
        Self {
            verbosity: config.verbosity,
        }
    }

    /// Logs the batch; never fails.
    pub fn export(&self, batch: &Profiles) -> Result<(), ExportError> {
        for line in summarize(batch, self.verbosity) {
            tracing::info!(exporter = "debug", "{line}");
        }
        Ok(())
    }
}
