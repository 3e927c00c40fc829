//! `decode_request` against prost's `ExportProfilesServiceRequest::decode`
//! on requests above 64 KiB and on adversarial bytes: truncated,
//! corrupted, huge declared lengths, zero-length, all-same and random
//! bytes. Equal requests, or the same error. (otlp_decode.rs covers small
//! random requests and hand-written encodings.)
//! `PROFBRIDGE_FULL_SWEEP=1` runs more cases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use prost::encoding::encode_varint;
use prost::Message;

use profbridge_testkit::sweep::proptest_cases;
use profbridge_testkit::{generated_request, SeededRng, StackShape};
use profbridge_translate::decode_request;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

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

/// A generated request encoded, above 64 KiB.
fn large_request(seed: u64, stacks: usize, random_shape: bool) -> Vec<u8> {
    let shape = if random_shape {
        StackShape::Random
    } else {
        StackShape::CallTree
    };
    let bytes = generated_request(shape, stacks, seed).encode_to_vec();
    assert!(bytes.len() > 64 << 10, "{} bytes", bytes.len());
    bytes
}

/// A field 1 or 2 (resource_profiles, dictionary) declaring `len` bytes,
/// followed by `body`.
fn declared(field: u8, len: u64, body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![field << 3 | 2];
    encode_varint(len, &mut bytes);
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn adversarial_bytes_decode_like_prost() {
    let large = large_request(9, 400, false);
    let mut inputs = vec![
        Vec::new(),
        vec![0; 100_000],
        vec![0xff; 100_000],
        vec![0x0a; 100_000],
        vec![0x12; 100_000],
        vec![0x80; 100_000],
        declared(1, 0, &[]),
        declared(2, 0, &[]),
        declared(1, u64::MAX, &[]),
        declared(1, 1 << 40, &large),
        declared(2, (large.len() + 1) as u64, &large),
        declared(1, u64::from(u32::MAX) + 1, &[0; 1000]),
        // Ten continuation bytes: a varint longer than 64 bits.
        [&[0x0a][..], &[0xff; 10], &[0x01]].concat(),
        large[..large.len() - 1].to_vec(),
        large[1..].to_vec(),
        [&large[..], &[0x0a]].concat(),
        [&large[..], &large[..]].concat(),
    ];
    let mut rng = SeededRng::new(17);
    inputs.extend((0..20).map(|_| {
        let len = 64 << 10 | rng.below(64 << 10);
        (0..len).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>()
    }));
    for (i, input) in inputs.iter().enumerate() {
        decodes_like_prost(input).unwrap_or_else(|e| panic!("input {i}: {e}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(128, 8)))]

    #[test]
    fn large_requests_decode_like_prost(
        seed in any::<u64>(),
        stacks in 300..1200usize,
        random_shape in any::<bool>(),
    ) {
        decodes_like_prost(&large_request(seed, stacks, random_shape))?;
    }

    #[test]
    fn damaged_large_requests_decode_like_prost(
        seed in any::<u64>(),
        stacks in 300..800usize,
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        length in prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 31), any::<u64>()],
    ) {
        let bytes = large_request(seed, stacks, seed % 2 == 0);
        let mut rng = SeededRng::new(seed);
        decodes_like_prost(&rng.mutate(&bytes))?;
        decodes_like_prost(&bytes[..cut.index(bytes.len() + 1)])?;
        // A length declared anywhere inside: most often too large.
        let at = at.index(bytes.len());
        let mut lying = bytes[..at].to_vec();
        lying.push(0x0a);
        encode_varint(length, &mut lying);
        lying.extend_from_slice(&bytes[at..]);
        decodes_like_prost(&lying)?;
    }

    #[test]
    fn random_bytes_decode_like_prost(
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
        fill in any::<u8>(),
        len in 0usize..(128 << 10),
    ) {
        decodes_like_prost(&bytes)?;
        decodes_like_prost(&vec![fill; len])?;
    }
}
