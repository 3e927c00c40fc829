//! `decode_packed_keeping_raw` (samples left in their protobuf, decoded as
//! they are read) and `encode_packed` against prost: the profile a packed
//! decode gives is prost's decode of the same bytes, its samples are
//! visited as prost decodes them, it is encoded to prost's bytes, and
//! bytes prost or validation refuse are refused with the same error as
//! the eager decoder's. Inputs: the corpus, protobuf written out of the
//! canonical form by hand (fields out of order, unpacked and split
//! repeated fields, unknown fields, repeated scalars), strings that are
//! not UTF-8, and random mutations of all of these.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use prost::bytes::Bytes;
use prost::encoding::{encode_key, encode_varint, message, WireType};
use prost::Message;

use profbridge_pprof::{
    decode_keeping_raw, decode_packed_keeping_raw, encode_keeping_raw, encode_packed, gunzip,
    is_gzip, Compression, DecodeOptions, EncodeOptions, Label, Location, Profile, Sample,
    SampleSource, ValueType,
};
use profbridge_testkit::sweep::proptest_cases;
use profbridge_testkit::{corpus_files, SeededRng};

const RAW: EncodeOptions = EncodeOptions {
    compression: Compression::None,
};

/// The samples a source visits, in order, with their positions.
fn visited(source: &impl SampleSource) -> Vec<Sample> {
    let mut samples = Vec::new();
    source
        .try_for_each_sample(|index, sample| {
            assert_eq!(index, samples.len());
            samples.push(sample.clone());
            Ok::<(), ()>(())
        })
        .unwrap();
    samples
}

/// The packed decode of `input` against prost's decode (when the eager
/// decoder takes it) or the eager decoder's error (when it does not).
fn check_against_prost(input: &[u8], what: &str) {
    let options = DecodeOptions::default();
    let packed = decode_packed_keeping_raw(Bytes::copy_from_slice(input), &options);
    let eager = decode_keeping_raw(input, &options);
    match (packed, eager) {
        (Ok((packed, raw)), Ok((eager, eager_raw))) => {
            assert_eq!(raw, eager_raw, "{what}: raw strings");
            if raw.is_empty() {
                let protobuf = if is_gzip(input) {
                    gunzip(input, &options).unwrap()
                } else {
                    input.to_vec()
                };
                let by_prost = Profile::decode(protobuf.as_slice()).unwrap();
                assert_eq!(eager, by_prost, "{what}: the eager decoder is not prost's");
                assert_eq!(packed.sample_count(), by_prost.sample.len(), "{what}");
                assert!(visited(&packed) == by_prost.sample, "{what}: samples");
                let written = encode_packed(packed.clone(), &raw, &RAW);
                assert!(written == by_prost.encode_to_vec(), "{what}: encoding");
            }
            let level1 = EncodeOptions::default();
            assert!(
                encode_packed(packed.clone(), &raw, &level1)
                    == encode_keeping_raw(&eager, &eager_raw, &level1),
                "{what}: gzipped encoding"
            );
            assert!(packed.into_profile() == eager, "{what}: into_profile");
        }
        (Err(packed), Err(eager)) => {
            assert_eq!(packed.to_string(), eager.to_string(), "{what}: errors");
        }
        (packed, eager) => panic!(
            "{what}: packed {:?}, eager {:?}",
            packed.map(|_| ()),
            eager.map(|_| ())
        ),
    }
}

fn put_varint_field(out: &mut Vec<u8>, tag: u32, value: u64) {
    encode_key(tag, WireType::Varint, out);
    encode_varint(value, out);
}

fn put_len_field(out: &mut Vec<u8>, tag: u32, body: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// A sample as prost would never write it: location ids unpacked, values
/// in two packed runs, an unknown field, a label before the ids.
fn noncanonical_sample(ids: &[u64], values: &[i64], label: Option<Label>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(label) = label {
        message::encode(3, &label, &mut out);
    }
    for &id in ids {
        put_varint_field(&mut out, 1, id);
    }
    let (first, second) = values.split_at(values.len() / 2);
    for run in [first, second] {
        let mut packed = Vec::new();
        for &value in run {
            encode_varint(value as u64, &mut packed);
        }
        put_len_field(&mut out, 2, &packed);
    }
    put_varint_field(&mut out, 15, 7);
    out
}

/// A valid profile with its top-level fields out of order: strings first,
/// samples between locations, a sample type after the first sample,
/// `time_nanos` twice (the last wins), an unknown field. With
/// `empty_sample`, a third sample without values, which validation
/// refuses.
fn noncanonical_profile(empty_sample: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for text in ["", "samples", "count", "cpu", "nanoseconds", "key", "value"] {
        put_len_field(&mut out, 6, text.as_bytes());
    }
    put_varint_field(&mut out, 9, 5);
    let location = |id: u64| Location {
        id,
        ..Location::default()
    };
    message::encode(4, &location(1), &mut out);
    let samples = ValueType { r#type: 1, unit: 2 };
    message::encode(1, &samples, &mut out);
    put_len_field(&mut out, 2, &noncanonical_sample(&[1, 2, 1], &[3, 4], None));
    let cpu = ValueType { r#type: 3, unit: 4 };
    message::encode(1, &cpu, &mut out);
    let label = Label {
        key: 5,
        str: 6,
        ..Label::default()
    };
    let labelled = noncanonical_sample(&[2], &[-1, 9], Some(label));
    put_len_field(&mut out, 2, &labelled);
    message::encode(4, &location(2), &mut out);
    if empty_sample {
        put_len_field(&mut out, 2, &[]);
    }
    put_varint_field(&mut out, 9, 11);
    put_varint_field(&mut out, 99, 1);
    out
}

#[test]
fn hand_written_protobuf_decodes_and_encodes_as_prost_does() {
    let bytes = noncanonical_profile(false);
    let profile = Profile::decode(bytes.as_slice()).unwrap();
    profbridge_pprof::validate(&profile).unwrap();
    assert_eq!(profile.sample.len(), 2);
    assert_eq!(profile.sample[0].location_id, [1, 2, 1]);
    assert_eq!(profile.time_nanos, 11);
    assert_ne!(profile.encode_to_vec(), bytes, "the input is canonical");
    let (packed, raw) =
        decode_packed_keeping_raw(Bytes::from(bytes.clone()), &DecodeOptions::default()).unwrap();
    assert!(raw.is_empty());
    assert_eq!(packed.sample_bytes().len(), 2, "the samples are not packed");
    check_against_prost(&bytes, "hand-written");
}

#[test]
fn a_sample_validation_refuses_is_refused_with_the_eager_decoders_error() {
    let bytes = noncanonical_profile(true);
    let error = decode_packed_keeping_raw(Bytes::from(bytes.clone()), &DecodeOptions::default())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid profile: sample 2 has 0 values, but the profile has 2 sample types"
    );
    check_against_prost(&bytes, "hand-written, refused");
}

#[test]
fn corpus_profiles_decode_and_encode_as_prost_does() {
    let files = corpus_files();
    for file in &files {
        check_against_prost(&file.bytes, &file.name);
    }
    let decoded = files
        .iter()
        .filter(|file| decode_keeping_raw(&file.bytes, &DecodeOptions::default()).is_ok())
        .count();
    assert!(
        files.is_empty() || decoded >= 3,
        "{decoded} corpus profiles decode"
    );
}

#[test]
fn strings_that_are_not_utf8_take_the_eager_path_and_keep_their_bytes() {
    let mut bytes = noncanonical_profile(false);
    let at = bytes.windows(5).position(|w| w == b"value").unwrap();
    bytes[at + 1] = 0xff;
    let (packed, raw) =
        decode_packed_keeping_raw(Bytes::from(bytes.clone()), &DecodeOptions::default()).unwrap();
    assert_eq!(raw.len(), 1);
    assert_eq!(packed.sample_count(), 2);
    assert!(packed.sample_bytes().is_empty(), "decoded eagerly");
    check_against_prost(&bytes, "not UTF-8");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(4096, 512)))]

    #[test]
    fn mutated_protobuf_is_read_as_the_eager_decoder_reads_it(seed in any::<u64>()) {
        let mut rng = SeededRng::new(seed);
        let base = noncanonical_profile(rng.below(2) == 0);
        let mutated = rng.mutate(&base);
        check_against_prost(&mutated, &format!("seed {seed}"));
    }
}
