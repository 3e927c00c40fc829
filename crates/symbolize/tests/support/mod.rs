//! What the symbolizer's test binaries share.

#![allow(dead_code)]

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

/// The OTLP form of a profile: gperftools' CPU profiles, Go's pprof.
pub fn request_of(profile_bytes: &[u8]) -> ExportProfilesServiceRequest {
    let (profile, _) =
        profbridge_pprof::parse_any(profile_bytes, &profbridge_pprof::DecodeOptions::default())
            .expect("a profile");
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert!(converted.rejected.is_empty());
    converted.request
}
