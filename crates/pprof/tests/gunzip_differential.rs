//! The gunzip every gzip reader of profbridge shares (`gunzip_into`)
//! against flate2's `MultiGzDecoder`, and gzip output against flate2's
//! inflate: inputs above 64 KiB, several members, and adversarial bytes.
//! (These were the collector's gunzip tests, which moved here with it.)
//! `PROFBRIDGE_FULL_SWEEP=1` runs more cases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{self, Read, Write};

use flate2::{Compression, Decompress, GzBuilder};
use proptest::prelude::*;

use profbridge_pprof::{gunzip_into, GunzipError, GzipCompressor};
use profbridge_testkit::sweep::proptest_cases;
use profbridge_testkit::SeededRng;

/// FHCRC, the fixed header's length and the trailer's (RFC 1952).
const FHCRC: u8 = 1 << 1;
const FIXED_HEADER_LEN: usize = 10;
const TRAILER_LEN: usize = 8;

fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), Compression::new(level));
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn ours(input: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let mut out = Vec::new();
    gunzip_into(input, &mut out, limit, &mut Decompress::new(false)).map(|()| out)
}

fn flate2s(input: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(input)
        .read_to_end(&mut out)
        .map(|_| out)
}

fn profile_like(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i % 251) ^ ((i / 7) % 13)) as u8)
        .collect()
}

fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SeededRng::new(seed);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

/// Ours gives what flate2 gives, or refuses: when ours accepts, flate2
/// accepts the same bytes; when flate2 accepts and ours refuses, the input
/// is empty or holds bytes after its last member (which flate2 may take
/// as the end), and ours never passes `limit`.
fn agrees_with_flate2(input: &[u8], limit: usize) -> Result<(), TestCaseError> {
    let theirs = flate2s(input);
    match ours(input, limit) {
        Ok(out) => {
            prop_assert!(out.len() <= limit);
            match theirs {
                Ok(theirs) => prop_assert!(out == theirs, "different bytes"),
                Err(error) => prop_assert!(false, "only flate2 refuses: {error}"),
            }
        }
        Err(GunzipError::TooLarge) => {
            if let Ok(theirs) = theirs {
                prop_assert!(theirs.len() > limit);
            }
        }
        Err(GunzipError::Corrupt(error)) => {
            if let Ok(theirs) = theirs {
                // What follows the last whole member is no gzip member.
                let after_members = error.to_string().starts_with("not a gzip member")
                    || error.to_string() == "the member header is cut off";
                prop_assert!(
                    input.is_empty() || after_members,
                    "only ours refuses ({error}), flate2 gave {} bytes",
                    theirs.len()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn every_optional_header_field_is_skipped() {
    let payload = profile_like(300_000);
    let mut encoder = GzBuilder::new()
        .extra(vec![7; 300])
        .filename("profile.pb")
        .comment("a comment")
        .mtime(12345)
        .write(Vec::new(), Compression::fast());
    encoder.write_all(&payload).unwrap();
    let compressed = encoder.finish().unwrap();
    assert_eq!(ours(&compressed, usize::MAX).unwrap(), payload);
}

#[test]
fn a_header_crc_is_checked() {
    let mut member = gzip(b"payload", 6);
    // Set FHCRC and insert the header's CRC16 after the fixed header.
    member[3] |= FHCRC;
    let crc = crc32fast::hash(&member[..FIXED_HEADER_LEN]) as u16;
    let mut with_crc = member[..FIXED_HEADER_LEN].to_vec();
    with_crc.extend(crc.to_le_bytes());
    with_crc.extend(&member[FIXED_HEADER_LEN..]);
    assert_eq!(ours(&with_crc, 100).unwrap(), b"payload");
    with_crc[FIXED_HEADER_LEN] ^= 1;
    assert!(matches!(ours(&with_crc, 100), Err(GunzipError::Corrupt(_))));
}

#[test]
fn members_one_after_another_are_all_decompressed() {
    let mut input = gzip(b"first ", 1);
    input.extend(gzip(b"", 9));
    input.extend(gzip(&profile_like(200_000), 6));
    let mut expected = b"first ".to_vec();
    expected.extend(profile_like(200_000));
    assert_eq!(ours(&input, usize::MAX).unwrap(), expected);
    // Identical members: the last trailer matches the first member too.
    let twice = [gzip(b"same", 6), gzip(b"same", 6)].concat();
    assert_eq!(ours(&twice, 100).unwrap(), b"samesame");
}

#[test]
fn the_limit_holds_to_the_byte() {
    let payload = profile_like(1_000_000);
    let compressed = gzip(&payload, 1);
    assert_eq!(ours(&compressed, payload.len()).unwrap(), payload);
    assert!(matches!(
        ours(&compressed, payload.len() - 1),
        Err(GunzipError::TooLarge)
    ));
    let bomb = gzip(&vec![0; 10 << 20], 9);
    let mut out = Vec::new();
    let result = gunzip_into(&bomb, &mut out, 1 << 20, &mut Decompress::new(false));
    assert!(matches!(result, Err(GunzipError::TooLarge)));
    assert!(out.capacity() <= 2 << 20, "{} bytes held", out.capacity());
}

#[test]
fn damage_anywhere_is_an_error() {
    let compressed = gzip(&profile_like(50_000), 6);
    let trailer = compressed.len() - TRAILER_LEN;
    for (what, damaged) in [
        ("empty", Vec::new()),
        ("magic", [&[0x1f, 0x8c][..], &compressed[2..]].concat()),
        ("cut in the header", compressed[..5].to_vec()),
        ("cut in the data", compressed[..trailer / 2].to_vec()),
        ("cut in the trailer", compressed[..trailer + 3].to_vec()),
        ("crc", {
            let mut c = compressed.clone();
            c[trailer] ^= 1;
            c
        }),
        ("isize", {
            let mut c = compressed.clone();
            c[trailer + 4] ^= 1;
            c
        }),
        ("garbage after", [&compressed[..], b"xyz"].concat()),
    ] {
        assert!(
            matches!(ours(&damaged, usize::MAX), Err(GunzipError::Corrupt(_))),
            "{what}"
        );
        assert!(
            flate2s(&damaged).is_err() || what == "garbage after" || what == "empty",
            "{what}"
        );
    }
}

#[test]
fn adversarial_inputs_are_refused_as_flate2_refuses_them() {
    let member = gzip(&profile_like(100_000), 6);
    let mut huge_extra = member[..FIXED_HEADER_LEN].to_vec();
    huge_extra[3] |= 1 << 2;
    huge_extra.extend([0xff, 0xff]);
    huge_extra.extend(&member[FIXED_HEADER_LEN..]);
    // A stored block that declares 65535 bytes and holds 10.
    let mut huge_stored = member[..FIXED_HEADER_LEN].to_vec();
    huge_stored.extend([1, 0xff, 0xff, 0, 0]);
    huge_stored.extend([7; 10]);
    // A trailer whose ISIZE claims 4 GiB.
    let mut huge_isize = gzip(b"small", 6);
    let at = huge_isize.len() - 4;
    huge_isize[at..].copy_from_slice(&u32::MAX.to_le_bytes());
    let inputs = [
        Vec::new(),
        vec![0x1f],
        vec![0x1f, 0x8b],
        vec![0x1f, 0x8b, 8],
        vec![0; 100_000],
        vec![0xff; 100_000],
        [&[0x1f, 0x8b, 8, 0][..], &[0; 100_000]].concat(),
        noise(1, 100_000),
        [&member[..FIXED_HEADER_LEN], &noise(2, 100_000)].concat(),
        huge_extra,
        huge_stored,
        huge_isize,
    ];
    for (i, input) in inputs.iter().enumerate() {
        assert!(ours(input, 1 << 20).is_err(), "input {i} accepted");
        agrees_with_flate2(input, 1 << 20).unwrap();
    }
}

/// Pages the calling thread has touched for the first time so far (its
/// minor faults), or None off Linux.
fn pages_touched_by_this_thread() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // minflt is the 10th field; the 2nd, the command, may hold spaces.
    let after_command = stat.rsplit_once(')')?.1;
    after_command.split_whitespace().nth(7)?.parse().ok()
}

/// flate2 zeroes all the room it is handed. Handing zlib all of a large
/// buffer's spare capacity made every cut-off stream cost as much as the
/// buffer: a receiver's reused buffer, or 64 MiB set aside from the
/// random "size" a cut-off stream ends in.
#[test]
fn a_cut_off_stream_touches_no_more_memory_than_it_inflates() {
    const PAGE: u64 = 4096;
    let whole = gzip(&profile_like(8 << 20), 6);
    let cut = &whole[..whole.len() / 2];
    let mut out = Vec::with_capacity(256 << 20);
    let mut inflater = Decompress::new(false);
    let Some(before) = pages_touched_by_this_thread() else {
        profbridge_testkit::missing_prerequisite(
            "/proc/thread-self/stat (Linux's procfs)",
            "counting the pages inflating a cut-off stream touches",
        );
        return;
    };
    let result = gunzip_into(cut, &mut out, 512 << 20, &mut inflater);
    let touched = pages_touched_by_this_thread().unwrap() - before;
    assert!(matches!(result, Err(GunzipError::Corrupt(_))), "{result:?}");
    assert!(
        out.len() > 1 << 20,
        "half the stream inflates to {} bytes",
        out.len()
    );
    assert!(
        touched * PAGE <= 2 * out.len() as u64 + (1 << 20),
        "{} KiB touched to inflate {} KiB",
        (touched * PAGE) >> 10,
        out.len() >> 10
    );
}

#[test]
fn own_gzip_output_inflates_to_its_input_past_64_kib() {
    let inputs = [
        profile_like(300_000),
        noise(3, 300_000),
        vec![b'a'; 200_000],
        Vec::new(),
        [noise(4, 70_000), profile_like(70_000)].concat(),
    ];
    for level in [0, 1, 6, 9] {
        let mut compressor = GzipCompressor::new(level);
        let mut out = Vec::new();
        for input in &inputs {
            compressor.compress_into(input, &mut out).unwrap();
            assert_eq!(&flate2s(&out).unwrap(), input, "level {level}");
            assert_eq!(&ours(&out, input.len()).unwrap(), input, "level {level}");
        }
    }
}

/// Bytes of a small alphabet in runs, so that inputs above 64 KiB still
/// compress into matches at every distance.
fn large_input() -> impl Strategy<Value = Vec<u8>> {
    (any::<u64>(), 64usize << 10..256 << 10, 0u8..3).prop_map(|(seed, len, kind)| match kind {
        0 => noise(seed, len),
        1 => {
            let mut rng = SeededRng::new(seed);
            let mut bytes = Vec::with_capacity(len);
            while bytes.len() < len {
                let run = 1 + rng.below(300);
                let byte = rng.below(4) as u8;
                bytes.extend(std::iter::repeat_n(byte, run));
            }
            bytes.truncate(len);
            bytes
        }
        _ => profile_like(len),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(192, 12)))]

    #[test]
    fn large_members_decompress_as_flate2_does(
        inputs in prop::collection::vec((large_input(), 0u32..10), 1..3),
    ) {
        let gzipped: Vec<u8> = inputs.iter().flat_map(|(bytes, level)| gzip(bytes, *level)).collect();
        let expected: Vec<u8> = inputs.iter().flat_map(|(bytes, _)| bytes.clone()).collect();
        prop_assert_eq!(ours(&gzipped, usize::MAX).unwrap(), expected.clone());
        prop_assert_eq!(flate2s(&gzipped).unwrap(), expected.clone());
        // The limit holds at, under and well under the size.
        for limit in [expected.len(), expected.len().saturating_sub(1), expected.len() / 3] {
            agrees_with_flate2(&gzipped, limit)?;
        }
    }

    #[test]
    fn damaged_large_members_are_refused_as_flate2_refuses_them(
        input in large_input(),
        level in 0u32..10,
        seed in any::<u64>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let gzipped = gzip(&input, level);
        agrees_with_flate2(&SeededRng::new(seed).mutate(&gzipped), usize::MAX)?;
        agrees_with_flate2(&gzipped[..cut.index(gzipped.len() + 1)], usize::MAX)?;
    }

    #[test]
    fn own_gzip_of_large_input_inflates_back(input in large_input(), level in 0u32..10) {
        let mut out = Vec::new();
        GzipCompressor::new(level).compress_into(&input, &mut out).unwrap();
        prop_assert_eq!(flate2s(&out).unwrap(), input);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(1024, 64)))]

    #[test]
    fn decompresses_what_flate2_does(
        chunks in prop::collection::vec(
            (prop::collection::vec(0u8..4, 0..5000), 0u32..10),
            1..4,
        ),
    ) {
        let input: Vec<u8> = chunks.iter().flat_map(|(bytes, level)| gzip(bytes, *level)).collect();
        let expected: Vec<u8> = chunks.iter().flat_map(|(bytes, _)| bytes.clone()).collect();
        prop_assert_eq!(ours(&input, usize::MAX).unwrap(), expected.clone());
        prop_assert_eq!(flate2s(&input).unwrap(), expected);
    }

    #[test]
    fn mutated_input_never_panics_and_stays_within_the_limit(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
    ) {
        let mut input = gzip(&profile_like(20_000), 6);
        for (at, bit) in flips {
            let at = at.index(input.len());
            input[at] ^= 1 << bit;
        }
        if let Ok(out) = ours(&input, 30_000) {
            prop_assert!(out.len() <= 30_000);
        }
    }

    #[test]
    fn random_bytes_are_refused_as_flate2_refuses_them(
        bytes in prop::collection::vec(any::<u8>(), 0..2000),
        gzip_magic in any::<bool>(),
    ) {
        let input = if gzip_magic { [&[0x1f, 0x8b, 8][..], &bytes].concat() } else { bytes };
        agrees_with_flate2(&input, 1 << 20)?;
    }
}
