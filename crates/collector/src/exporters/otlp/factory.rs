//! `exporters: otlp:` (OTLP over gRPC) in the registry.

use std::sync::Arc;

use super::config::OtlpExporterConfig;
use super::OtlpGrpcExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::exporters::helper::ExporterHelperConfig;
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::settings::{deserialize_embedding, Problem};

pub struct OtlpExporterFactory;

impl ExporterFactory for OtlpExporterFactory {
    const KIND: &'static str = "otlp";
    type Options = OtlpExporterConfig;

    fn build(&self, id: &str, options: &OtlpExporterConfig) -> Result<BuiltExporter, StartError> {
        let exporter =
            OtlpGrpcExporter::new(options).map_err(|error| StartError::exporter(id, error))?;
        let writing = format!(
            "{id} exporter sending OTLP over gRPC to {}",
            exporter.endpoint()
        );
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(exporter)),
            writing: Some(writing),
        })
    }

    fn settings(&self, options: &OtlpExporterConfig) -> ExporterHelperConfig {
        options.helper.clone()
    }

    fn parse_options(value: ::config::Value, path: &str) -> Result<OtlpExporterConfig, Problem> {
        deserialize_embedding(value, path)
    }
}

impl Export for OtlpGrpcExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { OtlpGrpcExporter::export(&self, &batch).await })
    }
}
