//! `exporters: otlphttp:` in the registry.

use std::sync::Arc;

use super::config::OtlpHttpExporterConfig;
use super::OtlpHttpExporter;
use crate::component::{client_auth, BuiltExporter, ExporterFactory, Extensions, StartError};
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::protocol::compression::Compression;

pub struct OtlpHttpExporterFactory;

impl ExporterFactory for OtlpHttpExporterFactory {
    const KIND: &'static str = "otlphttp";
    type Options = OtlpHttpExporterConfig;

    fn build(
        &self,
        id: &str,
        options: &OtlpHttpExporterConfig,
    ) -> Result<BuiltExporter, StartError> {
        let exporter =
            OtlpHttpExporter::new(options).map_err(|error| StartError::exporter(id, error))?;
        Ok(built(id, exporter))
    }

    fn build_with(
        &self,
        id: &str,
        options: &OtlpHttpExporterConfig,
        extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError> {
        let auth = client_auth(id, options.client.auth.as_ref(), extensions)?;
        let exporter = OtlpHttpExporter::new(options)
            .map_err(|error| StartError::exporter(id, error))?
            .with_auth(auth);
        Ok(built(id, exporter))
    }
}

fn built(id: &str, exporter: OtlpHttpExporter) -> BuiltExporter {
    let writing = format!("{id} exporter sending OTLP over HTTP to {}", exporter.url());
    BuiltExporter {
        exporter: Exporter::new(id, Arc::new(exporter)),
        writing: Some(writing),
    }
}

impl Export for OtlpHttpExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { OtlpHttpExporter::export(&self, &batch).await })
    }

    fn protobuf_compression(&self) -> Option<Compression> {
        OtlpHttpExporter::protobuf_compression(self).map(crate::exporters::on_the_wire)
    }
}
