//! `exporters: kafka:` in the registry.

use std::sync::Arc;

use super::config::KafkaExporterConfig;
use super::KafkaExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::pipeline::{Export, ExportFuture, Exporter, Profiles};
use crate::protocol::compression::Compression;
use crate::settings::kafka::MessageEncoding;

pub struct KafkaExporterFactory;

impl ExporterFactory for KafkaExporterFactory {
    const KIND: &'static str = "kafka";
    type Options = KafkaExporterConfig;

    fn build(&self, id: &str, options: &KafkaExporterConfig) -> Result<BuiltExporter, StartError> {
        let exporter =
            KafkaExporter::new(id, options).map_err(|error| StartError::exporter(id, error))?;
        let writing = format!("{id} exporter producing to Kafka, {}", exporter.describe());
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(exporter)),
            writing: Some(writing),
        })
    }
}

impl Export for KafkaExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move { KafkaExporter::export(&self, batch).await })
    }

    /// Kafka compresses record batches itself: messages hold the protobuf.
    fn protobuf_compression(&self) -> Option<Compression> {
        (self.layout.encoding == MessageEncoding::OtlpProto).then_some(Compression::Identity)
    }
}
