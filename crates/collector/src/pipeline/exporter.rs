//! The closed set of exporters a pipeline can feed.

use crate::exporters::debug::DebugExporter;
use crate::exporters::file::FileExporter;
use crate::exporters::ExportError;

use super::Batch;

pub enum Exporter {
    File {
        name: String,
        exporter: FileExporter,
    },
    Debug {
        name: String,
        exporter: DebugExporter,
    },
    /// Accepts and discards: for benchmarks and tests.
    Nop { name: String },
}

impl Exporter {
    pub fn name(&self) -> &str {
        match self {
            Self::File { name, .. } | Self::Debug { name, .. } | Self::Nop { name } => name,
        }
    }

    /// Blocking: pipelines call it on the blocking pool.
    pub fn export(&self, batch: &Batch) -> Result<(), ExportError> {
        match self {
            Self::File { exporter, .. } => exporter.export(batch).map(|_| ()),
            Self::Debug { exporter, .. } => exporter.export(batch),
            Self::Nop { .. } => Ok(()),
        }
    }
}
