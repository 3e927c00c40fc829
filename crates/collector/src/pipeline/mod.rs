//! Pipelines: a bounded, byte-budgeted queue from receivers to the
//! exporters' sending queues. Receivers submit without waiting; a full
//! pipeline refuses, and the receiver answers with a retryable status.
//! One task drains the queue, offering each batch to every exporter's
//! [`QueuedExporter`], so a slow exporter only fills its own queue (unless
//! it is configured to block). A batch keeps its share of the pipeline's
//! budget until every exporter that holds it in memory is done with it.
//! A processor may also close the intake for a while through a [`Gate`]
//! (the `memory_limiter`); a handle refuses while any gate does.

mod profiles;
/// `service.pipelines.NAME.queue`, parsed with the rest of the configuration.
pub use crate::settings::queue as config;
mod admission;
mod budget;
mod export_error;
mod exporter;
mod memory;
mod processing;
mod received;
mod request_pool;
pub mod sending;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub use admission::{Gate, GateContext, Hooks};
pub use budget::{register_queue, ByteBudget, Reservation};
pub use export_error::{BoxError, ExportCause, ExportError};
#[doc(hidden)]
pub use exporter::ChannelExport;
pub use exporter::{on_blocking_pool, Export, ExportFuture, Exporter};
pub use memory::memory_estimate;
pub use processing::{PipelineProcessor, Processed, Processor};
pub use profiles::Profiles;
pub use received::{Body, Keep, Received, Sent, Wanted};
pub use request_pool::RequestPool;

use processing::{InFlight, Stage};

use sending::QueuedExporter;

pub use crate::settings::queue::{DEFAULT_QUEUE_BYTES, DEFAULT_QUEUE_REQUESTS};

/// Why a pipeline refused a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds as much as it may; try again later.
    Full,
    /// The pipeline is shutting down.
    Closed,
    /// A gate at its intake (a `memory_limiter`) refuses new data for now.
    Limited,
}

struct Queued {
    batch: Arc<Profiles>,
    reservation: Reservation,
    confirm: Option<oneshot::Sender<bool>>,
}

/// Says when a batch submitted with [`PipelineHandle::try_submit_confirmed`]
/// has been offered to every exporter of the pipeline: for persistent
/// queues, that it is on disk.
#[derive(Debug)]
#[must_use]
pub struct Confirmation(oneshot::Receiver<bool>);

impl Confirmation {
    /// Whether every exporter took the batch into its queue.
    pub async fn queued(self) -> bool {
        self.0.await.unwrap_or(false)
    }

    /// [`Self::queued`] for blocking code; must not run on an async worker.
    pub fn blocking_queued(self) -> bool {
        self.0.blocking_recv().unwrap_or(false)
    }
}

/// The sending side, held by receivers.
#[derive(Clone)]
pub struct PipelineHandle {
    pub name: Arc<str>,
    request_pool: Arc<RequestPool>,
    sender: mpsc::Sender<Queued>,
    budget: Arc<ByteBudget>,
    exporters: Arc<[Arc<QueuedExporter>]>,
    gates: Arc<[Arc<dyn Gate>]>,
}

impl PipelineHandle {
    /// Where this pipeline's receivers take requests to decode into.
    pub fn request_pool(&self) -> &Arc<RequestPool> {
        &self.request_pool
    }

    /// Queues `batch` without waiting, or says why not.
    pub fn try_submit(&self, batch: Arc<Profiles>) -> Result<(), Refused> {
        self.submit(batch, None)
    }

    /// [`Self::try_submit`], and a [`Confirmation`] of when the exporters'
    /// queues have it.
    pub fn try_submit_confirmed(&self, batch: Arc<Profiles>) -> Result<Confirmation, Refused> {
        let (confirm, confirmation) = oneshot::channel();
        self.submit(batch, Some(confirm))
            .map(|()| Confirmation(confirmation))
    }

    fn submit(
        &self,
        batch: Arc<Profiles>,
        confirm: Option<oneshot::Sender<bool>>,
    ) -> Result<(), Refused> {
        if self.refusal().is_some() {
            return Err(Refused::Limited);
        }
        let reservation = self
            .budget
            .try_reserve(batch.memory_size)
            .ok_or(Refused::Full)?;
        let queued = Queued {
            batch,
            reservation,
            confirm,
        };
        self.sender.try_send(queued).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => Refused::Full,
            mpsc::error::TrySendError::Closed(_) => Refused::Closed,
        })
    }

    pub fn budget(&self) -> &Arc<ByteBudget> {
        &self.budget
    }

    /// Why a gate at the pipeline's intake refuses new data now, if one
    /// does.
    pub fn refusal(&self) -> Option<String> {
        self.gates.iter().find_map(|gate| gate.refusal())
    }

    /// The gates at the pipeline's intake, which the service starts.
    pub fn gates(&self) -> &[Arc<dyn Gate>] {
        &self.gates
    }

    /// Whether some exporter of the pipeline would take a decoded request
    /// of `bytes` now. When none would, every one would drop it, and the
    /// request is better refused before it is decompressed and decoded.
    /// (When some would, it is taken: they get it, and a client told to
    /// retry sends it again.)
    pub fn exporters_have_room_for(&self, bytes: usize) -> bool {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        self.exporters.is_empty()
            || self
                .exporters
                .iter()
                .any(|exporter| exporter.has_room_for(bytes))
    }
}

/// The forms of an arriving request that some exporter of `pipelines`
/// sends or stores as they are: what a receiver keeps with the request.
pub fn wanted(pipelines: &[PipelineHandle]) -> Wanted {
    pipelines
        .iter()
        .flat_map(|pipeline| pipeline.exporters.iter())
        .map(|exporter| exporter.wanted())
        .fold(Wanted::default(), Wanted::and)
}

/// A request to decode `encoded_size` protobuf bytes into, from the request
/// pool of the pipelines a receiver feeds (they share the service's).
pub fn pooled_request(
    pipelines: &[PipelineHandle],
    encoded_size: usize,
) -> profbridge_translate::otlp::ExportProfilesServiceRequest {
    pipelines.first().map_or_else(Default::default, |pipeline| {
        pipeline.request_pool.take(encoded_size)
    })
}

/// A running pipeline: its queue and the task that drains it.
pub struct Pipeline {
    handle: PipelineHandle,
    worker: JoinHandle<()>,
}

impl Pipeline {
    /// A pipeline with a request pool of its own, its processors counted
    /// nowhere.
    pub fn start(
        name: &str,
        processors: Vec<Box<dyn Processor>>,
        exporters: Vec<Arc<QueuedExporter>>,
        queue_bytes: usize,
        queue_requests: usize,
    ) -> Self {
        let request_pool = Arc::new(RequestPool::default());
        Self::start_sharing(
            name,
            processors
                .into_iter()
                .map(PipelineProcessor::from)
                .collect(),
            exporters,
            (queue_bytes, queue_requests),
            request_pool,
        )
    }

    /// A pipeline whose receivers decode into `request_pool`'s requests,
    /// and whose requests go back to it when the pipeline is done with
    /// them. `queue` is the most bytes and requests it holds.
    pub fn start_sharing(
        name: &str,
        processors: Vec<PipelineProcessor>,
        exporters: Vec<Arc<QueuedExporter>>,
        (queue_bytes, queue_requests): (usize, usize),
        request_pool: Arc<RequestPool>,
    ) -> Self {
        let (sender, receiver) = mpsc::channel(queue_requests.max(1));
        let name: Arc<str> = Arc::from(name);
        let budget = ByteBudget::new(queue_bytes);
        let gates = processors
            .iter()
            .filter_map(|processor| processor.runtime.gate())
            .collect();
        let stages = processors.into_iter().map(Stage::new).collect();
        let shared_exporters: Arc<[Arc<QueuedExporter>]> = exporters.iter().cloned().collect();
        let worker = tokio::spawn(drain(receiver, stages, exporters, Arc::clone(&budget)));
        Self {
            handle: PipelineHandle {
                name,
                request_pool,
                sender,
                budget,
                exporters: shared_exporters,
                gates,
            },
            worker,
        }
    }

    pub fn handle(&self) -> PipelineHandle {
        self.handle.clone()
    }

    /// Stops taking batches (once every handle is dropped) and waits up to
    /// `timeout` for every queued batch to be offered to the exporters.
    /// Returns whether it drained. The exporters' queues drain separately
    /// ([`QueuedExporter::shutdown`]).
    pub async fn shutdown(self, timeout: Duration) -> bool {
        let Self { handle, worker } = self;
        drop(handle);
        tokio::time::timeout(timeout, worker).await.is_ok()
    }
}

/// Runs each batch through the processors and offers what comes out to
/// every exporter of the pipeline. An offer waits only for an exporter
/// whose queue blocks when full, or has no queue. Batch processors are
/// flushed when their timers fire and when the pipeline stops.
async fn drain(
    mut receiver: mpsc::Receiver<Queued>,
    mut stages: Vec<Stage>,
    exporters: Vec<Arc<QueuedExporter>>,
    budget: Arc<ByteBudget>,
) {
    loop {
        let due = stages
            .iter()
            .enumerate()
            .filter_map(|(index, stage)| stage.deadline().map(|at| (at, index)))
            .min();
        let next = tokio::select! {
            queued = receiver.recv() => queued,
            () = sleep_until(due.map(|(at, _)| at)) => {
                if let Some((_, index)) = due {
                    let ready = processing::flush(&mut stages, index, &budget);
                    offer(ready, &exporters).await;
                }
                continue;
            }
        };
        let Some(Queued {
            batch,
            reservation,
            confirm,
        }) = next
        else {
            break;
        };
        let item = InFlight {
            batch,
            hold: Arc::new(reservation),
            confirms: confirm.into_iter().collect(),
        };
        let ready = processing::run(&mut stages, 0, vec![item], &budget);
        offer(ready, &exporters).await;
    }
    for index in 0..stages.len() {
        let ready = processing::flush(&mut stages, index, &budget);
        offer(ready, &exporters).await;
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn offer(items: Vec<InFlight>, exporters: &[Arc<QueuedExporter>]) {
    for item in items {
        let mut all_queued = true;
        for exporter in exporters {
            let offered = exporter
                .offer_holding(Arc::clone(&item.batch), Arc::clone(&item.hold))
                .await;
            all_queued &= offered.is_ok();
        }
        for confirm in item.confirms {
            let _ = confirm.send(all_queued);
        }
    }
}
