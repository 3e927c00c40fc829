//! Why an export failed: whether to retry, and the typed cause, whose
//! text is what operators read (logs, zpages' recent errors, dead-letter
//! notes).

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;
use tokio::task::JoinError;

/// An error of any type, kept as a cause.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why an export failed; retryable failures may succeed later.
#[derive(Debug, Error)]
pub enum ExportError {
    #[error("{0}")]
    Permanent(ExportCause),
    /// The rest of the batch was sent; `unsent` never can be.
    #[error("{cause}")]
    PartlyUndeliverable {
        unsent: std::sync::Arc<super::Profiles>,
        cause: ExportCause,
    },
    #[error("{cause} (retryable)")]
    Retryable {
        cause: ExportCause,
        /// How long the destination asked us to wait (Retry-After,
        /// gRPC RetryInfo), when it said.
        retry_after: Option<Duration>,
    },
}

impl ExportError {
    /// A retryable failure with no advice on when to retry.
    pub fn retryable(cause: ExportCause) -> Self {
        Self::Retryable {
            cause,
            retry_after: None,
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable { .. })
    }

    pub fn cause(&self) -> &ExportCause {
        match self {
            Self::Permanent(cause)
            | Self::PartlyUndeliverable { cause, .. }
            | Self::Retryable { cause, .. } => cause,
        }
    }
}

/// What made an export fail. Each variant's text shows the error it
/// holds, so none gives it as `source()` (docs/architecture.md).
#[derive(Debug, Error)]
pub enum ExportCause {
    /// The exporter cannot work with its options, or with what they give
    /// for a request (a file path outside its directory).
    #[error("{exporter} exporter: {error}")]
    Exporter {
        exporter: &'static str,
        error: BoxError,
    },
    /// The batch cannot become pprof.
    #[error("cannot convert to pprof: {0}")]
    ToPprof(BoxError),
    /// The batch cannot be encoded as the destination takes it.
    #[error("cannot encode the batch: {0}")]
    Encode(BoxError),
    /// A file operation failed.
    #[error("{action} {}: {error}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    /// The destination did not answer within the exporter's timeout.
    #[error("{endpoint}: no reply within {limit:?}")]
    NoReply { endpoint: String, limit: Duration },
    /// The destination could not be connected to.
    #[error("{endpoint}: not reachable: {error}")]
    Unreachable { endpoint: String, error: BoxError },
    /// The request could not be made, or broke off.
    #[error("{endpoint}: {error}")]
    Request { endpoint: String, error: BoxError },
    /// An error reply: an HTTP status other than success, a Connect
    /// error, or a gRPC status (which failures on this side come as too).
    #[error("{0}")]
    ErrorReply(BoxError),
    /// One attempt ran out of the exporter helper's `timeout`.
    #[error("timed out after {limit:?}")]
    TimedOut { limit: Duration },
    /// The task doing the work panicked, or was cancelled.
    #[error("{task} failed: {error}")]
    TaskFailed {
        task: &'static str,
        error: JoinError,
    },
    /// The task doing the work was cancelled, as when the runtime stops.
    #[error("{task} stopped: {error}")]
    TaskStopped {
        task: &'static str,
        error: JoinError,
    },
    /// Any other error: exporters outside this crate, tests.
    #[error("{0}")]
    Other(BoxError),
}

impl ExportCause {
    /// The `exporter`'s own `error`.
    pub fn exporter(
        exporter: &'static str,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Exporter {
            exporter,
            error: Box::new(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Error)]
    #[error("the inner error")]
    struct Inner;

    #[test]
    fn the_text_is_what_operators_read() {
        let cases = [
            (
                ExportCause::exporter("file", Inner),
                "file exporter: the inner error",
            ),
            (
                ExportCause::ToPprof(Box::new(Inner)),
                "cannot convert to pprof: the inner error",
            ),
            (
                ExportCause::Encode(Box::new(Inner)),
                "cannot encode the batch: the inner error",
            ),
            (
                ExportCause::Io {
                    action: "writing",
                    path: PathBuf::from("/data/a.pb"),
                    error: std::io::Error::other("disk full"),
                },
                "writing /data/a.pb: disk full",
            ),
            (
                ExportCause::NoReply {
                    endpoint: "http://p:4040/".to_owned(),
                    limit: Duration::from_secs(5),
                },
                "http://p:4040/: no reply within 5s",
            ),
            (
                ExportCause::Unreachable {
                    endpoint: "p:4317".to_owned(),
                    error: Box::new(Inner),
                },
                "p:4317: not reachable: the inner error",
            ),
            (
                ExportCause::Request {
                    endpoint: "http://p/".to_owned(),
                    error: Box::new(Inner),
                },
                "http://p/: the inner error",
            ),
            (ExportCause::ErrorReply(Box::new(Inner)), "the inner error"),
            (
                ExportCause::TimedOut {
                    limit: Duration::from_millis(1500),
                },
                "timed out after 1.5s",
            ),
            (ExportCause::Other(Box::new(Inner)), "the inner error"),
        ];
        for (cause, text) in cases {
            assert_eq!(cause.to_string(), text);
        }
    }

    #[test]
    fn retryable_errors_say_so_and_keep_their_cause() {
        let error = ExportError::Retryable {
            cause: ExportCause::TimedOut {
                limit: Duration::from_secs(1),
            },
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(error.to_string(), "timed out after 1s (retryable)");
        assert!(error.is_retryable());
        assert!(matches!(error.cause(), ExportCause::TimedOut { .. }));
        let error = ExportError::Permanent(ExportCause::Other(Box::new(Inner)));
        assert_eq!(error.to_string(), "the inner error");
        assert!(!error.is_retryable());
        assert!(std::error::Error::source(&error).is_none());
    }
}
