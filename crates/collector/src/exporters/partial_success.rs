//! What the OTLP exporters do with a reply that rejects some profiles.

use profbridge_translate::otlp::ExportProfilesPartialSuccess;

/// Logs profiles the destination rejected; they are not sent again.
pub(crate) fn warn_partial_success(endpoint: &str, partial: &ExportProfilesPartialSuccess) {
    if partial.rejected_profiles > 0 {
        tracing::warn!(
            endpoint,
            rejected_profiles = partial.rejected_profiles,
            message = %partial.error_message,
            "the destination rejected some profiles"
        );
    }
}
