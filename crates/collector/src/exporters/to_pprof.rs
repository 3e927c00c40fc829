//! What the pprof exporters (file, Pyroscope) share: a batch converted to
//! pprofs, validated only when the intake did not already validate it.

use profbridge_translate::{OtlpError, OtlpToPprof, PprofConverter, ProfileRef, UnassembledPprof};

use super::{ExportCause, ExportError};
use crate::pipeline::Profiles;

/// The pprofs of `batch`. A request none of whose profiles can become
/// pprof fails permanently; when only some cannot, the rest are converted
/// and `exporter` logs a warning.
pub(crate) fn batch_to_pprofs(
    converter: &mut PprofConverter,
    batch: &Profiles,
    exporter: &str,
) -> Result<OtlpToPprof<UnassembledPprof>, ExportError> {
    let converted = match batch.validation() {
        Some(validation) => converter.convert_validated(batch.request(), validation),
        None => converter
            .convert(batch.request())
            .map_err(|error| ExportError::Permanent(ExportCause::ToPprof(Box::new(error))))?,
    };
    if let Some((profile, error)) = converted.rejected.first() {
        if converted.profiles.is_empty() {
            return Err(ExportError::Permanent(ExportCause::ToPprof(Box::new(
                RejectedProfile {
                    profile: *profile,
                    error: error.clone(),
                },
            ))));
        }
        tracing::warn!(
            rejected = converted.rejected.len(),
            first = %error,
            "{exporter} exporter skipped profiles that cannot become pprof"
        );
    }
    Ok(converted)
}

/// The first profile of a request none of whose profiles can become pprof.
#[derive(Debug, thiserror::Error)]
#[error("{profile:?}: {error}")]
struct RejectedProfile {
    profile: ProfileRef,
    error: OtlpError,
}
