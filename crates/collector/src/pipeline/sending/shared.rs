//! What an exporter's handle and its consumers share, and the way in:
//! reserving room, storing on disk, or exporting at once without a queue.

use std::sync::Arc;

use tokio::sync::watch;

use super::bounded::{Bounded, NoRoom};
use super::config::OnOverflow;
use super::dead_letter::DeadLetter;
use super::error::EnqueueError;
use super::persistent::{record, RecordRef, SegmentLog};
use super::queue::Queue;
use super::retry::{deliver, Delivery, Policy};
use crate::pipeline::{Exporter, Profiles};
use crate::telemetry::ExporterMetrics;

pub(super) struct Shared {
    pub exporter: Arc<Exporter>,
    pub policy: Policy,
    pub on_overflow: OnOverflow,
    pub queue: Option<Queue>,
    pub dead_letter: Option<Arc<DeadLetter>>,
    pub metrics: ExporterMetrics,
    pub stop: watch::Sender<bool>,
}

impl Shared {
    pub(super) fn name(&self) -> &str {
        self.exporter.name()
    }

    pub(super) async fn reserve<T>(
        &self,
        waiting: &Bounded<T>,
        bytes: u64,
    ) -> Result<(), EnqueueError> {
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
    pub(super) async fn store(
        &self,
        waiting: &Bounded<RecordRef>,
        log: &Arc<SegmentLog>,
        batch: &Arc<Profiles>,
    ) -> Result<(), EnqueueError> {
        let encoding = Arc::clone(batch);
        let sends = self.exporter.protobuf_compression();
        let record = tokio::task::spawn_blocking(move || record::encode(&encoding, sends))
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
    pub(super) async fn export_now(
        self: &Arc<Self>,
        batch: Arc<Profiles>,
    ) -> Result<(), EnqueueError> {
        let mut stop = self.stop.subscribe();
        let delivery = deliver(&self.exporter, &batch, &self.policy, &mut stop).await;
        let sent = matches!(delivery, Delivery::Sent(_));
        self.settle(&batch, delivery, false).await;
        if sent {
            Ok(())
        } else {
            Err(EnqueueError::NotSent)
        }
    }
}
