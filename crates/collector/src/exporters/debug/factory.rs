//! `exporters: debug:` in the registry.

use std::sync::Arc;

use super::config::DebugExporterConfig;
use super::DebugExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::pipeline::{on_blocking_pool, Export, ExportFuture, Exporter, Profiles, Sent};

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
}

impl Export for DebugExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        on_blocking_pool(self, batch, |exporter, batch| {
            DebugExporter::export(exporter, batch).map(|()| Sent::Other)
        })
    }
}
