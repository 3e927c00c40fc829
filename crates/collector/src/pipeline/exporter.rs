//! The closed set of exporters a pipeline can feed.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::exporters::debug::DebugExporter;
use crate::exporters::file::FileExporter;
use crate::exporters::otlp::OtlpGrpcExporter;
use crate::exporters::otlp_http::OtlpHttpExporter;
use crate::exporters::pyroscope::PyroscopeExporter;
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
    OtlpGrpc {
        name: String,
        exporter: Box<OtlpGrpcExporter>,
    },
    OtlpHttp {
        name: String,
        exporter: Box<OtlpHttpExporter>,
    },
    Pyroscope {
        name: String,
        exporter: Box<PyroscopeExporter>,
    },
    /// Hands each batch to a test, which answers how the export went.
    #[doc(hidden)]
    Channel {
        name: String,
        sender: mpsc::UnboundedSender<ChannelExport>,
    },
}

/// One export of an [`Exporter::Channel`]: the batch, and where the test
/// sends the result (dropping it fails the export, retryably).
#[doc(hidden)]
#[derive(Debug)]
pub struct ChannelExport {
    pub batch: Arc<Batch>,
    pub reply: oneshot::Sender<Result<(), ExportError>>,
}

impl Exporter {
    /// An [`Exporter::Channel`] and the receiving end of its exports.
    #[doc(hidden)]
    pub fn channel(name: &str) -> (Self, mpsc::UnboundedReceiver<ChannelExport>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let name = name.to_owned();
        (Self::Channel { name, sender }, receiver)
    }

    pub fn name(&self) -> &str {
        match self {
            Self::File { name, .. }
            | Self::Debug { name, .. }
            | Self::Nop { name }
            | Self::OtlpGrpc { name, .. }
            | Self::OtlpHttp { name, .. }
            | Self::Pyroscope { name, .. }
            | Self::Channel { name, .. } => name,
        }
    }

    /// Exports one batch; blocking exporters run on the blocking pool.
    pub async fn export(self: &Arc<Self>, batch: &Arc<Batch>) -> Result<(), ExportError> {
        match &**self {
            Self::Nop { .. } => Ok(()),
            Self::OtlpGrpc { exporter, .. } => exporter.export(batch).await,
            Self::OtlpHttp { exporter, .. } => exporter.export(batch).await,
            // Converts on the blocking pool itself, then sends.
            Self::Pyroscope { exporter, .. } => exporter.export_shared(batch).await,
            Self::Channel { sender, .. } => {
                let (reply, answer) = oneshot::channel();
                let export = ChannelExport {
                    batch: Arc::clone(batch),
                    reply,
                };
                if sender.send(export).is_err() {
                    return Err(ExportError::retryable("the test stopped listening"));
                }
                answer
                    .await
                    .unwrap_or_else(|_| Err(ExportError::retryable("the test dropped the export")))
            }
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
            Self::Nop { .. }
            | Self::Channel { .. }
            | Self::OtlpGrpc { .. }
            | Self::OtlpHttp { .. }
            | Self::Pyroscope { .. } => Ok(()),
        }
    }
}
