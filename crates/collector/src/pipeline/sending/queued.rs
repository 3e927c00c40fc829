//! [`QueuedExporter`]: one exporter behind its sending queue (in memory or
//! persistent) and the consumer tasks that export with retries.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::bounded::Entry;
use super::config::{ExporterHelperConfig, OnOverflow};
use super::consumers::consume;
use super::dead_letter::DeadLetter;
use super::error::{EnqueueError, HelperError};
use super::queue::{open_queue, InMemory, Queue};
use super::retry::{Delivery, Policy};
use super::shared::Shared;
use crate::pipeline::{Exporter, Profiles, Reservation, Sent, Wanted};
use crate::telemetry::instruments::register_exporter_queue;
use crate::telemetry::recent_errors::profiles_phrase;
use crate::telemetry::{ExporterMetrics, Registry};

/// An exporter with its sending queue and consumers; shared by every
/// pipeline that uses the exporter.
pub struct QueuedExporter {
    shared: Arc<Shared>,
    consumers: Mutex<Vec<JoinHandle<()>>>,
}

impl QueuedExporter {
    /// Opens the queue (replaying a persistent one) and starts the
    /// consumers; registers the exporter's metrics.
    pub async fn start(
        exporter: Arc<Exporter>,
        config: &ExporterHelperConfig,
        registry: &Registry,
    ) -> Result<Arc<Self>, HelperError> {
        let name = exporter.name().to_owned();
        let dead_letter = match config.dead_letter.as_deref() {
            None => None,
            Some(dir) if dir.trim().is_empty() => return Err(HelperError::EmptyDeadLetter),
            Some(dir) => Some(Arc::new(DeadLetter::new(Path::new(dir), &name).map_err(
                |error| HelperError::DeadLetter {
                    path: dir.to_owned(),
                    error,
                },
            )?)),
        };
        let queue = open_queue(&name, config).await?;
        if let Some(queue) = &queue {
            register_exporter_queue(registry, &name, queue.level());
        }
        let retry = config.retry_on_failure.clone();
        let timeout = Some(config.timeout.0).filter(|limit| !limit.is_zero());
        let shared = Arc::new(Shared {
            policy: Policy { retry, timeout },
            on_overflow: config.sending_queue.on_overflow,
            queue,
            dead_letter,
            metrics: ExporterMetrics::new(
                registry,
                &name,
                if exporter.protobuf_compression().is_some() {
                    &Sent::BODIES
                } else {
                    &[]
                },
            ),
            stop: watch::Sender::new(false),
            exporter,
        });
        let consumers = match &shared.queue {
            None => Vec::new(),
            Some(_) => (0..config.sending_queue.num_consumers.max(1))
                .map(|_| tokio::spawn(consume(Arc::clone(&shared))))
                .collect(),
        };
        Ok(Arc::new(Self {
            shared,
            consumers: Mutex::new(consumers),
        }))
    }

    pub fn name(&self) -> &str {
        self.shared.exporter.name()
    }

    /// Whether the exporter would take a decoded request of `bytes` now:
    /// false only for a queue in memory that drops what does not fit and
    /// has no room for it. (A queue that blocks, or is on disk, takes it.)
    pub fn has_room_for(&self, bytes: u64) -> bool {
        match (&self.shared.queue, self.shared.on_overflow) {
            (Some(Queue::Memory(waiting)), OnOverflow::DropNewest) => waiting.has_room_for(bytes),
            _ => true,
        }
    }

    /// The forms of an arriving request this exporter and its queue send
    /// or store as they are.
    pub fn wanted(&self) -> Wanted {
        let sending = self
            .shared
            .exporter
            .protobuf_compression()
            .map_or_else(Wanted::default, Wanted::sending);
        match &self.shared.queue {
            Some(Queue::Disk { .. }) => sending.and(Wanted::stored()),
            _ => sending,
        }
    }

    /// Requests held: waiting, or being exported.
    pub fn queued(&self) -> usize {
        self.shared
            .queue
            .as_ref()
            .map_or(0, |queue| queue.level().requests())
    }

    /// Queues `batch` for export. With `on_overflow: drop_newest` a full
    /// queue drops it; with `block` this waits for room. A persistent
    /// queue has the request on disk (fsynced) when this returns `Ok`.
    /// Without a queue, this exports (with retries) before returning.
    /// Refusals are counted and logged here.
    pub async fn offer(&self, batch: Arc<Profiles>) -> Result<(), EnqueueError> {
        self.offer_with(batch, None).await
    }

    /// [`Self::offer`], keeping `hold` (a pipeline's budget for the batch)
    /// until the request is done, when it is queued in memory.
    pub async fn offer_holding(
        &self,
        batch: Arc<Profiles>,
        hold: Arc<Reservation>,
    ) -> Result<(), EnqueueError> {
        self.offer_with(batch, Some(hold)).await
    }

    async fn offer_with(
        &self,
        batch: Arc<Profiles>,
        hold: Option<Arc<Reservation>>,
    ) -> Result<(), EnqueueError> {
        let shared = &self.shared;
        let queued = match &shared.queue {
            None => return shared.export_now(batch).await,
            Some(Queue::Memory(waiting)) => {
                let bytes = batch.memory_size as u64;
                let reserved = shared.reserve(waiting, bytes).await;
                reserved.map(|()| {
                    let item = InMemory {
                        batch: Arc::clone(&batch),
                        _hold: hold,
                    };
                    waiting.push_reserved(item, bytes);
                })
            }
            Some(Queue::Disk { waiting, log }) => shared.store(waiting, log, &batch).await,
        };
        if let Err(error) = queued {
            shared
                .metrics
                .enqueue_failed(batch.profile_count(), batch.sample_count());
            shared.metrics.note_error(&format!(
                "dropped {} the sending queue could not take: {error}",
                profiles_phrase(batch.profile_count())
            ));
            tracing::warn!(
                exporter = self.name(),
                profiles = batch.profile_count(),
                reason = %error,
                "dropped a request the sending queue could not take"
            );
        }
        queued
    }

    /// Stops taking requests and exports what is queued, for up to
    /// `timeout`; then stops the consumers. What is left in memory is
    /// counted as failed (and dead-lettered when configured); a persistent
    /// queue keeps it for the next start. Returns whether everything was
    /// exported.
    pub async fn shutdown(&self, timeout: Duration) -> bool {
        let shared = &self.shared;
        let Some(queue) = &shared.queue else {
            shared.stop.send_replace(true);
            return true;
        };
        queue.close();
        let mut consumers = std::mem::take(
            &mut *self
                .consumers
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let deadline = Instant::now() + timeout;
        let finished = tokio::time::timeout_at(deadline, join_all(&mut consumers))
            .await
            .is_ok();
        if !finished {
            shared.stop.send_replace(true);
            join_all(&mut consumers).await;
        }
        let left = match queue {
            Queue::Memory(waiting) => {
                let leftovers = waiting.drain_waiting();
                let count = leftovers.len();
                for Entry { item, bytes } in leftovers {
                    shared.settle(&item.batch, Delivery::Stopped, false).await;
                    waiting.release(bytes);
                }
                count
            }
            Queue::Disk { log, .. } => {
                let log = Arc::clone(log);
                let left = tokio::task::spawn_blocking(move || log.close())
                    .await
                    .unwrap_or(0);
                if left > 0 {
                    tracing::warn!(
                        exporter = self.name(),
                        requests = left,
                        "requests stay in the persistent queue for the next start"
                    );
                }
                left
            }
        };
        finished && left == 0
    }
}

impl Drop for QueuedExporter {
    /// Without a shutdown: consumers stop; a persistent queue keeps what
    /// it holds, a memory queue loses it (logged).
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
        if let Some(queue) = &self.shared.queue {
            queue.close();
            let held = queue.level().requests();
            if held > 0 && matches!(queue, Queue::Memory(_)) {
                tracing::error!(
                    exporter = self.name(),
                    requests = held,
                    "exporter stopped without shutdown; its queued requests are lost"
                );
            }
        }
    }
}

async fn join_all(consumers: &mut [JoinHandle<()>]) {
    for consumer in consumers {
        let _ = consumer.await;
    }
}
