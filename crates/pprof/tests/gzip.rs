//! gzip output: every level gives back the input through a standard gzip
//! reader, and level 1 (profbridge's own deflate) is no larger than
//! zlib-rs' level 1 on real profiles.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use proptest::prelude::*;

use profbridge_pprof::{
    decode, encode, parse_legacy, Compression, DecodeOptions, EncodeOptions, GzipCompressor,
    DEFAULT_GZIP_LEVEL,
};
use profbridge_testkit::{corpus_files, SeededRng};

fn gunzipped(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("a valid gzip member");
    out
}

fn quick_gzip(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzipCompressor::new(1)
        .compress_into(raw, &mut out)
        .expect("level 1 cannot fail");
    out
}

fn zlib_level_1_size(raw: &[u8]) -> usize {
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(raw).unwrap();
    encoder.finish().unwrap().len()
}

/// Random bytes from `seed`.
fn noise(rng: &mut SeededRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

#[test]
fn repeats_at_every_distance_and_length_come_back() {
    let mut rng = SeededRng::new(7);
    let mut raw = noise(&mut rng, 40_000);
    // Copies from 1 byte back (runs) to the window's edge and past it, of
    // lengths around the 4-byte probe and the 258-byte longest match.
    for distance in [1, 2, 3, 4, 7, 258, 4096, 32_767, 32_768, 32_769, 40_000] {
        for length in [3, 4, 5, 257, 258, 259, 600] {
            let start = raw.len() - distance;
            for i in 0..length {
                raw.push(raw[start + i]);
            }
            raw.extend(noise(&mut rng, 3));
        }
    }
    let gzipped = quick_gzip(&raw);
    assert_eq!(gunzipped(&gzipped), raw);
    assert!(gzipped.len() < raw.len());
}

#[test]
fn long_runs_and_inputs_past_64_kib_come_back() {
    let mut rng = SeededRng::new(11);
    let mut raw = vec![0u8; 200_000];
    raw.extend(b"profile;frame;".repeat(20_000));
    raw.extend(noise(&mut rng, 100_000));
    raw.extend(b"profile;frame;".repeat(20_000));
    let gzipped = quick_gzip(&raw);
    assert_eq!(gunzipped(&gzipped), raw);
}

#[test]
fn incompressible_input_is_stored_not_expanded() {
    let raw = noise(&mut SeededRng::new(3), 300_000);
    let gzipped = quick_gzip(&raw);
    assert_eq!(gunzipped(&gzipped), raw);
    // gzip header and trailer, and 5 bytes per stored block of 64 KiB.
    assert!(gzipped.len() <= raw.len() + 18 + 5 * 5, "{}", gzipped.len());
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let raw = b"cpu;nanoseconds;main;work;".repeat(10_000);
    let mut compressor = GzipCompressor::new(1);
    let mut first = Vec::new();
    compressor.compress_into(&raw, &mut first).unwrap();
    let mut other = Vec::new();
    compressor
        .compress_into(&noise(&mut SeededRng::new(5), 50_000), &mut other)
        .unwrap();
    compressor.compress_into(&raw, &mut other).unwrap();
    assert_eq!(first, other);
}

#[test]
fn default_level_is_no_larger_than_zlib_level_1_on_real_profiles() {
    let options = EncodeOptions {
        compression: Compression::None,
    };
    let mut compared = 0;
    for file in corpus_files() {
        let profile = match parse_legacy(&file.bytes) {
            Ok(profile) => profile,
            Err(_) => match decode(&file.bytes, &DecodeOptions::default()) {
                Ok(profile) => profile,
                Err(_) => continue,
            },
        };
        let raw = encode(&profile, &options);
        if raw.len() < 4096 {
            continue;
        }
        let gzipped = encode(
            &profile,
            &EncodeOptions {
                compression: Compression::Gzip {
                    level: DEFAULT_GZIP_LEVEL,
                },
            },
        );
        assert_eq!(gunzipped(&gzipped), raw, "{}", file.name);
        let zlib = zlib_level_1_size(&raw);
        assert!(
            gzipped.len() <= zlib,
            "{}: {} bytes, zlib's level 1 {zlib}",
            file.name,
            gzipped.len()
        );
        compared += 1;
    }
    if !corpus_files().is_empty() {
        assert!(compared > 0, "no profile of 4 KiB or more in the corpus");
    }
}

/// Inputs with plenty of repeats: fragments of a small alphabet.
fn repetitive_input() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((prop::collection::vec(0u8..4, 1..40), 1usize..20), 0..200).prop_map(
        |fragments| {
            fragments
                .into_iter()
                .flat_map(|(fragment, times)| fragment.repeat(times))
                .collect()
        },
    )
}

proptest! {
    #[test]
    fn level_1_round_trips_any_input(raw in prop::collection::vec(any::<u8>(), 0..5000)) {
        prop_assert_eq!(gunzipped(&quick_gzip(&raw)), raw);
    }

    #[test]
    fn level_1_round_trips_repetitive_input(raw in repetitive_input()) {
        let gzipped = quick_gzip(&raw);
        prop_assert_eq!(gunzipped(&gzipped), raw);
    }
}
