//! gRPC statuses as export errors, per the OTLP/gRPC specification's
//! "Failures" section.

use tonic::{Code, Status};

use super::with_root_cause;
use crate::exporters::ExportError;
use crate::protocol::retry_info;

/// Retryable: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
/// UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED when the server sent
/// RetryInfo (it can recover). Everything else is permanent.
pub(super) fn export_error(status: &Status, endpoint: &str) -> ExportError {
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
    // Failures on this side (connecting, say) keep their cause as source.
    let reason = with_root_cause(
        format!("{endpoint}: {:?}: {}", status.code(), status.message()),
        status,
    );
    if retryable {
        ExportError::Retryable {
            reason,
            retry_after,
        }
    } else {
        ExportError::Permanent(reason)
    }
}
