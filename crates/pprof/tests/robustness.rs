//! Truncated and mutated input never panics or hangs: parsing (pprof, legacy
//! or folded, whichever the bytes look like) answers Ok or Err.
//!
//! Both sweeps run whole with `PROFBRIDGE_FULL_SWEEP=1` (as `.ci/run` sets);
//! otherwise every file gets a seeded sample of its cuts and mutations
//! (the seed is printed; `PROFBRIDGE_SWEEP_SEED` replays it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{dump, parse_any, DecodeOptions};
use profbridge_testkit::sweep::Sweep;
use profbridge_testkit::{corpus_files, SeededRng};

const MUTATIONS_PER_FILE: usize = 10_000;
const SAMPLED_MUTATIONS_PER_FILE: usize = MUTATIONS_PER_FILE / 20;
const SAMPLED_CUTS_PER_FILE: usize = 128;
/// A sampled cut of a file past [`EXHAUSTIVE_TRUNCATION_LIMIT`] (gzip'd,
/// mostly) decompresses up to the whole file: fewer of them in a sample.
const SAMPLED_CUTS_PER_LARGE_FILE: usize = 16;
/// Files up to this size are cut at every offset. A larger file is cut at
/// every offset of its first 16 KiB and last 1 KiB and at 4,096 seeded offsets
/// between: each cut of a gzip stream costs a decompression of everything
/// before it, so every cut of the 1.2 MB large.cpu would take hours.
const EXHAUSTIVE_TRUNCATION_LIMIT: usize = 64 << 10;
const HEAD: usize = 16 << 10;
const TAIL: usize = 1 << 10;
const SAMPLED_CUTS: usize = 4096;

/// Parses, and dumps what decodes when it is small (dumping large.cpu's
/// 4 MB of text ten thousand times would only test `format!`).
fn decode_and_dump(data: &[u8]) {
    if let Ok((profile, _)) = parse_any(data, &DecodeOptions::default()) {
        if data.len() <= EXHAUSTIVE_TRUNCATION_LIMIT {
            dump(&profile).expect("a decoded profile is valid, so it dumps");
        }
    }
}

fn cut_points(len: usize, rng: &mut SeededRng) -> Vec<usize> {
    if len <= EXHAUSTIVE_TRUNCATION_LIMIT {
        return (0..len).collect();
    }
    let mut cuts: Vec<usize> = (0..HEAD).chain(len - TAIL..len).collect();
    cuts.extend((0..SAMPLED_CUTS).map(|_| HEAD + rng.below(len - HEAD - TAIL)));
    cuts
}

#[test]
fn every_truncation_is_ok_or_err() {
    let sweep = Sweep::from_env("every_truncation_is_ok_or_err");
    let mut rng = SeededRng::new(0x7472_756e_6361_7465);
    for file in corpus_files() {
        let cuts = cut_points(file.bytes.len(), &mut rng);
        let salt = file.bytes.len() as u64;
        let at_most = if file.bytes.len() > EXHAUSTIVE_TRUNCATION_LIMIT {
            SAMPLED_CUTS_PER_LARGE_FILE
        } else {
            SAMPLED_CUTS_PER_FILE
        };
        for cut in sweep.sample(cuts, at_most, salt) {
            decode_and_dump(&file.bytes[..cut]);
        }
    }
}

#[test]
fn seeded_mutations_are_ok_or_err() {
    let sweep = Sweep::from_env("seeded_mutations_are_ok_or_err");
    let mutations = sweep.count(MUTATIONS_PER_FILE, SAMPLED_MUTATIONS_PER_FILE);
    for file in corpus_files() {
        let mut rng = sweep.rng(0x6d75_7461_7465 ^ file.bytes.len() as u64);
        for _ in 0..mutations {
            decode_and_dump(&rng.mutate(&file.bytes));
        }
    }
}
