//! What the symbolizer's test binaries share.

#![allow(dead_code)]

use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

/// The OTLP form of a gperftools CPU profile.
pub fn request_of(profile_bytes: &[u8]) -> ExportProfilesServiceRequest {
    let profile = profbridge_pprof::parse_legacy(profile_bytes).expect("a gperftools profile");
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

pub use profbridge_testkit::native::add_build_id;
