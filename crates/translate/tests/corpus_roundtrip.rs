//! Every corpus file, pprof or legacy, survives pprof → OTLP → pprof.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use prost::Message;

use profbridge_pprof::{canonical_diff, parse_any, DecodeOptions, Profile};
use profbridge_testkit::{corpus_files, generated_request, StackShape};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{
    otlp_to_pprof, otlp_to_unassembled_pprof, pprof_to_otlp, PprofConverter, PprofInput,
    PprofToOtlp, ToOtlpOptions, ToPprofOptions,
};

/// One pprof as an OTLP request, with no resource or scope of its own.
fn to_otlp(profile: &Profile) -> PprofToOtlp {
    pprof_to_otlp(
        &[PprofInput {
            profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    )
}

#[test]
fn every_corpus_file_round_trips_canonically() {
    for file in corpus_files() {
        let (original, _) = parse_any(&file.bytes, &DecodeOptions::default()).unwrap();
        let converted = to_otlp(&original);
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

/// What the exporters write without assembling samples is byte for byte
/// the encoding of the assembled pprof, also into a buffer that held an
/// earlier profile, and from a converter that converted earlier requests.
fn assert_unassembled_encoding_matches(
    name: &str,
    request: &ExportProfilesServiceRequest,
    reused: &mut Vec<u8>,
    converter: &mut PprofConverter,
) {
    let options = ToPprofOptions::default();
    let assembled = otlp_to_pprof(request, &options).unwrap();
    let unassembled = otlp_to_unassembled_pprof(request, &options).unwrap();
    assert_eq!(
        assembled.profiles.len(),
        unassembled.profiles.len(),
        "{name}"
    );
    for (slow, fast) in assembled.profiles.iter().zip(unassembled.profiles) {
        let expected = slow.profile.encode_to_vec();
        assert!(
            fast.profile.encode() == expected,
            "{name}: the unassembled pprof encodes differently"
        );
        fast.profile.encode_into(reused);
        assert!(
            *reused == expected,
            "{name}: encoding into a used buffer differs"
        );
    }
    let converted = converter.convert(request).unwrap();
    for (slow, fast) in assembled.profiles.iter().zip(&converted.profiles) {
        converter.encode_into(&fast.profile, reused);
        assert!(
            *reused == slow.profile.encode_to_vec(),
            "{name}: a reused converter's pprof encodes differently"
        );
    }
    converter.recycle(converted);
}

#[test]
fn corpus_and_generated_pprofs_encode_the_same_unassembled() {
    let mut reused = Vec::new();
    let mut converter = PprofConverter::new(ToPprofOptions::default());
    for file in corpus_files() {
        let (original, _) = parse_any(&file.bytes, &DecodeOptions::default()).unwrap();
        let converted = to_otlp(&original);
        assert_unassembled_encoding_matches(
            &file.name,
            &converted.request,
            &mut reused,
            &mut converter,
        );
    }
    for shape in [StackShape::CallTree, StackShape::Random] {
        let request = generated_request(shape, 300, 7);
        assert_unassembled_encoding_matches(
            &format!("{shape:?}"),
            &request,
            &mut reused,
            &mut converter,
        );
    }
}
