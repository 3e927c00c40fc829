//! Why the collector could not start: which component, and its own error.

use thiserror::Error;

/// A component's own error, whatever its type: typed errors and the
/// `String` reasons of older code alike.
pub type Reason = Box<dyn std::error::Error + Send + Sync>;

/// Each variant prints the error it holds, so none gives it as `source()`
/// (docs/architecture.md); [`StartError::reason`] reaches it.
#[derive(Debug, Error)]
pub enum StartError {
    #[error("exporter {id}: {reason}")]
    Exporter { id: String, reason: Reason },
    #[error("processor {id}: {reason}")]
    Processor { id: String, reason: Reason },
    #[error("telemetry: cannot listen on {address}: {error}")]
    Telemetry {
        address: String,
        error: std::io::Error,
    },
    #[error("receiver {id}: {reason}")]
    Receiver { id: String, reason: Reason },
    #[error("receiver {id}: cannot listen on {endpoint}: {error}")]
    Listen {
        id: String,
        endpoint: String,
        error: std::io::Error,
    },
    #[error("extension {id}: {reason}")]
    Extension { id: String, reason: Reason },
    /// A component the registry handed options of another type.
    #[error("{id}: {reason}")]
    Other { id: String, reason: String },
}

impl StartError {
    pub fn exporter(id: &str, reason: impl Into<Reason>) -> Self {
        Self::Exporter {
            id: id.to_owned(),
            reason: reason.into(),
        }
    }

    pub fn processor(id: &str, reason: impl Into<Reason>) -> Self {
        Self::Processor {
            id: id.to_owned(),
            reason: reason.into(),
        }
    }

    pub fn extension(id: &str, reason: impl Into<Reason>) -> Self {
        Self::Extension {
            id: id.to_owned(),
            reason: reason.into(),
        }
    }

    pub fn receiver(id: &str, reason: impl Into<Reason>) -> Self {
        Self::Receiver {
            id: id.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn other(id: &str, reason: String) -> Self {
        Self::Other {
            id: id.to_owned(),
            reason,
        }
    }

    /// The component's own error, when it gave one.
    pub fn reason(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            Self::Exporter { reason, .. }
            | Self::Processor { reason, .. }
            | Self::Receiver { reason, .. }
            | Self::Extension { reason, .. } => Some(reason.as_ref()),
            Self::Telemetry { error, .. } | Self::Listen { error, .. } => Some(error),
            Self::Other { .. } => None,
        }
    }
}

/// A listening component (an extension) could not bind its endpoint.
#[derive(Debug, Error)]
#[error("cannot listen on {endpoint}: {error}")]
pub struct CannotListen {
    pub endpoint: String,
    pub error: std::io::Error,
}
