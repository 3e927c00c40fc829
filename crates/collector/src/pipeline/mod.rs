//! Pipelines: a bounded, byte-budgeted queue from receivers to exporters.
//! Receivers submit without waiting; a full pipeline refuses, and the
//! receiver answers with a retryable status. Everything accepted is
//! exported before shutdown completes.

mod batch;
mod budget;
pub mod config;
mod exporter;
mod memory;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use batch::Batch;
pub use budget::{ByteBudget, Reservation};
pub use exporter::Exporter;
pub use memory::memory_estimate;

use crate::telemetry::PipelineMetrics;

/// Default bytes a pipeline may hold, queued or being exported.
pub const DEFAULT_QUEUE_BYTES: usize = 256 << 20;
/// Default number of requests a pipeline may hold.
pub const DEFAULT_QUEUE_REQUESTS: usize = 1024;

/// Why a pipeline refused a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds as much as it may; try again later.
    Full,
    /// The pipeline is shutting down.
    Closed,
}

struct Queued {
    batch: Arc<Batch>,
    _reservation: Reservation,
}

/// The sending side, held by receivers.
#[derive(Clone)]
pub struct PipelineHandle {
    pub name: Arc<str>,
    sender: mpsc::Sender<Queued>,
    budget: Arc<ByteBudget>,
}

impl PipelineHandle {
    /// Queues `batch` without waiting, or says why not.
    pub fn try_submit(&self, batch: Arc<Batch>) -> Result<(), Refused> {
        let reservation = self
            .budget
            .try_reserve(batch.memory_size)
            .ok_or(Refused::Full)?;
        let queued = Queued {
            batch,
            _reservation: reservation,
        };
        self.sender.try_send(queued).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => Refused::Full,
            mpsc::error::TrySendError::Closed(_) => Refused::Closed,
        })
    }

    pub fn budget(&self) -> &Arc<ByteBudget> {
        &self.budget
    }
}

/// A running pipeline: its queue and the task that drains it.
pub struct Pipeline {
    handle: PipelineHandle,
    worker: JoinHandle<()>,
}

impl Pipeline {
    pub fn start(
        name: &str,
        exporters: Vec<Arc<Exporter>>,
        queue_bytes: usize,
        queue_requests: usize,
        metrics: PipelineMetrics,
    ) -> Self {
        let (sender, receiver) = mpsc::channel(queue_requests.max(1));
        let name: Arc<str> = Arc::from(name);
        let worker = tokio::spawn(drain(Arc::clone(&name), receiver, exporters, metrics));
        Self {
            handle: PipelineHandle {
                name,
                sender,
                budget: ByteBudget::new(queue_bytes),
            },
            worker,
        }
    }

    pub fn handle(&self) -> PipelineHandle {
        self.handle.clone()
    }

    /// Stops taking batches (once every handle is dropped) and waits up to
    /// `timeout` for the queue to drain. Returns whether it drained.
    pub async fn shutdown(self, timeout: Duration) -> bool {
        let Self { handle, worker } = self;
        drop(handle);
        tokio::time::timeout(timeout, worker).await.is_ok()
    }
}

/// Exports each batch to every exporter of the pipeline, concurrently.
async fn drain(
    name: Arc<str>,
    mut receiver: mpsc::Receiver<Queued>,
    exporters: Vec<Arc<Exporter>>,
    metrics: PipelineMetrics,
) {
    while let Some(queued) = receiver.recv().await {
        let profiles = queued.batch.profile_count();
        let exports = exporters.iter().map(|exporter| {
            let exporter = Arc::clone(exporter);
            let batch = Arc::clone(&queued.batch);
            tokio::spawn(async move { (exporter.name().to_owned(), exporter.export(&batch).await) })
        });
        for export in exports.collect::<Vec<_>>() {
            match export.await {
                Ok((exporter, Ok(()))) => metrics.exported(&exporter, profiles, true),
                Ok((exporter, Err(error))) => {
                    metrics.exported(&exporter, profiles, false);
                    tracing::error!(pipeline = %name, exporter = %exporter, %error, "export failed");
                }
                Err(error) => tracing::error!(pipeline = %name, %error, "export task failed"),
            }
        }
    }
}
