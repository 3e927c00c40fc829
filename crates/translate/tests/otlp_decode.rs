//! `decode_request` against prost's decoder: random requests, mutated and
//! truncated bytes, and valid encodings that prost's encoder never writes
//! (merged messages, unpacked integers, unknown fields, groups, deep nesting).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use profbridge_testkit::otlp_strategies::request_strategy;
use profbridge_testkit::{generated_request, SeededRng, StackShape};
use profbridge_translate::decode_request;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

/// Both decoders give equal requests, or the same error.
fn decodes_like_prost(bytes: &[u8]) -> Result<(), TestCaseError> {
    match (
        decode_request(bytes),
        ExportProfilesServiceRequest::decode(bytes),
    ) {
        (Ok(ours), Ok(prost)) => {
            // NaN doubles are never `==`; their encodings keep their bits.
            prop_assert!(ours == prost || ours.encode_to_vec() == prost.encode_to_vec());
        }
        (Err(ours), Err(prost)) => prop_assert_eq!(ours, prost),
        (ours, prost) => prop_assert!(false, "ours {ours:?}\nprost {prost:?}"),
    }
    Ok(())
}

fn assert_decodes_like_prost(bytes: &[u8]) {
    decodes_like_prost(bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_requests_decode_like_prost(request in request_strategy()) {
        let bytes = request.encode_to_vec();
        decodes_like_prost(&bytes)?;
        // Also checks the round trip itself, as prost's decoder may not.
        let decoded = decode_request(&bytes).unwrap();
        prop_assert_eq!(decoded.encode_to_vec(), bytes);
    }

    #[test]
    fn mutated_requests_decode_like_prost(
        request in request_strategy(),
        seed in any::<u64>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = request.encode_to_vec();
        decodes_like_prost(&SeededRng::new(seed).mutate(&bytes))?;
        decodes_like_prost(&bytes[..cut.index(bytes.len() + 1)])?;
    }
}

proptest! {
    // Each generated request has thousands of functions: few cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn generated_requests_decode_like_prost(
        seed in any::<u64>(),
        stacks in 1..300usize,
        random_shape in any::<bool>(),
    ) {
        let shape = if random_shape { StackShape::Random } else { StackShape::CallTree };
        let request = generated_request(shape, stacks, seed);
        let bytes = request.encode_to_vec();
        prop_assert_eq!(decode_request(&bytes).unwrap(), request);
        prop_assert_eq!(
            decode_request(&bytes).unwrap(),
            ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap()
        );
    }
}

#[test]
fn mutated_generated_requests_decode_like_prost() {
    let bytes = generated_request(StackShape::CallTree, 20, 3).encode_to_vec();
    let mut rng = SeededRng::new(4);
    for _ in 0..2000 {
        assert_decodes_like_prost(&rng.mutate(&bytes));
    }
    for cut in (0..bytes.len()).step_by(7) {
        assert_decodes_like_prost(&bytes[..cut]);
    }
}

// Hand-written encodings. Field numbers are the schema's
// (opentelemetry/proto/profiles/v1development/profiles.proto).

fn key(number: u32, wire_type: WireType) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(number, wire_type, &mut out);
    out
}

fn varint(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_varint(value, &mut out);
    out
}

fn varint_field(number: u32, value: u64) -> Vec<u8> {
    [key(number, WireType::Varint), varint(value)].concat()
}

fn fixed64_field(number: u32, value: u64) -> Vec<u8> {
    [
        key(number, WireType::SixtyFourBit),
        value.to_le_bytes().to_vec(),
    ]
    .concat()
}

fn bytes_field(number: u32, body: &[u8]) -> Vec<u8> {
    [
        key(number, WireType::LengthDelimited),
        varint(body.len() as u64),
        body.to_vec(),
    ]
    .concat()
}

/// A request whose dictionary is `dictionary` (the message's body).
fn with_dictionary(dictionary: &[u8]) -> Vec<u8> {
    bytes_field(2, dictionary)
}

/// A request with one profile, `profile` (the message's body).
fn with_profile(profile: &[u8]) -> Vec<u8> {
    let scope_profiles = bytes_field(2, profile);
    let resource_profiles = bytes_field(2, &scope_profiles);
    bytes_field(1, &resource_profiles)
}

/// An attribute table entry whose value is `any_value` (the message's body).
fn with_attribute_value(any_value: &[u8]) -> Vec<u8> {
    with_dictionary(&bytes_field(6, &bytes_field(2, any_value)))
}

fn one_of_each_unknown_wire_type() -> Vec<u8> {
    [
        varint_field(100, u64::MAX),
        fixed64_field(101, 7),
        bytes_field(102, b"unknown"),
        key(103, WireType::ThirtyTwoBit),
        vec![1, 2, 3, 4],
    ]
    .concat()
}

#[test]
fn unknown_fields_are_skipped_like_prost() {
    let unknown = one_of_each_unknown_wire_type();
    let line = [varint_field(1, 3), unknown.clone(), varint_field(2, 40)].concat();
    let location = [
        bytes_field(3, &line),
        unknown.clone(),
        bytes_field(3, &line),
    ]
    .concat();
    let dictionary = [
        bytes_field(2, &location),
        unknown.clone(),
        bytes_field(5, b"main"),
    ]
    .concat();
    let request = [unknown.clone(), with_dictionary(&dictionary), unknown].concat();
    assert_decodes_like_prost(&request);
    let decoded = decode_request(&request).unwrap();
    assert_eq!(decoded.dictionary.unwrap().location_table[0].lines.len(), 2);
}

#[test]
fn unknown_groups_are_skipped_like_prost() {
    let group = [
        key(50, WireType::StartGroup),
        varint_field(1, 5),
        key(50, WireType::EndGroup),
    ]
    .concat();
    assert_decodes_like_prost(&with_dictionary(&[group, bytes_field(5, b"x")].concat()));
    // A group that does not end, or ends with another number, is an error.
    assert_decodes_like_prost(&with_dictionary(&key(50, WireType::StartGroup)));
    assert_decodes_like_prost(&with_dictionary(
        &[key(50, WireType::StartGroup), key(51, WireType::EndGroup)].concat(),
    ));
}

#[test]
fn unpacked_repeated_integers_decode_like_prost() {
    let packed = |values: &[u64]| {
        let body: Vec<u8> = values.iter().flat_map(|&v| varint(v)).collect();
        bytes_field(1, &body)
    };
    // location_indices unpacked, packed, and both, interleaved.
    for stack in [
        [varint_field(1, 1), varint_field(1, 2)].concat(),
        [
            varint_field(1, 1),
            packed(&[2, 3]),
            varint_field(1, 4),
            packed(&[]),
        ]
        .concat(),
    ] {
        assert_decodes_like_prost(&with_dictionary(&bytes_field(7, &stack)));
    }
    let sample = [
        varint_field(4, 10),
        bytes_field(4, &[varint(11), varint(u64::MAX)].concat()),
        fixed64_field(5, 1),
        bytes_field(5, &[2u64.to_le_bytes(), 3u64.to_le_bytes()].concat()),
        varint_field(2, 7),
    ]
    .concat();
    assert_decodes_like_prost(&with_profile(&bytes_field(2, &sample)));
}

#[test]
fn repeated_singular_fields_decode_like_prost() {
    // A message given twice is merged; a scalar or string given twice is
    // replaced.
    let dictionary = |string: &[u8]| bytes_field(5, string);
    assert_decodes_like_prost(
        &[
            with_dictionary(&dictionary(b"a")),
            with_dictionary(&dictionary(b"b")),
        ]
        .concat(),
    );
    let value_type = |type_strindex, unit_strindex| {
        [
            varint_field(1, type_strindex),
            varint_field(2, unit_strindex),
        ]
        .concat()
    };
    let profile = [
        bytes_field(1, &value_type(1, 2)),
        bytes_field(1, &varint_field(2, 5)),
        varint_field(6, 100),
        varint_field(6, 200),
        bytes_field(9, b"pprof"),
        bytes_field(9, b"jfr"),
    ]
    .concat();
    assert_decodes_like_prost(&with_profile(&profile));
    let line = bytes_field(3, &varint_field(1, 9));
    let location = [varint_field(1, 1), line.clone(), varint_field(1, 2), line].concat();
    assert_decodes_like_prost(&with_dictionary(&bytes_field(2, &location)));
}

#[test]
fn attribute_values_decode_like_prost() {
    let string = |s: &[u8]| bytes_field(1, s);
    let array = |values: &[Vec<u8>]| {
        let body: Vec<u8> = values.iter().flat_map(|v| bytes_field(1, v)).collect();
        bytes_field(5, &body)
    };
    for any_value in [
        // Two values: prost keeps the last one, or merges two arrays.
        [string(b"a"), varint_field(3, 5)].concat(),
        [array(&[string(b"a")]), array(&[string(b"b")])].concat(),
        [array(&[string(b"a")]), string(b"b")].concat(),
        // Every kind, the double with a NaN payload.
        varint_field(2, 2),
        fixed64_field(4, 0x7ff8_0000_dead_beef),
        bytes_field(7, &[0, 255]),
        varint_field(8, u64::MAX),
        bytes_field(
            6,
            &bytes_field(1, &[string(b"k"), bytes_field(2, &string(b"v"))].concat()),
        ),
        Vec::new(),
    ] {
        assert_decodes_like_prost(&with_attribute_value(&any_value));
    }
}

/// An array value nested `depth` arrays deep.
fn nested_arrays(depth: usize) -> Vec<u8> {
    let mut value = varint_field(3, 1);
    for _ in 0..depth {
        value = bytes_field(5, &bytes_field(1, &value));
    }
    value
}

#[test]
fn deep_values_decode_like_prost() {
    // prost's recursion limit (100 nested messages) refuses the deepest.
    for depth in [15, 16, 17, 30, 47, 48, 49, 60] {
        assert_decodes_like_prost(&with_attribute_value(&nested_arrays(depth)));
    }
    assert!(decode_request(&with_attribute_value(&nested_arrays(60))).is_err());
    assert!(decode_request(&with_attribute_value(&nested_arrays(30))).is_ok());
}

#[test]
fn invalid_encodings_fail_like_prost() {
    let ten_bytes_of_ones = vec![0xff; 9].into_iter().chain([0x02]).collect::<Vec<u8>>();
    for request in [
        // Invalid UTF-8 in a string.
        with_dictionary(&bytes_field(5, &[0xff, 0xfe])),
        // Wrong wire types: a string as a varint, a message as a fixed64,
        // a varint as a string.
        with_dictionary(&varint_field(5, 1)),
        with_dictionary(&fixed64_field(2, 1)),
        with_dictionary(&bytes_field(2, &bytes_field(1, b"1"))),
        // A varint over 64 bits; a key over 32 bits; field number 0.
        with_dictionary(&[key(1, WireType::Varint), ten_bytes_of_ones].concat()),
        [varint(u64::from(u32::MAX) + 1), varint(0)].concat(),
        vec![0x00, 0x01],
        // Lengths past the end: of a message, of a packed run's last varint,
        // of packed fixed64s that are not whole.
        [key(2, WireType::LengthDelimited), varint(5), vec![0]].concat(),
        with_dictionary(&bytes_field(7, &bytes_field(1, &[0x80]))),
        with_profile(&bytes_field(2, &bytes_field(5, &[1, 2, 3]))),
        // Wire types 6 and 7 do not exist.
        vec![0x0e, 0],
        vec![0x0f, 0],
    ] {
        assert!(ExportProfilesServiceRequest::decode(request.as_slice()).is_err());
        assert_decodes_like_prost(&request);
    }
}

#[test]
fn odd_integers_decode_like_prost() {
    // Over-long varints, and values that int32 and uint32 fields truncate.
    let over_long_one = vec![0x81, 0x80, 0x80, 0x00];
    let function = [
        key(1, WireType::Varint),
        over_long_one,
        varint_field(2, u64::MAX),
        varint_field(3, 1 << 40 | 5),
    ]
    .concat();
    assert_decodes_like_prost(&with_dictionary(&bytes_field(3, &function)));
    assert_decodes_like_prost(&with_profile(&varint_field(8, 1 << 33 | 1)));
}
