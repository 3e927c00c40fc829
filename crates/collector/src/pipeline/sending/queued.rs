//! [`QueuedExporter`]: one exporter behind its sending queue (in memory or
//! persistent) and the consumer tasks that export with retries.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use thiserror::Error;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::bounded::{Bounded, Entry, NoRoom};
use super::config::{ExporterHelperConfig, OnOverflow, QueueStorage};
use super::dead_letter::{file_stem, DeadLetter};
use super::persistent::{record, RecordRef, SegmentLog};
use super::retry::{deliver, stopped, Delivery, Policy};
use crate::pipeline::{Exporter, Profiles, Reservation};
use crate::telemetry::instruments::{register_exporter_queue, QueueLevel};
use crate::telemetry::recent_errors::profiles_phrase;
use crate::telemetry::{ExporterMetrics, Registry};

/// Why an exporter could not start. The text includes the I/O error, which
/// is therefore not a `source()` (docs/architecture.md).
#[derive(Debug, Error)]
pub enum HelperError {
    #[error("dead_letter is empty; name a directory")]
    EmptyDeadLetter,
    #[error("dead_letter {path}: {error}")]
    DeadLetter { path: String, error: std::io::Error },
    #[error("sending_queue.storage {path}: {error}")]
    Storage { path: String, error: std::io::Error },
}

/// Why `offer` did not take a request; it has been counted and logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EnqueueError {
    #[error("the sending queue is full")]
    Full,
    #[error("the exporter is stopping")]
    Closed,
    #[error("the persistent queue could not store it")]
    Storage,
    /// The queue is off, and exporting failed.
    #[error("the export failed")]
    NotSent,
}

/// An exporter with its sending queue and consumers; shared by every
/// pipeline that uses the exporter.
pub struct QueuedExporter {
    shared: Arc<Shared>,
    consumers: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    exporter: Arc<Exporter>,
    policy: Policy,
    on_overflow: OnOverflow,
    queue: Option<Queue>,
    dead_letter: Option<Arc<DeadLetter>>,
    metrics: ExporterMetrics,
    stop: watch::Sender<bool>,
}

enum Queue {
    Memory(Arc<Bounded<InMemory>>),
    Disk {
        waiting: Arc<Bounded<RecordRef>>,
        log: Arc<SegmentLog>,
    },
}

/// A request queued in memory, holding its pipeline's budget until done.
struct InMemory {
    batch: Arc<Profiles>,
    _hold: Option<Arc<Reservation>>,
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
            metrics: ExporterMetrics::new(registry, &name),
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

async fn open_queue(
    name: &str,
    config: &ExporterHelperConfig,
) -> Result<Option<Queue>, HelperError> {
    let sending = &config.sending_queue;
    if !sending.enabled {
        return Ok(None);
    }
    let (max_requests, max_bytes) = (sending.queue_size, sending.max_bytes.0);
    let Some(storage) = &sending.storage else {
        return Ok(Some(Queue::Memory(Arc::new(Bounded::new(
            max_requests,
            max_bytes,
        )))));
    };
    let (shown, dir) = match storage {
        QueueStorage::Directory(parent) => {
            (parent.clone(), Path::new(parent).join(file_stem(name)))
        }
        QueueStorage::Exact(dir) => (dir.display().to_string(), dir.clone()),
        QueueStorage::Extension(id) => {
            return Err(HelperError::Storage {
                path: id.to_string(),
                error: std::io::Error::other("the storage extension is not running"),
            })
        }
    };
    let storage_error = |error| HelperError::Storage {
        path: shown.clone(),
        error,
    };
    let opened = tokio::task::spawn_blocking(move || SegmentLog::open(&dir))
        .await
        .map_err(|error| storage_error(std::io::Error::other(error)))?;
    let (log, pending) = opened.map_err(storage_error)?;
    let waiting = Arc::new(Bounded::new(max_requests, max_bytes));
    if !pending.is_empty() {
        tracing::info!(
            exporter = name,
            requests = pending.len(),
            queue = %log.dir().display(),
            "exporting the requests the persistent queue kept"
        );
    }
    for at in pending {
        waiting.push_unbounded(at, at.stored);
    }
    Ok(Some(Queue::Disk {
        waiting,
        log: Arc::new(log),
    }))
}

impl Queue {
    fn close(&self) {
        match self {
            Self::Memory(waiting) => waiting.close(),
            Self::Disk { waiting, .. } => waiting.close(),
        }
    }

    fn level(&self) -> Arc<dyn QueueLevel> {
        match self {
            Self::Memory(waiting) => Arc::clone(waiting) as Arc<dyn QueueLevel>,
            Self::Disk { waiting, .. } => Arc::clone(waiting) as Arc<dyn QueueLevel>,
        }
    }
}

impl Shared {
    fn name(&self) -> &str {
        self.exporter.name()
    }

    async fn reserve<T>(&self, waiting: &Bounded<T>, bytes: u64) -> Result<(), EnqueueError> {
        let reserved = match self.on_overflow {
            OnOverflow::DropNewest => waiting.try_reserve(bytes),
            OnOverflow::Block => waiting.reserve(bytes).await,
        };
        reserved.map_err(|no_room| match no_room {
            NoRoom::Full => EnqueueError::Full,
            NoRoom::Closed => EnqueueError::Closed,
        })
    }

    /// Writes the request to the persistent queue (fsynced) and queues it.
    async fn store(
        &self,
        waiting: &Bounded<RecordRef>,
        log: &Arc<SegmentLog>,
        batch: &Arc<Profiles>,
    ) -> Result<(), EnqueueError> {
        let encoding = Arc::clone(batch);
        let record = tokio::task::spawn_blocking(move || record::encode(&encoding))
            .await
            .map_err(std::io::Error::other)
            .and_then(|encoded| encoded);
        let record = record.map_err(|error| self.storage_failed(log, &error))?;
        let bytes = record.len() as u64;
        self.reserve(waiting, bytes).await?;
        let appending = Arc::clone(log);
        let appended = tokio::task::spawn_blocking(move || appending.append(&record))
            .await
            .map_err(std::io::Error::other)
            .and_then(|appended| appended);
        match appended {
            Ok(at) => {
                waiting.push_reserved(at, bytes);
                Ok(())
            }
            Err(error) => {
                waiting.release(bytes);
                Err(self.storage_failed(log, &error))
            }
        }
    }

    fn storage_failed(&self, log: &SegmentLog, error: &std::io::Error) -> EnqueueError {
        self.metrics.queue_storage_failed();
        self.metrics.note_error(&format!(
            "persistent queue {}: cannot store a request: {error}",
            log.dir().display()
        ));
        tracing::error!(
            exporter = self.name(),
            queue = %log.dir().display(),
            %error,
            "persistent queue: cannot store a request"
        );
        EnqueueError::Storage
    }

    /// Without a queue: export now, with retries.
    async fn export_now(self: &Arc<Self>, batch: Arc<Profiles>) -> Result<(), EnqueueError> {
        let mut stop = self.stop.subscribe();
        let delivery = deliver(&self.exporter, &batch, &self.policy, &mut stop).await;
        let sent = matches!(delivery, Delivery::Sent);
        self.settle(&batch, delivery, false).await;
        if sent {
            Ok(())
        } else {
            Err(EnqueueError::NotSent)
        }
    }

    /// Counts and logs how a delivery ended, writing failures to the
    /// dead-letter directory. Returns whether the request is finished
    /// with; with `keep` (a persistent queue) a request stopped by
    /// shutdown, or that failed and could not be dead-lettered, is not,
    /// and stays queued.
    async fn settle(
        self: &Arc<Self>,
        batch: &Arc<Profiles>,
        delivery: Delivery,
        keep: bool,
    ) -> bool {
        let profiles = batch.profile_count();
        let samples = batch.sample_count();
        let reason = match delivery {
            Delivery::Sent => {
                self.metrics.exported(profiles, samples, true);
                return true;
            }
            Delivery::Stopped if keep => return false,
            Delivery::Stopped => "shutdown stopped its export".to_owned(),
            Delivery::Failed { error, attempts } if error.is_retryable() => {
                format!("{error}; gave up after {attempts} attempts")
            }
            Delivery::Failed { error, .. } => error.to_string(),
        };
        self.metrics.exported(profiles, samples, false);
        self.metrics.note_error(&format!(
            "export of {} failed: {reason}",
            profiles_phrase(profiles)
        ));
        let Some(dead_letter) = &self.dead_letter else {
            tracing::error!(exporter = self.name(), profiles, %reason, "export failed; request dropped");
            return true;
        };
        self.save_dead_letter(dead_letter, batch, &reason, keep)
            .await
    }

    /// Writes a failed request to the dead-letter directory, trying again
    /// with backoff while that fails (a full disk), until it is written or
    /// the exporter stops. Then a persistent queue (`keep`) keeps the
    /// request for the next start, and a memory queue loses it (logged).
    /// Returns whether the request is finished with.
    async fn save_dead_letter(
        &self,
        dead_letter: &Arc<DeadLetter>,
        batch: &Arc<Profiles>,
        reason: &str,
        keep: bool,
    ) -> bool {
        let profiles = batch.profile_count();
        let mut stop = self.stop.subscribe();
        let mut pause = DEAD_LETTER_FIRST_PAUSE;
        loop {
            let (writer, request) = (Arc::clone(dead_letter), Arc::clone(batch));
            let written = tokio::task::spawn_blocking(move || writer.write(&request))
                .await
                .map_err(std::io::Error::other)
                .and_then(|written| written);
            let error = match written {
                Ok(path) => {
                    tracing::error!(
                        exporter = self.name(),
                        profiles,
                        %reason,
                        dead_letter = %path.display(),
                        "export failed; request saved to the dead-letter directory"
                    );
                    return true;
                }
                Err(error) => error,
            };
            self.metrics.dead_letter_write_failed();
            self.metrics.note_error(&format!(
                "cannot write a failed request to the dead-letter directory {}: {error}",
                dead_letter.dir().display()
            ));
            let stopping = *stop.borrow();
            tracing::error!(
                exporter = self.name(),
                profiles,
                %reason,
                dead_letter = %dead_letter.dir().display(),
                %error,
                retry_in = ?(!stopping).then_some(pause),
                kept_in_queue = keep,
                "export failed, and the request could not be saved to the dead-letter directory"
            );
            if stopping {
                return !keep;
            }
            tokio::select! {
                biased;
                () = stopped(&mut stop) => return !keep,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(DEAD_LETTER_MAX_PAUSE);
        }
    }
}

/// How long to wait before writing a dead letter again, at first and at
/// most.
const DEAD_LETTER_FIRST_PAUSE: Duration = Duration::from_secs(1);
const DEAD_LETTER_MAX_PAUSE: Duration = Duration::from_secs(30);

/// A consumer: takes requests until the queue is closed and empty, or
/// shutdown says stop.
async fn consume(shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    match &shared.queue {
        Some(Queue::Memory(waiting)) => {
            while let Some(Entry { item, bytes }) = next(waiting, &mut stop).await {
                let delivery =
                    deliver(&shared.exporter, &item.batch, &shared.policy, &mut stop).await;
                shared.settle(&item.batch, delivery, false).await;
                waiting.release(bytes);
            }
        }
        Some(Queue::Disk { waiting, log }) => {
            while let Some(Entry { item: at, bytes }) = next(waiting, &mut stop).await {
                // A request not done with (shutdown stopped it) stays on
                // disk for the next start; either way it no longer waits.
                if shared.export_stored(log, at, &mut stop).await {
                    acknowledge(&shared, log, at).await;
                }
                waiting.release(bytes);
            }
        }
        None => {}
    }
}

async fn next<T>(waiting: &Bounded<T>, stop: &mut watch::Receiver<bool>) -> Option<Entry<T>> {
    tokio::select! {
        biased;
        () = stopped(stop) => None,
        entry = waiting.take() => entry,
    }
}

impl Shared {
    /// Reads a stored request and exports it; returns whether it is done
    /// with. A record that no longer checks out is dropped (logged).
    async fn export_stored(
        self: &Arc<Self>,
        log: &Arc<SegmentLog>,
        at: RecordRef,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let reading = Arc::clone(log);
        let read = tokio::task::spawn_blocking(move || {
            reading
                .read(at)
                .and_then(|payload| record::decode(&payload))
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|read| read);
        let batch = match read {
            Ok(batch) => Arc::new(batch),
            Err(error) => {
                let unreadable = error.kind() == std::io::ErrorKind::InvalidData;
                tracing::error!(
                    exporter = self.name(),
                    queue = %log.dir().display(),
                    segment = at.segment,
                    offset = at.offset,
                    %error,
                    "persistent queue: cannot read a stored request{}",
                    if unreadable { "; dropping it" } else { "; it stays for the next start" }
                );
                return unreadable;
            }
        };
        let delivery = deliver(&self.exporter, &batch, &self.policy, stop).await;
        self.settle(&batch, delivery, true).await
    }
}

async fn acknowledge(shared: &Shared, log: &Arc<SegmentLog>, at: RecordRef) {
    let acking = Arc::clone(log);
    let acked = tokio::task::spawn_blocking(move || acking.ack(at))
        .await
        .map_err(std::io::Error::other)
        .and_then(|acked| acked);
    if let Err(error) = acked {
        tracing::warn!(
            exporter = shared.name(),
            queue = %log.dir().display(),
            %error,
            "persistent queue: cannot mark a request done; it will be exported again after a restart"
        );
    }
}
