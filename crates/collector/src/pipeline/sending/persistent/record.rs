//! How a request is stored in a segment:
//!
//! ```text
//! record     = length (u32 LE) | crc32 (u32 LE) of length and payload | payload
//! payload    = version 1 (u8) | received_at | OTLP protobuf request
//!            | version 2 (u8) | received_at | compression (u8: 1 gzip, 2 zstd) | compressed OTLP protobuf request
//! received_at = Unix nanoseconds (u64 LE)
//! ```
//!
//! A request unchanged since it arrived is stored as it arrived: as the
//! compressed message (version 2) when the exporter sends that
//! compression, or when its protobuf was not kept; else as its protobuf,
//! which comes back without decompressing. A compressed record comes back
//! with both forms, so that it is forwarded as it arrived after a restart
//! too. Version 1 records, all that earlier releases wrote, are read as
//! ever.

use std::io::{self, Read};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use profbridge_pprof::{gunzip_into, gzip_trailer_size};
use profbridge_translate::decode_request;
use prost::Message;

use crate::pipeline::{Profiles, Received};
use crate::protocol::compression::Compression;

pub const HEADER_BYTES: u64 = 8;
const HEADER_LEN: usize = 8;
const PROTOBUF_VERSION: u8 = 1;
const COMPRESSED_VERSION: u8 = 2;
/// The version and the time.
const PAYLOAD_PREFIX: usize = 9;
const GZIP: u8 = 1;
const ZSTD: u8 = 2;
/// The most set aside up front for a decompressed request.
const MAX_PREALLOCATION: usize = 64 << 20;

/// The framed record for `batch`, for an exporter that sends protobuf
/// compressed with `sends` (see [`crate::pipeline::Export::protobuf_compression`]).
pub fn encode(batch: &Profiles, sends: Option<Compression>) -> io::Result<Vec<u8>> {
    let received_nanos = batch
        .received_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    let received = batch.as_received();
    let compressed = received.and_then(|received| {
        let tag = match received.arrived() {
            Compression::Gzip => GZIP,
            Compression::Zstd => ZSTD,
            Compression::Identity => return None,
        };
        let wanted = sends == Some(received.arrived()) || received.protobuf_bytes().is_none();
        wanted.then_some((tag, received.compressed_bytes()?))
    });
    let size = compressed.map_or(batch.encoded_size, |(_, bytes)| bytes.len() + 1);
    // The header is filled in once the payload is written after it.
    let mut record = Vec::with_capacity(HEADER_LEN + PAYLOAD_PREFIX + size);
    record.extend_from_slice(&[0; HEADER_LEN]);
    let version = if compressed.is_some() {
        COMPRESSED_VERSION
    } else {
        PROTOBUF_VERSION
    };
    record.push(version);
    record.extend_from_slice(&received_nanos.to_le_bytes());
    match (compressed, batch.received_protobuf()) {
        (Some((tag, bytes)), _) => {
            record.push(tag);
            record.extend_from_slice(bytes);
        }
        (None, Some(protobuf)) => record.extend_from_slice(protobuf),
        (None, None) => batch
            .request()
            .encode(&mut record)
            .map_err(|error| io::Error::other(error.to_string()))?,
    }
    seal(record)
}

/// `payload` with its length and checksum in front.
#[cfg(test)]
pub fn frame(payload: &[u8]) -> io::Result<Vec<u8>> {
    let mut record = Vec::with_capacity(HEADER_LEN + payload.len());
    record.extend_from_slice(&[0; HEADER_LEN]);
    record.extend_from_slice(payload);
    seal(record)
}

/// Fills in the header of `record`, a zeroed header and the payload.
fn seal(mut record: Vec<u8>) -> io::Result<Vec<u8>> {
    let (header, payload) = record.split_at_mut(HEADER_LEN);
    let length = u32::try_from(payload.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a {} byte request is too large to store", payload.len()),
        )
    })?;
    let length_bytes = length.to_le_bytes();
    let crc = checksum(&length_bytes, payload).to_le_bytes();
    let (length_field, crc_field) = header.split_at_mut(4);
    length_field.copy_from_slice(&length_bytes);
    crc_field.copy_from_slice(&crc);
    Ok(record)
}

fn checksum(length: &[u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(length);
    hasher.update(payload);
    hasher.finalize()
}

/// The request a payload holds, with the bytes it arrived as for
/// exporters to send as they are.
pub fn decode(payload: Vec<u8>) -> io::Result<Profiles> {
    let corrupt = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let payload = Bytes::from(payload);
    let (prefix, rest) = payload
        .split_at_checked(PAYLOAD_PREFIX)
        .ok_or_else(|| corrupt("a record shorter than its header".to_owned()))?;
    let (version, nanos) = prefix
        .split_first()
        .ok_or_else(|| corrupt("an empty record".to_owned()))?;
    let nanos = <[u8; 8]>::try_from(nanos)
        .map(u64::from_le_bytes)
        .map_err(|_| corrupt("a record without its time".to_owned()))?;
    let received = match *version {
        PROTOBUF_VERSION => Received::protobuf(payload.slice(PAYLOAD_PREFIX..)),
        COMPRESSED_VERSION => {
            let (tag, _) = rest
                .split_first()
                .ok_or_else(|| corrupt("a compressed record without its compression".to_owned()))?;
            let compression = match *tag {
                GZIP => Compression::Gzip,
                ZSTD => Compression::Zstd,
                other => return Err(corrupt(format!("unknown record compression {other}"))),
            };
            let compressed = payload.slice(PAYLOAD_PREFIX + 1..);
            let protobuf = decompress(compression, &compressed)
                .map_err(|error| corrupt(format!("cannot decompress a record: {error}")))?;
            Received::compressed(compression, Some(compressed), Some(Bytes::from(protobuf)))
        }
        other => return Err(corrupt(format!("unknown record version {other}"))),
    };
    let protobuf = received
        .protobuf_bytes()
        .cloned()
        .ok_or_else(|| corrupt("a record without a request".to_owned()))?;
    let request = decode_request(&protobuf)
        .map_err(|error| corrupt(format!("not an OTLP request: {error}")))?;
    let mut batch = Profiles::received(request, protobuf.len(), received, None);
    batch.received_at = UNIX_EPOCH + Duration::from_nanos(nanos);
    Ok(batch)
}

/// A stored message's protobuf. No limit: what is stored was taken in
/// within the receiver's.
fn decompress(compression: Compression, compressed: &[u8]) -> io::Result<Vec<u8>> {
    match compression {
        Compression::Gzip => {
            let expected = gzip_trailer_size(compressed).unwrap_or(compressed.len());
            let mut out = Vec::with_capacity(expected.min(MAX_PREALLOCATION));
            let mut inflater = flate2::Decompress::new(false);
            gunzip_into(compressed, &mut out, usize::MAX, &mut inflater)
                .map_err(|error| io::Error::other(format!("gzip: {error}")))?;
            Ok(out)
        }
        Compression::Zstd => zstd::stream::decode_all(compressed),
        Compression::Identity => Ok(compressed.to_vec()),
    }
}

/// Reads one record of `stored` bytes (header included) and checks it;
/// a record that does not check out is `InvalidData`.
pub fn read_payload(reader: &mut impl Read, stored: u64) -> io::Result<Vec<u8>> {
    let mut header = [0_u8; 8];
    reader.read_exact(&mut header)?;
    let (length, crc) = split_header(header);
    if u64::from(length) + HEADER_BYTES != stored {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the record's length changed on disk",
        ));
    }
    let mut payload = vec![0_u8; length as usize];
    reader.read_exact(&mut payload)?;
    if checksum(&length.to_le_bytes(), &payload) != crc {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the record's checksum does not match",
        ));
    }
    Ok(payload)
}

fn split_header(header: [u8; 8]) -> (u32, u32) {
    let [a, b, c, d, e, f, g, h] = header;
    (
        u32::from_le_bytes([a, b, c, d]),
        u32::from_le_bytes([e, f, g, h]),
    )
}

/// Where a record starts in its segment, and its size with the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub offset: u64,
    pub stored: u64,
}

/// What reading a whole segment found.
#[derive(Debug, Default)]
pub struct Scan {
    pub records: Vec<Located>,
    /// Why reading stopped before the end of the file, and where.
    pub bad_tail: Option<(u64, String)>,
}

/// Reads every record of a segment of `file_length` bytes, checking each;
/// stops at the first torn or corrupt record, since nothing after it can
/// be trusted to start where its length says.
pub fn scan(reader: &mut impl Read, file_length: u64) -> io::Result<Scan> {
    let mut scan = Scan::default();
    let mut offset = 0_u64;
    let mut payload = Vec::new();
    while offset < file_length {
        let remaining = file_length - offset;
        if remaining < HEADER_BYTES {
            scan.bad_tail = Some((offset, format!("{remaining} bytes of a torn record header")));
            break;
        }
        let mut header = [0_u8; 8];
        reader.read_exact(&mut header)?;
        let (length, crc) = split_header(header);
        if u64::from(length) > remaining - HEADER_BYTES {
            scan.bad_tail = Some((
                offset,
                format!(
                    "a record of {length} bytes with only {} left: torn or corrupt",
                    remaining - HEADER_BYTES
                ),
            ));
            break;
        }
        payload.resize(length as usize, 0);
        reader.read_exact(&mut payload)?;
        if checksum(&length.to_le_bytes(), &payload) != crc {
            scan.bad_tail = Some((offset, "a record whose checksum does not match".to_owned()));
            break;
        }
        let stored = u64::from(length) + HEADER_BYTES;
        scan.records.push(Located { offset, stored });
        offset += stored;
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use profbridge_translate::otlp::ExportProfilesServiceRequest;

    use super::*;

    fn batch() -> Profiles {
        use profbridge_translate::otlp::{Profile, ResourceProfiles, ScopeProfiles};
        let profile = Profile {
            time_unix_nano: 1_700_000_000_000_000_000,
            ..Profile::default()
        };
        let request = ExportProfilesServiceRequest {
            resource_profiles: vec![ResourceProfiles {
                scope_profiles: vec![ScopeProfiles {
                    profiles: vec![profile; 3],
                    ..ScopeProfiles::default()
                }],
                ..ResourceProfiles::default()
            }],
            dictionary: None,
        };
        let size = request.encoded_len();
        Profiles::new(request, size)
    }

    /// What comes back from disk is validated again by its exporters.
    #[test]
    fn a_stored_batch_does_not_come_back_as_validated() {
        let request = profbridge_testkit::ebpf_like_request(5, 1);
        let validation = profbridge_translate::validate_request(&request).unwrap();
        let original = Profiles::validated(request, 100, validation);
        let record = encode(&original, None).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload.clone()).unwrap();
        assert_eq!(back.request(), original.request());
        assert!(back.validation().is_none());
    }

    /// The request, and bytes our encoder would not write for it: a
    /// field it does not know.
    fn arrived() -> (ExportProfilesServiceRequest, Bytes) {
        let request = profbridge_testkit::ebpf_like_request(5, 1);
        let mut arrived = request.encode_to_vec();
        arrived.extend_from_slice(&[0xf8, 0x3f, 0x01]);
        (request, Bytes::from(arrived))
    }

    fn round_trip(batch: &Profiles) -> (Vec<u8>, Profiles) {
        let record = encode(batch, None).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload).unwrap();
        assert_eq!(back.request(), batch.request());
        assert_eq!(back.received_at, batch.received_at);
        (record, back)
    }

    #[test]
    fn a_received_batch_is_stored_and_comes_back_as_the_bytes_it_arrived_as() {
        let (request, arrived) = arrived();
        let original = Profiles::received(
            request,
            arrived.len(),
            Received::protobuf(arrived.clone()),
            None,
        );
        let (_, back) = round_trip(&original);
        assert_eq!(back.received_protobuf(), Some(&arrived));
        assert_eq!(back.protobuf(), arrived);
    }

    #[test]
    fn a_compressed_batch_is_stored_compressed_and_comes_back_in_both_forms() {
        use std::io::Write;

        let (request, arrived) = arrived();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(&arrived).unwrap();
        let gzipped = Bytes::from(gzip.finish().unwrap());
        let zstd = Bytes::from(zstd::bulk::compress(&arrived, 3).unwrap());
        for (compression, compressed) in [(Compression::Gzip, gzipped), (Compression::Zstd, zstd)] {
            // Kept without the protobuf, as a receiver does when only the
            // queue and exporters of the same compression want it.
            let original = Profiles::received(
                request.clone(),
                arrived.len(),
                Received::compressed(compression, Some(compressed.clone()), None),
                None,
            );
            let (record, back) = round_trip(&original);
            assert!(
                record.len() < HEADER_LEN + PAYLOAD_PREFIX + 1 + compressed.len() + 1,
                "{compression:?}: stored compressed"
            );
            let received = back.as_received().unwrap();
            assert_eq!(received.arrived(), compression);
            assert_eq!(received.compressed_bytes(), Some(&compressed));
            assert_eq!(back.received_protobuf(), Some(&arrived));
        }
    }

    /// With both forms kept, the record holds the one its exporter sends:
    /// the compressed message for its compression, else the protobuf,
    /// which comes back without decompressing.
    #[test]
    fn the_form_stored_is_the_one_the_exporter_sends() {
        let (request, arrived) = arrived();
        let zstd = Bytes::from(zstd::bulk::compress(&arrived, 3).unwrap());
        let original = Profiles::received(
            request,
            arrived.len(),
            Received::compressed(Compression::Zstd, Some(zstd.clone()), Some(arrived.clone())),
            None,
        );
        for (sends, stored_compressed) in [
            (Some(Compression::Zstd), true),
            (Some(Compression::Gzip), false),
            (Some(Compression::Identity), false),
            (None, false),
        ] {
            let record = encode(&original, sends).unwrap();
            let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
            assert_eq!(
                payload[0] == COMPRESSED_VERSION,
                stored_compressed,
                "{sends:?}"
            );
            let back = decode(payload).unwrap();
            assert_eq!(back.received_protobuf(), Some(&arrived));
            let compressed = back.as_received().and_then(|r| r.compressed_bytes());
            assert_eq!(compressed, stored_compressed.then_some(&zstd), "{sends:?}");
        }
    }

    /// What earlier releases wrote: version 1, the protobuf.
    #[test]
    fn version_1_records_still_come_back() {
        let (request, arrived) = arrived();
        let mut payload = vec![1];
        payload.extend_from_slice(&1_700_000_000_000_000_000_u64.to_le_bytes());
        payload.extend_from_slice(&arrived);
        let record = frame(&payload).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload).unwrap();
        assert_eq!(back.request(), &request);
        assert_eq!(back.received_protobuf(), Some(&arrived));
        assert_eq!(
            back.received_at,
            UNIX_EPOCH + Duration::from_nanos(1_700_000_000_000_000_000)
        );
    }

    #[test]
    fn a_batch_round_trips_with_its_time() {
        let original = batch();
        let record = encode(&original, None).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload.clone()).unwrap();
        assert_eq!(back.request(), original.request());
        assert_eq!(back.received_at, original.received_at);
        assert_eq!(back.encoded_size, original.encoded_size);
    }

    #[test]
    fn a_flipped_bit_anywhere_is_caught() {
        let record = encode(&batch(), None).unwrap();
        for at in 0..record.len() {
            let mut broken = record.clone();
            broken[at] ^= 0x10;
            let read = read_payload(&mut broken.as_slice(), record.len() as u64);
            assert!(read.is_err(), "byte {at}");
            let found = scan(&mut broken.as_slice(), broken.len() as u64).unwrap();
            assert!(
                found.records.is_empty() && found.bad_tail.is_some(),
                "byte {at}"
            );
        }
    }
}
