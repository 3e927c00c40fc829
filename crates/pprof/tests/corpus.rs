//! The codec against google/pprof's own test profiles.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{
    canonical_diff, decode, dump, encode, Compression, DecodeOptions, EncodeOptions,
};
use profbridge_testkit::{corpus_files, CorpusFile};

/// The corpus files that are pprof protos (gzipped), as opposed to the legacy
/// formats.
fn corpus_protos() -> Vec<CorpusFile> {
    corpus_files()
        .into_iter()
        .filter(CorpusFile::is_gzip)
        .collect()
}

#[test]
fn corpus_has_the_three_gzipped_protos() {
    let names: Vec<String> = corpus_protos().into_iter().map(|f| f.name).collect();
    if names.is_empty() {
        return; // corpus absent: corpus_dir() said so.
    }
    assert_eq!(
        names,
        [
            "cppbench.cpu_no_samples_type",
            "go.nomappings.crash",
            "large.cpu"
        ]
    );
}

#[test]
fn decode_encode_decode_is_canonically_equal() {
    for file in corpus_protos() {
        let original = decode(&file.bytes, &DecodeOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", file.name));
        for level in [0, 1, 6, 9] {
            let options = EncodeOptions {
                compression: Compression::Gzip { level },
            };
            let again = decode(&encode(&original, &options), &DecodeOptions::default())
                .unwrap_or_else(|e| panic!("{} at gzip level {level}: {e}", file.name));
            assert_eq!(again, original, "{}: gzip level {level}", file.name);
        }
        let raw = encode(
            &original,
            &EncodeOptions {
                compression: Compression::None,
            },
        );
        assert!(!profbridge_pprof::is_gzip(&raw));
        let again = decode(&raw, &DecodeOptions::default()).unwrap();
        assert_eq!(
            canonical_diff(&original, &again).unwrap(),
            None,
            "{}",
            file.name
        );
    }
}

#[test]
fn dump_matches_google_pprof_string_byte_for_byte() {
    for file in corpus_protos() {
        let expected = file
            .expected_string()
            .unwrap_or_else(|| panic!("{} has no .string companion", file.name));
        let profile = decode(&file.bytes, &DecodeOptions::default()).unwrap();
        let ours = dump(&profile).unwrap();
        if ours != expected {
            let line = ours
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .map_or_else(|| "(length)".to_owned(), |i| (i + 1).to_string());
            panic!(
                "{}: dump differs from {}.string at line {line}",
                file.name, file.name
            );
        }
    }
}

#[test]
fn decode_limits_are_enforced_before_memory_is_used() {
    let Some(file) = corpus_protos().into_iter().find(|f| f.name == "large.cpu") else {
        return;
    };
    let input_limit = DecodeOptions {
        max_input_bytes: file.bytes.len() - 1,
        ..DecodeOptions::default()
    };
    let err = decode(&file.bytes, &input_limit).unwrap_err();
    assert!(err.to_string().contains("over the limit"), "{err}");

    let output_limit = DecodeOptions {
        max_decompressed_bytes: 1 << 20,
        ..DecodeOptions::default()
    };
    let err = decode(&file.bytes, &output_limit).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gzip data decompresses to more than the limit of 1048576 bytes"
    );
}

#[test]
fn the_hand_written_encoder_writes_what_prost_writes_for_the_corpus() {
    let raw = EncodeOptions {
        compression: Compression::None,
    };
    for file in corpus_protos() {
        let profile = decode(&file.bytes, &DecodeOptions::default()).unwrap();
        assert!(
            encode(&profile, &raw) == prost::Message::encode_to_vec(&profile),
            "{}: the bytes differ from prost's",
            file.name
        );
    }
}
