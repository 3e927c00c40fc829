//! Truncated, edited and mutated recordings never panic or hang: the
//! converter answers Ok or a typed error, quickly.
//!
//! The sweeps run whole with `PROFBRIDGE_FULL_SWEEP=1` (as `.ci/run`
//! sets); otherwise a seeded sample (the seed is printed;
//! `PROFBRIDGE_SWEEP_SEED` replays it).

use std::time::{Duration, Instant};

use profbridge_jfr::{convert, ConvertOptions};
use profbridge_pprof::validate;
use profbridge_testkit::sweep::Sweep;

use profbridge_testkit::jdk::{self, RecordSpec};

use profbridge_testkit::jfr_writer::Recording;

/// Far more than any conversion here takes (a few milliseconds): a
/// conversion this slow is a hang in the making.
const SLOW: Duration = Duration::from_secs(10);

fn convert_checked(bytes: &[u8]) {
    let start = Instant::now();
    if let Ok(converted) = convert(bytes, &ConvertOptions::default()) {
        for profile in &converted.profiles {
            validate(&profile.profile).expect("what converts is valid pprof");
            assert_eq!(profile.frame_kinds.len(), profile.profile.location.len());
        }
    }
    assert!(start.elapsed() < SLOW, "took {:?}", start.elapsed());
}

/// The testkit's multi-chunk JDK recording (three chunks or more), or
/// the synthetic one twice when the JDK is missing (said loudly), and the
/// offsets where its chunks end.
fn chunked() -> (Vec<u8>, Vec<usize>) {
    let purpose = "mutating a multi-chunk JFR recording the JDK made";
    let bytes = match jdk::record(&RecordSpec::multi_chunk(), purpose) {
        Some((_, recording)) => recording.bytes(),
        None => {
            let one = Recording::standard().build();
            [one.as_slice(), &one].concat()
        }
    };
    let ends = chunk_ends(&bytes);
    assert!(ends.len() >= 2, "only {} chunks", ends.len());
    (bytes, ends)
}

/// Where each chunk ends, from the sizes their headers state.
fn chunk_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        assert_eq!(&bytes[start..start + 4], b"FLR\0", "a chunk at {start}");
        let size = u64::from_be_bytes(bytes[start + 8..start + 16].try_into().unwrap());
        start += usize::try_from(size).unwrap();
        ends.push(start);
    }
    assert_eq!(start, bytes.len(), "the chunks fill the recording");
    ends
}

#[test]
fn truncation_at_chunk_boundaries_and_anywhere_is_ok_or_err() {
    let sweep = Sweep::from_env("jfr_truncation");
    let (bytes, ends) = chunked();
    let mut cuts: Vec<usize> = (0..80).collect();
    for &end in &ends[..ends.len() - 1] {
        cuts.extend(end - 8..end + 80);
    }
    let mut rng = sweep.rng(0x6a66_7274);
    cuts.extend((0..4096).map(|_| rng.below(bytes.len())));
    for cut in sweep.sample(cuts, 300, bytes.len() as u64) {
        convert_checked(&bytes[..cut]);
    }
    // A cut exactly at a chunk's end leaves whole chunks.
    for &end in &ends {
        assert!(convert(&bytes[..end], &ConvertOptions::default()).is_ok());
    }
}

#[test]
fn synthetic_truncations_at_every_offset_are_ok_or_err() {
    let bytes = Recording::standard().build();
    for cut in 0..bytes.len() {
        convert_checked(&bytes[..cut]);
    }
}

#[test]
fn seeded_mutations_are_ok_or_err() {
    let sweep = Sweep::from_env("jfr_mutations");
    let (bytes, _) = chunked();
    let mut rng = sweep.rng(0x6d75_7461_7465);
    for _ in 0..sweep.count(2_000, 200) {
        convert_checked(&rng.mutate(&bytes));
    }
    let synthetic = Recording::standard().build();
    let mut rng = sweep.rng(0x7379_6e74);
    for _ in 0..sweep.count(20_000, 2_000) {
        convert_checked(&rng.mutate(&synthetic));
    }
}

#[test]
fn every_single_bit_flip_of_the_synthetic_recording_is_ok_or_err() {
    let bytes = Recording::standard().build();
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        convert_checked(&flipped);
    }
}

#[test]
fn every_header_field_set_to_extremes_is_ok_or_err() {
    let (bytes, ends) = chunked();
    // Each header field of the first chunk and of the second.
    let offsets = (8..64)
        .step_by(8)
        .chain((8..64).step_by(8).map(|o| ends[0] + o));
    for offset in offsets {
        for value in [
            0u64,
            1,
            67,
            68,
            u64::from(u32::MAX),
            1 << 40,
            i64::MAX as u64,
            u64::MAX,
        ] {
            let mut edited = bytes.clone();
            edited[offset..offset + 8].copy_from_slice(&value.to_be_bytes());
            convert_checked(&edited);
        }
    }
}
