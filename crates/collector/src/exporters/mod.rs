//! Exporters: where profiles leave.

pub mod debug;
pub mod file;
pub mod helper;
mod http_client;
mod http_reply;
pub mod otlp;
pub mod otlp_http;
pub mod pyroscope;
mod to_pprof;

use std::time::Duration;

use thiserror::Error;

/// Why an export failed; retryable failures may succeed later.
#[derive(Debug, Error)]
pub enum ExportError {
    #[error("{0}")]
    Permanent(String),
    #[error("{reason} (retryable)")]
    Retryable {
        reason: String,
        /// How long the destination asked us to wait (Retry-After,
        /// gRPC RetryInfo), when it said.
        retry_after: Option<Duration>,
    },
}

impl ExportError {
    /// A retryable failure with no advice on when to retry.
    pub fn retryable(reason: impl Into<String>) -> Self {
        Self::Retryable {
            reason: reason.into(),
            retry_after: None,
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable { .. })
    }
}
