//! Every corpus file, pprof or legacy, survives pprof → OTLP → pprof.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{canonical_diff, parse_any, DecodeOptions};
use profbridge_testkit::corpus_files;
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, PprofInput, ToOtlpOptions, ToPprofOptions,
};

#[test]
fn every_corpus_file_round_trips_canonically() {
    for file in corpus_files() {
        let (original, _) = parse_any(&file.bytes, &DecodeOptions::default()).unwrap();
        let converted = pprof_to_otlp(
            &[PprofInput {
                profile: &original,
                resource_attributes: &[],
                scope: None,
                original_payload: None,
            }],
            &ToOtlpOptions::default(),
        );
        assert!(
            converted.rejected.is_empty(),
            "{}: {:?}",
            file.name,
            converted.rejected
        );
        let back = otlp_to_pprof(&converted.request, &ToPprofOptions::default()).unwrap();
        assert!(
            back.rejected.is_empty(),
            "{}: {:?}",
            file.name,
            back.rejected
        );
        assert_eq!(back.profiles.len(), 1, "{}", file.name);
        let diff = canonical_diff(&original, &back.profiles[0].profile).unwrap();
        assert_eq!(diff, None, "{}", file.name);
    }
}
