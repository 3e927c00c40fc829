//! Times prost's own decode against `decode_unvalidated` (which falls back
//! to the lenient path for strings that are not UTF-8 only when prost
//! refuses the input), and `encode` against `encode_keeping_raw` with
//! nothing kept: the fast paths should cost nothing. Interleaved in one
//! process, alternating which goes first, so machine load hits both alike.
//!
//! Usage: utf8_fast_path FILE (pprof, gzipped or raw). Prints the medians
//! of 200 rounds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
use std::time::{Duration, Instant};

use profbridge_pprof::{
    decode_unvalidated, encode, encode_keeping_raw, gunzip, Compression, DecodeOptions,
    EncodeOptions, Profile, RawStrings,
};
use prost::Message;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let path = std::env::args().nth(1).expect("a pprof file");
    let input = std::fs::read(path).unwrap();
    let raw = if profbridge_pprof::is_gzip(&input) {
        gunzip(&input, &DecodeOptions::default()).unwrap()
    } else {
        input
    };
    let options = DecodeOptions::default();
    let (mut old, mut new, mut enc_old, mut enc_new) = (vec![], vec![], vec![], vec![]);
    let none = EncodeOptions {
        compression: Compression::None,
    };
    let empty = RawStrings::default();
    for round in 0..200 {
        // Alternate which goes first, and drop each profile before the
        // next decode, so that neither gets the other's freed memory.
        for which in [round % 2, 1 - round % 2] {
            let t = Instant::now();
            let profile = if which == 0 {
                Profile::decode(raw.as_slice()).unwrap()
            } else {
                decode_unvalidated(&raw, &options).unwrap()
            };
            let elapsed = t.elapsed();
            let t = Instant::now();
            let bytes = if which == 0 {
                encode(&profile, &none)
            } else {
                encode_keeping_raw(&profile, &empty, &none)
            };
            let encoded = t.elapsed();
            assert!(!bytes.is_empty());
            drop((profile, bytes));
            if which == 0 {
                old.push(elapsed);
                enc_old.push(encoded);
            } else {
                new.push(elapsed);
                enc_new.push(encoded);
            }
        }
    }
    println!(
        "decode: prost {:?}, decode_unvalidated {:?}; encode {:?}, encode_keeping_raw {:?}",
        median(old),
        median(new),
        median(enc_old),
        median(enc_new)
    );
}
