//! `exporters: debug:` in the registry.

use std::sync::Arc;

use super::config::DebugExporterConfig;
use super::DebugExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::exporters::helper::ExporterHelperConfig;
use crate::pipeline::{on_blocking_pool, Export, ExportFuture, Exporter, Profiles};
use crate::settings::{deserialize_embedding, Problem};

pub struct DebugExporterFactory;

impl ExporterFactory for DebugExporterFactory {
    const KIND: &'static str = "debug";
    type Options = DebugExporterConfig;

    fn build(&self, id: &str, options: &DebugExporterConfig) -> Result<BuiltExporter, StartError> {
        let exporter = DebugExporter::new(options);
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(exporter)),
            writing: None,
        })
    }

    fn settings(&self, options: &DebugExporterConfig) -> ExporterHelperConfig {
        options.helper.clone()
    }

    fn parse_options(value: ::config::Value, path: &str) -> Result<DebugExporterConfig, Problem> {
        deserialize_embedding(value, path)
    }
}

impl Export for DebugExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        on_blocking_pool(self, batch, DebugExporter::export)
    }
}
