//! Decompressing OTLP requests, and how large a request will be once
//! decompressed: requests are admitted on that estimate, so that a refused
//! one costs no decompression.

use std::io::Read;

use bytes::Bytes;

use super::decompressed::{Decompressed, DecompressedBuffers};
use crate::protocol::compression::Compression;
use profbridge_pprof::{gunzip_into, gzip_trailer_size, GunzipError};

/// How many times its zstd encoding a request is taken to be when the
/// frame does not say (streaming encoders, tonic's among them, leave the
/// content size out). Profiles compress by about this much or more; a
/// request larger than estimated is caught by [`crate::receivers::intake::Admission::cover`].
const ZSTD_RATIO_WHEN_UNKNOWN: usize = 4;

/// The most set aside up front for a decompressed request.
const MAX_PREALLOCATION: usize = 64 << 20;

/// About how many bytes `compressed` decompresses to, from what its format
/// declares, never more than `limit` (what decompressing it may produce):
/// the declared size is the sender's word.
pub fn decompressed_size_estimate(
    compression: Compression,
    compressed: &[u8],
    limit: usize,
) -> usize {
    let estimate = match compression {
        Compression::Identity => compressed.len(),
        // ISIZE: the size, modulo 2^32, of the last member only.
        Compression::Gzip => gzip_trailer_size(compressed).unwrap_or(compressed.len()),
        Compression::Zstd => zstd_content_size(compressed)
            .unwrap_or_else(|| compressed.len().saturating_mul(ZSTD_RATIO_WHEN_UNKNOWN)),
    };
    estimate.min(limit)
}

/// The content size the first zstd frame header declares, if it does.
fn zstd_content_size(compressed: &[u8]) -> Option<usize> {
    let size = zstd::zstd_safe::get_frame_content_size(compressed).ok()??;
    Some(usize::try_from(size).unwrap_or(usize::MAX))
}

#[derive(Debug)]
pub enum DecompressError {
    /// It decompresses to more than the limit.
    TooLarge,
    /// It is not valid in its compression.
    Corrupt(std::io::Error),
}

/// Decompresses `compressed` within `limit` bytes of output, into a buffer
/// from `buffers` (give it back once the request is decoded).
pub fn decompress(
    compression: Compression,
    compressed: Bytes,
    limit: usize,
    buffers: &DecompressedBuffers,
) -> Result<Decompressed, DecompressError> {
    let read_limit = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    if compression == Compression::Identity {
        return if compressed.len() > limit {
            Err(DecompressError::TooLarge)
        } else {
            Ok(Decompressed::Body(compressed))
        };
    }
    // Sized once from what the request declares (a lie costs at most the
    // cap), instead of grown by doubling.
    let expected = decompressed_size_estimate(compression, &compressed, limit);
    let mut out = buffers.take();
    out.reserve(expected.min(MAX_PREALLOCATION));
    let error = if compression == Compression::Gzip {
        let mut inflater = buffers.take_inflater();
        let result = gunzip_into(&compressed, &mut out, limit, &mut inflater);
        buffers.keep_inflater(inflater);
        match result {
            Ok(()) => None,
            Err(GunzipError::TooLarge) => Some(DecompressError::TooLarge),
            Err(GunzipError::Corrupt(error)) => Some(DecompressError::Corrupt(
                std::io::Error::new(error.kind(), format!("gzip: {error}")),
            )),
        }
    } else {
        let read = zstd::stream::read::Decoder::new(compressed.as_ref())
            .and_then(|decoder| decoder.take(read_limit).read_to_end(&mut out));
        match read {
            Err(error) => Some(DecompressError::Corrupt(error)),
            Ok(_) if out.len() > limit => Some(DecompressError::TooLarge),
            Ok(_) => None,
        }
    };
    match error {
        Some(error) => {
            buffers.keep(out);
            Err(error)
        }
        None => Ok(Decompressed::Buffer(out)),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// zstd as tonic and other streaming encoders write it: no content size.
    fn zstd_streamed(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn gzip_is_estimated_from_its_isize_trailer() {
        let payload = vec![7u8; 100_000];
        let compressed = gzip(&payload);
        assert!(compressed.len() < 1_000);
        assert_eq!(
            decompressed_size_estimate(Compression::Gzip, &compressed, 1 << 20),
            100_000
        );
    }

    #[test]
    fn a_declared_size_is_never_trusted_past_the_limit() {
        let mut lying = gzip(b"small");
        let trailer = lying.len() - 4;
        lying[trailer..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decompressed_size_estimate(Compression::Gzip, &lying, 5_000),
            5_000
        );
        let zstd = zstd::bulk::compress(&[0u8; 100_000], 3).unwrap();
        assert_eq!(
            decompressed_size_estimate(Compression::Zstd, &zstd, 5_000),
            5_000
        );
    }

    #[test]
    fn gzip_of_multiple_members_is_estimated_from_the_last_one() {
        let mut two = gzip(&vec![1u8; 50_000]);
        two.extend(gzip(&[2u8; 10]));
        assert_eq!(
            decompressed_size_estimate(Compression::Gzip, &two, 1 << 20),
            10
        );
        assert_eq!(
            decompress(
                Compression::Gzip,
                Bytes::from(two),
                1 << 20,
                &DecompressedBuffers::default()
            )
            .unwrap()
            .len(),
            50_010
        );
    }

    #[test]
    fn zstd_is_estimated_from_its_frame_content_size_when_declared() {
        let compressed = zstd::bulk::compress(&[3u8; 100_000], 3).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&compressed).ok(),
            Some(Some(100_000)),
            "one-shot compression declares the content size"
        );
        assert_eq!(
            decompressed_size_estimate(Compression::Zstd, &compressed, 1 << 20),
            100_000
        );
    }

    #[test]
    fn zstd_without_content_size_is_a_multiple_of_its_length_within_the_limit() {
        let compressed = zstd_streamed(&vec![3u8; 100_000]);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&compressed).ok(),
            Some(None)
        );
        assert_eq!(
            decompressed_size_estimate(Compression::Zstd, &compressed, 1 << 20),
            compressed.len() * ZSTD_RATIO_WHEN_UNKNOWN
        );
        assert_eq!(
            decompressed_size_estimate(Compression::Zstd, &compressed, 10),
            10
        );
    }

    #[test]
    fn identity_and_short_or_garbled_input_are_estimated_as_their_length() {
        assert_eq!(
            decompressed_size_estimate(Compression::Identity, b"12345", 100),
            5
        );
        assert_eq!(
            decompressed_size_estimate(Compression::Gzip, b"123", 100),
            3
        );
        assert_eq!(
            decompressed_size_estimate(Compression::Zstd, b"not zstd", 100),
            8 * ZSTD_RATIO_WHEN_UNKNOWN
        );
    }

    #[test]
    fn decompression_stays_within_the_limit() {
        let payload = vec![5u8; 10_000];
        let buffers = DecompressedBuffers::default();
        for (compression, compressed) in [
            (Compression::Identity, payload.clone()),
            (Compression::Gzip, gzip(&payload)),
            (Compression::Zstd, zstd_streamed(&payload)),
        ] {
            let compressed = Bytes::from(compressed);
            let out = decompress(compression, compressed.clone(), 10_000, &buffers).unwrap();
            assert_eq!(&*out, payload.as_slice(), "{compression:?}");
            buffers.give_back(out);
            assert!(
                matches!(
                    decompress(compression, compressed, 9_999, &buffers),
                    Err(DecompressError::TooLarge)
                ),
                "{compression:?}"
            );
        }
        assert!(matches!(
            decompress(
                Compression::Gzip,
                Bytes::from_static(b"not gzip"),
                100,
                &buffers
            ),
            Err(DecompressError::Corrupt(_))
        ));
    }
}
