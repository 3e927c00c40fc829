//! gRPC statuses as export errors, per the OTLP/gRPC specification's
//! "Failures" section.

use tonic::{Code, Status};

use crate::exporters::{ExportCause, ExportError};
use crate::protocol::retry_info;
use crate::shared::root_cause::with_root_cause;

/// Retryable: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
/// UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED when the server sent
/// RetryInfo (it can recover). Everything else is permanent.
pub(super) fn export_error(status: Status, endpoint: &str) -> ExportError {
    let retry_after = retry_info::retry_delay(status.details());
    let retryable = match status.code() {
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::Unavailable
        | Code::DataLoss => true,
        Code::ResourceExhausted => retry_after.is_some(),
        _ => false,
    };
    let cause = ExportCause::ErrorReply(Box::new(StatusError {
        endpoint: endpoint.to_owned(),
        status,
    }));
    if retryable {
        ExportError::Retryable { cause, retry_after }
    } else {
        ExportError::Permanent(cause)
    }
}

/// A call that ended with a status other than OK.
#[derive(Debug)]
struct StatusError {
    endpoint: String,
    status: Status,
}

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = &self.status;
        // Failures on this side (connecting, say) keep their cause as source.
        f.write_str(&with_root_cause(
            format!(
                "{}: {:?}: {}",
                self.endpoint,
                status.code(),
                status.message()
            ),
            status,
        ))
    }
}

impl std::error::Error for StatusError {}
