//! `exporters: nop:` accepts and drops everything: for benchmarks and
//! tests. It takes no options.

use std::sync::Arc;

use serde::Deserialize;

use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::exporters::helper::ExporterHelperConfig;
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::settings::Options;

/// No options: `nop:` or `nop: {}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NopExporterConfig {}

impl Options for NopExporterConfig {}

struct NopExporter;

impl Export for NopExporter {
    fn export(self: Arc<Self>, _batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async { Ok(()) })
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

    fn settings(&self, _options: &NopExporterConfig) -> ExporterHelperConfig {
        ExporterHelperConfig::default()
    }
}
