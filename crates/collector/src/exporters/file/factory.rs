//! `exporters: file:` in the registry.

use std::sync::Arc;

use super::config::{FileExporterConfig, FileFormat};
use super::FileExporter;
use crate::component::{BuiltExporter, ExporterFactory, StartError};
use crate::pipeline::{on_blocking_pool, Export, ExportFuture, Exporter, Profiles, Sent};
use crate::protocol::compression::Compression;

pub struct FileExporterFactory;

impl ExporterFactory for FileExporterFactory {
    const KIND: &'static str = "file";
    type Options = FileExporterConfig;

    fn build(&self, id: &str, options: &FileExporterConfig) -> Result<BuiltExporter, StartError> {
        let format = match options.format {
            FileFormat::Pprof => "pprof",
            FileFormat::Otlp => "OTLP protobuf",
            FileFormat::OtlpJson => "OTLP JSON",
        };
        let writing = format!(
            "{id} exporter writing {format} files under {}",
            options.path
        );
        let exporter =
            FileExporter::new(options).map_err(|error| StartError::exporter(id, error))?;
        Ok(BuiltExporter {
            exporter: Exporter::new(id, Arc::new(exporter)),
            writing: Some(writing),
        })
    }

    /// Building creates the folder; the only check without that, the
    /// path template, is one of the configuration's own.
    fn check(&self, _id: &str, _options: &FileExporterConfig) -> Option<StartError> {
        None
    }
}

impl Export for FileExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        on_blocking_pool(self, batch, |exporter, batch| {
            FileExporter::export(exporter, batch)?;
            Ok(match exporter.format {
                FileFormat::Otlp => batch.sent_as(Compression::Identity),
                FileFormat::Pprof | FileFormat::OtlpJson => Sent::Other,
            })
        })
    }

    /// `format: otlp` writes the protobuf a request arrived as.
    fn protobuf_compression(&self) -> Option<Compression> {
        (self.format == FileFormat::Otlp).then_some(Compression::Identity)
    }
}
