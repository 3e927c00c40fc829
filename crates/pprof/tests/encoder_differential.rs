//! The hand-written pprof encoder (`wire::write_profile`) against prost's
//! encoding of the same profile: byte for byte (the encoder is meant to
//! write prost's bytes), on random profiles above 64 KiB and on edge
//! values. `PROFBRIDGE_FULL_SWEEP=1` runs four times the cases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use prost::Message;

use profbridge_pprof::wire::write_profile;
use profbridge_pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use profbridge_testkit::sweep::proptest_cases;

/// Integers of every varint length, zero and negatives included.
fn int() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(-1),
        Just(i64::MIN),
        Just(i64::MAX),
        any::<i64>(),
        0i64..300
    ]
}

fn uint() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>(), 0u64..300]
}

fn value_type() -> impl Strategy<Value = ValueType> {
    (int(), int()).prop_map(|(r#type, unit)| ValueType { r#type, unit })
}

fn label() -> impl Strategy<Value = Label> {
    (int(), int(), int(), int()).prop_map(|(key, str, num, num_unit)| Label {
        key,
        str,
        num,
        num_unit,
    })
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        prop::collection::vec(uint(), 0..40),
        prop::collection::vec(int(), 0..4),
        prop::collection::vec(label(), 0..3),
    )
        .prop_map(|(location_id, value, label)| Sample {
            location_id,
            value,
            label,
        })
}

fn mapping() -> impl Strategy<Value = Mapping> {
    (
        (uint(), uint(), uint(), uint()),
        (int(), int()),
        prop::array::uniform4(any::<bool>()),
    )
        .prop_map(
            |((id, memory_start, memory_limit, file_offset), (filename, build_id), flags)| {
                Mapping {
                    id,
                    memory_start,
                    memory_limit,
                    file_offset,
                    filename,
                    build_id,
                    has_functions: flags[0],
                    has_filenames: flags[1],
                    has_line_numbers: flags[2],
                    has_inline_frames: flags[3],
                }
            },
        )
}

fn location() -> impl Strategy<Value = Location> {
    (
        uint(),
        uint(),
        uint(),
        prop::collection::vec(
            (uint(), int(), int()).prop_map(|(function_id, line, column)| Line {
                function_id,
                line,
                column,
            }),
            0..4,
        ),
        any::<bool>(),
    )
        .prop_map(|(id, mapping_id, address, line, is_folded)| Location {
            id,
            mapping_id,
            address,
            line,
            is_folded,
        })
}

fn function() -> impl Strategy<Value = Function> {
    (uint(), int(), int(), int(), int()).prop_map(
        |(id, name, system_name, filename, start_line)| Function {
            id,
            name,
            system_name,
            filename,
            start_line,
        },
    )
}

/// Profiles of a few hundred entries per table: above 64 KiB encoded.
fn large_profile() -> impl Strategy<Value = Profile> {
    (
        (
            prop::collection::vec(value_type(), 0..4),
            prop::collection::vec(sample(), 100..400),
            prop::collection::vec(mapping(), 0..20),
            prop::collection::vec(location(), 100..400),
            prop::collection::vec(function(), 50..300),
            prop::collection::vec("[a-z/._ ]{0,60}|\\PC{0,20}", 1..400),
        ),
        (
            (int(), int(), int(), int()),
            prop::option::of(value_type()),
            int(),
            prop::collection::vec(int(), 0..5),
            (int(), int()),
        ),
    )
        .prop_map(
            |(
                (sample_type, sample, mapping, location, function, string_table),
                (
                    (drop_frames, keep_frames, time_nanos, duration_nanos),
                    period_type,
                    period,
                    comment,
                    (default_sample_type, doc_url),
                ),
            )| Profile {
                sample_type,
                sample,
                mapping,
                location,
                function,
                string_table,
                drop_frames,
                keep_frames,
                time_nanos,
                duration_nanos,
                period_type,
                period,
                comment,
                default_sample_type,
                doc_url,
            },
        )
}

fn ours(profile: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    write_profile(profile, &mut out);
    out
}

#[test]
fn empty_and_default_entries_encode_as_prost_does() {
    let mut profile = Profile::default();
    assert_eq!(ours(&profile), profile.encode_to_vec());
    profile.sample.push(Sample::default());
    profile.location.push(Location::default());
    profile.function.push(Function::default());
    profile.mapping.push(Mapping::default());
    profile.sample_type.push(ValueType::default());
    profile.period_type = Some(ValueType::default());
    profile.string_table.push(String::new());
    assert_eq!(ours(&profile), profile.encode_to_vec());
}

#[test]
fn a_string_of_two_hundred_kib_encodes_as_prost_does() {
    let profile = Profile {
        string_table: vec![String::new(), "é".repeat(100 << 10)],
        comment: vec![1; 70_000],
        ..Profile::default()
    };
    let bytes = ours(&profile);
    assert!(bytes.len() > 64 << 10);
    assert_eq!(bytes, profile.encode_to_vec());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64, 16)))]

    #[test]
    fn large_profiles_encode_to_prosts_bytes(mut profile in large_profile()) {
        if ours(&profile).len() <= 64 << 10 {
            profile.string_table.push("filler ".repeat(10 << 10));
        }
        let bytes = ours(&profile);
        prop_assert!(bytes.len() > 64 << 10, "{} bytes", bytes.len());
        let theirs = profile.encode_to_vec();
        prop_assert!(bytes == theirs, "the encodings differ");
        prop_assert_eq!(Profile::decode(bytes.as_slice()).unwrap(), profile);
    }
}
