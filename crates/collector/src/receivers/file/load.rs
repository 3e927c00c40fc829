//! One file's bytes into one OTLP request, in any format profbridge reads.

use std::io::Read;
use std::path::Path;

use profbridge_pprof::{
    decode_keeping_raw, detect_format, gunzip, is_gzip, parse_folded, parse_legacy, DecodeOptions,
    Format, Profile, DEFAULT_FOLDED_SAMPLE_TYPE,
};
use profbridge_translate::decode_request;
use profbridge_translate::json::request_from_json;
use profbridge_translate::otlp::{ExportProfilesServiceRequest, KeyValue};

use super::config::{InputFormat, ServiceNameFrom};
use crate::receivers::handoff::{profile_request, set_resource_attributes};
use crate::telemetry::ReceiverMetrics;

/// Reads at most `limit` bytes of `path`; more is an error.
pub(super) fn read_limited(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(read_limit).read_to_end(&mut bytes))
        .map_err(|error| format!("cannot read it: {error}"))?;
    if bytes.len() > limit {
        return Err(format!("it is larger than the limit of {limit} bytes"));
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
) -> Result<ExportProfilesServiceRequest, String> {
    let options = DecodeOptions::default();
    let format = match format {
        InputFormat::Auto => {
            detect_format(bytes, &options)
                .map_err(|error| error.to_string())?
                .format
        }
        InputFormat::Pprof => Format::Pprof,
        InputFormat::Legacy => {
            return profile_from(parse_legacy(&unzipped(bytes)?), resource, mtime_ns)
        }
        InputFormat::Folded => Format::Folded,
        InputFormat::Otlp => Format::OtlpProtobuf,
        InputFormat::OtlpJson => Format::OtlpJson,
    };
    let mut request = match format {
        Format::Pprof => {
            let decoded = decode_keeping_raw(bytes, &options).map(|(profile, replaced)| {
                metrics.strings_replaced(replaced.len());
                profile
            });
            return profile_from(decoded, resource, mtime_ns);
        }
        Format::Legacy(_) => {
            return profile_from(parse_legacy(&unzipped(bytes)?), resource, mtime_ns)
        }
        Format::Folded => {
            let text = unzipped(bytes)?;
            return profile_from(
                parse_folded(&text, DEFAULT_FOLDED_SAMPLE_TYPE),
                resource,
                mtime_ns,
            );
        }
        Format::OtlpProtobuf => decode_request(unzipped(bytes)?.as_slice())
            .map_err(|error| format!("OTLP protobuf: {error}"))?,
        Format::OtlpJson => {
            request_from_json(&unzipped(bytes)?).map_err(|error| format!("OTLP JSON: {error}"))?
        }
    };
    set_resource_attributes(&mut request, resource);
    Ok(request)
}

fn profile_from<E: std::fmt::Display>(
    parsed: Result<Profile, E>,
    resource: &[KeyValue],
    mtime_ns: i64,
) -> Result<ExportProfilesServiceRequest, String> {
    let mut profile = parsed.map_err(|error| error.to_string())?;
    if profile.time_nanos == 0 {
        profile.time_nanos = mtime_ns;
    }
    profile_request(&profile, resource)
}

/// The bytes inside gzip, if they are gzipped.
fn unzipped(bytes: &[u8]) -> Result<Vec<u8>, String> {
    if is_gzip(bytes) {
        gunzip(bytes, &DecodeOptions::default()).map_err(|error| error.to_string())
    } else {
        Ok(bytes.to_vec())
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
            .unwrap_or_default();
        assert!(error.contains("unrecognized format"), "{error}");
    }
}
