//! One file's bytes into one OTLP request, in any format profbridge reads.

use std::io::Read;
use std::path::Path;

use profbridge_pprof::{DecodeOptions, InputKind, DEFAULT_FOLDED_SAMPLE_TYPE};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{jfr_to_otlp, load_any, LoadError, Loaded, ToOtlpOptions};

use super::settings::{InputFormat, ServiceNameFrom};
use crate::receivers::from_pprof::{profile_request, set_resource_attributes};
use crate::telemetry::ReceiverMetrics;

/// Why a file was not delivered.
#[derive(Debug, thiserror::Error)]
pub(super) enum FileError {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("it is larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("OTLP protobuf: {0}")]
    OtlpProtobuf(LoadError),
    #[error("OTLP JSON: {0}")]
    OtlpJson(LoadError),
    #[error(transparent)]
    Load(LoadError),
    /// The profile does not translate to OTLP (the translator's text).
    #[error("{0}")]
    Translate(String),
}

impl From<LoadError> for FileError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::OtlpProtobuf(_) => Self::OtlpProtobuf(error),
            LoadError::OtlpJson(_) => Self::OtlpJson(error),
            error => Self::Load(error),
        }
    }
}

/// Reads at most `limit` bytes of `path`; more is an error.
pub(super) fn read_limited(path: &Path, limit: usize) -> Result<Vec<u8>, FileError> {
    let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(read_limit).read_to_end(&mut bytes))
        .map_err(FileError::Read)?;
    if bytes.len() > limit {
        return Err(FileError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The request a file holds, with `resource` set on every resource; a
/// profile without a time gets `mtime_ns`.
pub(super) fn file_request(
    bytes: &[u8],
    format: InputFormat,
    resource: &[KeyValue],
    mtime_ns: i64,
    metrics: &ReceiverMetrics,
) -> Result<ExportProfilesServiceRequest, FileError> {
    let hint = match format {
        InputFormat::Auto => None,
        InputFormat::Pprof => Some(InputKind::Pprof),
        InputFormat::Legacy => Some(InputKind::Legacy),
        InputFormat::Folded => Some(InputKind::Folded),
        InputFormat::Otlp => Some(InputKind::OtlpProtobuf),
        InputFormat::OtlpJson => Some(InputKind::OtlpJson),
        InputFormat::Jfr => Some(InputKind::Jfr),
    };
    let loaded = load_any(
        bytes,
        hint,
        DEFAULT_FOLDED_SAMPLE_TYPE,
        &DecodeOptions::default(),
    )?;
    match loaded {
        Loaded::Pprof(mut profile, replaced) => {
            metrics.strings_replaced(replaced.len());
            if profile.time_nanos == 0 {
                profile.time_nanos = mtime_ns;
            }
            profile_request(&profile, resource).map_err(|e| FileError::Translate(e.to_string()))
        }
        Loaded::Otlp { mut request, .. } => {
            set_resource_attributes(&mut request, resource);
            Ok(request)
        }
        Loaded::Jfr(converted) => {
            let converted = jfr_to_otlp(&converted, resource, None, &ToOtlpOptions::default());
            match converted.rejected.into_iter().next() {
                Some((_, error)) => Err(FileError::Translate(error.to_string())),
                None => Ok(converted.request),
            }
        }
    }
}

/// `service.name` as `service_name_from` derives it from the file's path.
pub(super) fn service_name(path: &Path, from: ServiceNameFrom) -> Option<String> {
    let name = match from {
        ServiceNameFrom::None => return None,
        ServiceNameFrom::Filename => path.file_name()?.to_str()?.split('.').next()?,
        ServiceNameFrom::ParentDir => path.parent()?.file_name()?.to_str()?,
    };
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_come_from_the_path() {
        let path = Path::new("/profiles/checkout/api.cpu.pb.gz");
        assert_eq!(service_name(path, ServiceNameFrom::None), None);
        assert_eq!(
            service_name(path, ServiceNameFrom::Filename).as_deref(),
            Some("api")
        );
        assert_eq!(
            service_name(path, ServiceNameFrom::ParentDir).as_deref(),
            Some("checkout")
        );
    }

    #[test]
    fn folded_text_becomes_a_request_and_garbage_an_error() {
        let metrics = ReceiverMetrics::default();
        let request = file_request(b"main;work 3\n", InputFormat::Auto, &[], 5, &metrics);
        assert!(request.is_ok_and(|r| r.resource_profiles.len() == 1));
        let error = file_request(b"\x00\x01garbage", InputFormat::Auto, &[], 5, &metrics)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("unrecognized format"), "{error}");
    }
}
