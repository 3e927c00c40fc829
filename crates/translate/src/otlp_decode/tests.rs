use proptest::prelude::*;
use prost::Message;

use profbridge_testkit::otlp_strategies::request_strategy;
use profbridge_testkit::{generated_request, SeededRng, StackShape};

use super::decode_fast;
use crate::otlp::{ExportProfilesServiceRequest, Location, ProfilesDictionary, Stack};

fn exact<T>(values: &Vec<T>) -> bool {
    values.capacity() == values.len()
}

#[test]
fn generated_requests_take_the_fast_path_with_exact_capacities() {
    for shape in [StackShape::CallTree, StackShape::Random] {
        let request = generated_request(shape, 300, 7);
        let decoded = decode_fast(&request.encode_to_vec()).unwrap();
        assert_eq!(decoded, request);

        let dictionary = decoded.dictionary.as_ref().unwrap();
        assert!(exact(&dictionary.mapping_table));
        assert!(exact(&dictionary.location_table));
        assert!(exact(&dictionary.function_table));
        assert!(exact(&dictionary.link_table));
        assert!(exact(&dictionary.string_table));
        assert!(exact(&dictionary.attribute_table));
        assert!(exact(&dictionary.stack_table));
        for location in &dictionary.location_table {
            assert!(exact(&location.lines) && exact(&location.attribute_indices));
        }
        for stack in &dictionary.stack_table {
            assert!(exact(&stack.location_indices));
        }
        let profile = &decoded.resource_profiles[0].scope_profiles[0].profiles[0];
        assert!(exact(&profile.samples));
        for sample in &profile.samples {
            assert!(exact(&sample.values));
            assert!(exact(&sample.timestamps_unix_nano));
            assert!(exact(&sample.attribute_indices));
        }
    }
}

fn request_with(dictionary: ProfilesDictionary) -> ExportProfilesServiceRequest {
    ExportProfilesServiceRequest {
        resource_profiles: Vec::new(),
        dictionary: Some(dictionary),
    }
}

#[test]
fn unknown_fields_and_unpacked_integers_take_the_fast_path() {
    // dictionary { stack_table: [{ location_indices: 1, location_indices: 2 }], 100: 5 }
    let bytes = [
        0x12, 0x09, 0x3a, 0x04, 0x08, 0x01, 0x08, 0x02, 0xa0, 0x06, 0x05,
    ];
    let expected = request_with(ProfilesDictionary {
        stack_table: vec![Stack {
            location_indices: vec![1, 2],
        }],
        ..ProfilesDictionary::default()
    });
    assert_eq!(
        ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap(),
        expected
    );
    assert_eq!(decode_fast(&bytes), Some(expected));
}

#[test]
fn merged_messages_are_left_to_prost() {
    let location = Location {
        mapping_index: 1,
        ..Location::default()
    };
    let dictionary = ProfilesDictionary {
        location_table: vec![location],
        ..ProfilesDictionary::default()
    };
    let once = request_with(dictionary).encode_to_vec();
    let twice = [once.clone(), once.clone()].concat();
    assert!(decode_fast(&once).is_some());
    assert!(decode_fast(&twice).is_none());
    assert_eq!(
        super::decode_request(&twice).unwrap(),
        ExportProfilesServiceRequest::decode(twice.as_slice()).unwrap()
    );
}

/// Mutated bytes are compared with prost in tests/otlp_decode.rs; this
/// makes sure that the fast path decodes many of them (one flipped bit), not
/// just that the fallback agrees with prost.
#[test]
fn many_mutated_requests_take_the_fast_path() {
    let bytes = generated_request(StackShape::CallTree, 20, 5).encode_to_vec();
    let mut rng = SeededRng::new(6);
    let mut fast = 0;
    // The first 200 of the same mutations unless PROFBRIDGE_FULL_SWEEP=1.
    let rounds =
        profbridge_testkit::sweep::Sweep::from_env("many_mutated_requests_take_the_fast_path")
            .count(1000, 200);
    for _ in 0..rounds {
        let mut mutated = bytes.clone();
        mutated[rng.below(bytes.len())] ^= 1 << rng.below(8);
        if let Some(decoded) = decode_fast(&mutated) {
            fast += 1;
            let expected = ExportProfilesServiceRequest::decode(mutated.as_slice()).unwrap();
            assert_eq!(decoded.encode_to_vec(), expected.encode_to_vec());
        }
    }
    assert!(
        fast * 10 > rounds * 3,
        "{fast} of {rounds} took the fast path"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn prost_encoded_requests_take_the_fast_path(request in request_strategy()) {
        let bytes = request.encode_to_vec();
        let decoded = decode_fast(&bytes);
        prop_assert!(decoded.is_some());
        // NaN doubles are never `==`; compare encodings.
        prop_assert_eq!(decoded.map(|d| d.encode_to_vec()), Some(bytes));
    }
}

/// Decoding into a spare request gives what a fresh decode gives, whether
/// the spare has more or fewer entries at each level, or other contents.
#[test]
fn decoding_into_a_spare_request_forgets_what_it_held() {
    let small = generated_request(StackShape::CallTree, 40, 1);
    let large = generated_request(StackShape::Random, 400, 2);
    let mut two_profiles = generated_request(StackShape::CallTree, 60, 3);
    let extra = two_profiles.resource_profiles[0].scope_profiles[0].profiles[0].clone();
    two_profiles.resource_profiles[0].scope_profiles[0]
        .profiles
        .push(extra);
    let requests = [
        small,
        large,
        two_profiles,
        ExportProfilesServiceRequest::default(),
    ];
    for spare in &requests {
        for wanted in &requests {
            let bytes = wanted.encode_to_vec();
            let decoded = super::decode_request_reusing(&bytes, spare.clone()).unwrap();
            assert_eq!(&decoded, wanted);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_spare_decodes_like_none(wanted in request_strategy(), spare in request_strategy()) {
        let bytes = wanted.encode_to_vec();
        let decoded = super::decode_request_reusing(&bytes, spare).unwrap();
        prop_assert_eq!(decoded.encode_to_vec(), bytes);
    }
}

/// What the Collector's pdata and async-profiler write (entry 0 of their
/// tables as `12 00` values and zero-filled ids, fields in descending
/// order, padded length prefixes, unpacked sample integers) is read by the
/// fast path itself, into prost's value, fresh or into a spare request.
#[test]
fn producers_encodings_take_the_fast_path_and_equal_prost() {
    use profbridge_testkit::{
        async_profiler_otlp, async_profiler_recording, ebpf_profiler_request, pdata_encode,
    };
    let spare = generated_request(StackShape::Random, 50, 3);
    for bytes in [
        pdata_encode(&ebpf_profiler_request(30, 5)),
        async_profiler_otlp(&async_profiler_recording()),
    ] {
        let prost = ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(decode_fast(&bytes), Some(prost.clone()));
        let reused = super::decode_request_reusing(&bytes, spare.clone()).unwrap();
        assert_eq!(reused, prost);
    }
}
