//! `exporters: pyroscope:` in the registry.

use std::sync::Arc;

use super::config::PyroscopeExporterConfig;
use super::PyroscopeExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::exporters::helper::ExporterHelperConfig;
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::settings::{deserialize_embedding, Problem};

pub struct PyroscopeExporterFactory;

impl ExporterFactory for PyroscopeExporterFactory {
    const KIND: &'static str = "pyroscope";
    type Options = PyroscopeExporterConfig;

    fn build(
        &self,
        id: &str,
        options: &PyroscopeExporterConfig,
    ) -> Result<BuiltExporter, StartError> {
        let exporter =
            PyroscopeExporter::new(options).map_err(|error| StartError::exporter(id, error))?;
        let writing = format!(
            "{id} exporter pushing pprof to Pyroscope at {}",
            exporter.url()
        );
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(exporter)),
            writing: Some(writing),
        })
    }

    fn settings(&self, options: &PyroscopeExporterConfig) -> ExporterHelperConfig {
        options.helper.clone()
    }

    fn parse_options(
        value: ::config::Value,
        path: &str,
    ) -> Result<PyroscopeExporterConfig, Problem> {
        deserialize_embedding(value, path)
    }
}

impl Export for PyroscopeExporter {
    /// Converts on the blocking pool itself, then sends.
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { self.export_shared(&batch).await })
    }
}
