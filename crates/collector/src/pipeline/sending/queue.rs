//! The sending queue of one exporter: in memory, or persistent (on disk,
//! replayed at start).

use std::path::Path;
use std::sync::Arc;

use super::bounded::Bounded;
use super::config::{ExporterHelperConfig, QueueStorage};
use super::dead_letter::file_stem;
use super::error::HelperError;
use super::persistent::{RecordRef, SegmentLog};
use crate::pipeline::{Profiles, Reservation};
use crate::telemetry::instruments::QueueLevel;

pub(super) enum Queue {
    Memory(Arc<Bounded<InMemory>>),
    Disk {
        waiting: Arc<Bounded<RecordRef>>,
        log: Arc<SegmentLog>,
    },
}

/// A request queued in memory, holding its pipeline's budget until done.
pub(super) struct InMemory {
    pub batch: Arc<Profiles>,
    pub _hold: Option<Arc<Reservation>>,
}

pub(super) async fn open_queue(
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
    pub(super) fn close(&self) {
        match self {
            Self::Memory(waiting) => waiting.close(),
            Self::Disk { waiting, .. } => waiting.close(),
        }
    }

    pub(super) fn level(&self) -> Arc<dyn QueueLevel> {
        match self {
            Self::Memory(waiting) => Arc::clone(waiting) as Arc<dyn QueueLevel>,
            Self::Disk { waiting, .. } => Arc::clone(waiting) as Arc<dyn QueueLevel>,
        }
    }
}
