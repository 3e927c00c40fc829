//! What a pipeline feeds: any exporter, behind one trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use super::export_error::{ExportCause, ExportError};
use super::{Profiles, Sent};
use crate::protocol::compression::Compression;

/// How one export goes, awaited by the exporter's sending queue: what it
/// sent, or why not.
pub type ExportFuture = Pin<Box<dyn Future<Output = Result<Sent, ExportError>> + Send>>;

/// An exporter's runtime: sends one batch where it belongs.
pub trait Export: Send + Sync + 'static {
    /// Exports one batch; an exporter whose work blocks moves it to the
    /// blocking pool itself (see [`on_blocking_pool`]).
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture;

    /// The compression of the OTLP protobuf it sends or writes (`Identity`:
    /// none), if it does: receivers then keep the bytes a request arrived
    /// as, for it to send as they are.
    fn protobuf_compression(&self) -> Option<Compression> {
        None
    }
}

/// Runs blocking export `work` on the blocking pool.
pub fn on_blocking_pool<T: Send + Sync + 'static>(
    exporter: Arc<T>,
    batch: Arc<Profiles>,
    work: fn(&T, &Profiles) -> Result<Sent, ExportError>,
) -> ExportFuture {
    Box::pin(async move {
        tokio::task::spawn_blocking(move || work(&exporter, &batch))
            .await
            .map_err(|error| {
                ExportError::retryable(ExportCause::TaskFailed {
                    task: "export task",
                    error,
                })
            })?
    })
}

/// A named exporter, as pipelines and sending queues hold it.
pub struct Exporter {
    name: String,
    runtime: Arc<dyn Export>,
}

/// One export of a [`Exporter::channel`] exporter: the batch, and where
/// the test sends the result (dropping it fails the export, retryably).
#[doc(hidden)]
#[derive(Debug)]
pub struct ChannelExport {
    pub batch: Arc<Profiles>,
    pub reply: oneshot::Sender<Result<(), ExportError>>,
}

/// Hands each batch to a test, which answers how the export went.
struct ChannelExporter {
    sender: mpsc::UnboundedSender<ChannelExport>,
}

/// Why a [`ChannelExporter`] export got no answer.
#[derive(Debug, Error)]
enum Unanswered {
    #[error("the test stopped listening")]
    StoppedListening,
    #[error("the test dropped the export")]
    DroppedTheExport,
}

impl From<Unanswered> for ExportError {
    fn from(unanswered: Unanswered) -> Self {
        Self::retryable(ExportCause::Other(Box::new(unanswered)))
    }
}

impl Export for ChannelExporter {
    fn export(self: Arc<Self>, batch: Arc<Profiles>) -> ExportFuture {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            if self.sender.send(ChannelExport { batch, reply }).is_err() {
                return Err(Unanswered::StoppedListening.into());
            }
            answer
                .await
                .unwrap_or_else(|_| Err(Unanswered::DroppedTheExport.into()))
                .map(|()| Sent::Other)
        })
    }
}

impl Exporter {
    pub fn new(name: &str, runtime: Arc<dyn Export>) -> Self {
        Self {
            name: name.to_owned(),
            runtime,
        }
    }

    /// An exporter that hands its exports to a test, and the receiving end
    /// of its exports.
    #[doc(hidden)]
    pub fn channel(name: &str) -> (Self, mpsc::UnboundedReceiver<ChannelExport>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let runtime = Arc::new(ChannelExporter { sender });
        (Self::new(name, runtime), receiver)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Exports one batch.
    pub async fn export(self: &Arc<Self>, batch: &Arc<Profiles>) -> Result<Sent, ExportError> {
        Arc::clone(&self.runtime).export(Arc::clone(batch)).await
    }

    /// See [`Export::protobuf_compression`].
    pub fn protobuf_compression(&self) -> Option<Compression> {
        self.runtime.protobuf_compression()
    }
}
