//! `exporters: pyroscope:` in the registry.

use std::sync::Arc;

use super::config::PyroscopeExporterConfig;
use super::PyroscopeExporter;
use crate::component::{client_auth, BuiltExporter, ExporterFactory, Extensions, StartError};
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles, Sent};

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
        Ok(built(id, exporter))
    }

    fn build_with(
        &self,
        id: &str,
        options: &PyroscopeExporterConfig,
        extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError> {
        let auth = client_auth(id, options.client.auth.as_ref(), extensions)?;
        let exporter = PyroscopeExporter::new(options)
            .map_err(|error| StartError::exporter(id, error))?
            .with_auth(auth);
        Ok(built(id, exporter))
    }
}

fn built(id: &str, exporter: PyroscopeExporter) -> BuiltExporter {
    let writing = format!(
        "{id} exporter pushing pprof to Pyroscope at {}",
        exporter.url()
    );
    BuiltExporter {
        exporter: Exporter::new(id, Arc::new(exporter)),
        writing: Some(writing),
    }
}

impl Export for PyroscopeExporter {
    /// Converts on the blocking pool itself, then sends.
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { self.export_shared(&batch).await.map(|()| Sent::Other) })
    }
}
