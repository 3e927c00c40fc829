//! Exporters: where profiles leave.

pub mod debug;
pub mod file;

use thiserror::Error;

/// Why an export failed; retryable failures may succeed later.
#[derive(Debug, Error)]
pub enum ExportError {
    #[error("{0}")]
    Permanent(String),
    #[error("{0} (retryable)")]
    Retryable(String),
}
