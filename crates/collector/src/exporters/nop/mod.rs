//! `exporters: nop:` accepts and drops everything: for benchmarks and
//! tests. It takes no options.

use std::sync::Arc;

use serde::Deserialize;

use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles, Sent};
use crate::settings::{EmbeddedPart, Options};

/// No options: `nop:` or `nop: {}`; the helper runs with its defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NopExporterConfig {
    #[serde(skip)]
    helper: ExporterHelperConfig,
}

impl Options for NopExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        Vec::new()
    }
}

impl EmbedsHelper for NopExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

struct NopExporter;

impl Export for NopExporter {
    fn export(self: Arc<Self>, _batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async { Ok(Sent::Other) })
    }
}

pub struct NopExporterFactory;

impl ExporterFactory for NopExporterFactory {
    const KIND: &'static str = "nop";
    type Options = NopExporterConfig;

    fn build(&self, id: &str, _options: &NopExporterConfig) -> Result<BuiltExporter, StartError> {
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(NopExporter)),
            writing: None,
        })
    }
}
