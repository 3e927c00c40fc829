//! The closed set of exporters a pipeline can feed.

use std::sync::Arc;

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

    /// Exports one batch; blocking exporters run on the blocking pool.
    pub async fn export(self: &Arc<Self>, batch: &Arc<Batch>) -> Result<(), ExportError> {
        match &**self {
            Self::Nop { .. } => Ok(()),
            Self::File { .. } | Self::Debug { .. } => {
                let (exporter, batch) = (Arc::clone(self), Arc::clone(batch));
                tokio::task::spawn_blocking(move || exporter.export_blocking(&batch))
                    .await
                    .map_err(|error| {
                        ExportError::retryable(format!("export task failed: {error}"))
                    })?
            }
        }
    }

    /// The blocking exporters' work.
    fn export_blocking(&self, batch: &Batch) -> Result<(), ExportError> {
        match self {
            Self::File { exporter, .. } => exporter.export(batch).map(|_| ()),
            Self::Debug { exporter, .. } => exporter.export(batch),
            Self::Nop { .. } => Ok(()),
        }
    }
}
