//! The consumer tasks that drain a sending queue, exporting with retries.

use std::sync::Arc;

use tokio::sync::watch;

use super::bounded::{Bounded, Entry};
use super::persistent::{record, RecordRef, SegmentLog};
use super::queue::Queue;
use super::retry::{deliver, stopped};
use super::shared::Shared;

/// A consumer: takes requests until the queue is closed and empty, or
/// shutdown says stop.
pub(super) async fn consume(shared: Arc<Shared>) {
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
        let read = tokio::task::spawn_blocking(move || reading.read(at).and_then(record::decode))
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
