//! `exporters: otlp:` (OTLP over gRPC) in the registry.

use std::sync::Arc;

use super::config::OtlpExporterConfig;
use super::OtlpGrpcExporter;
use crate::component::{client_auth, BuiltExporter, ExporterFactory, Extensions, StartError};
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::protocol::compression::Compression;

pub struct OtlpExporterFactory;

impl ExporterFactory for OtlpExporterFactory {
    const KIND: &'static str = "otlp";
    type Options = OtlpExporterConfig;

    fn build(&self, id: &str, options: &OtlpExporterConfig) -> Result<BuiltExporter, StartError> {
        let exporter =
            OtlpGrpcExporter::new(options).map_err(|error| StartError::exporter(id, error))?;
        Ok(built(id, exporter))
    }

    fn build_with(
        &self,
        id: &str,
        options: &OtlpExporterConfig,
        extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError> {
        let auth = client_auth(id, options.client.auth.as_ref(), extensions)?;
        let exporter = OtlpGrpcExporter::new(options)
            .map_err(|error| StartError::exporter(id, error))?
            .with_auth(auth);
        Ok(built(id, exporter))
    }
}

fn built(id: &str, exporter: OtlpGrpcExporter) -> BuiltExporter {
    let writing = format!(
        "{id} exporter sending OTLP over gRPC to {}",
        exporter.endpoint()
    );
    BuiltExporter {
        exporter: Exporter::new(id, Arc::new(exporter)),
        writing: Some(writing),
    }
}

impl Export for OtlpGrpcExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { OtlpGrpcExporter::export(&self, &batch).await })
    }

    fn protobuf_compression(&self) -> Option<Compression> {
        Some(crate::exporters::on_the_wire(self.compression()))
    }
}
