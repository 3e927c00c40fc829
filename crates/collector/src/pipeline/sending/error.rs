//! Why a [`super::QueuedExporter`] could not start, or did not take a
//! request.

use thiserror::Error;

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
