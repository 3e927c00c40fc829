//! How a request is stored in a segment:
//!
//! ```text
//! record  = length (u32 LE) | crc32 (u32 LE) of length and payload | payload
//! payload = version 1 (u8) | received_at, Unix nanoseconds (u64 LE) | OTLP protobuf request
//! ```
//!
//! The protobuf is the bytes the request arrived as while it is unchanged
//! since, so that it is forwarded as it arrived after a restart too.

use std::io::{self, Read};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use profbridge_translate::decode_request;
use prost::Message;

use crate::pipeline::Profiles;

pub const HEADER_BYTES: u64 = 8;
const PAYLOAD_VERSION: u8 = 1;
const PAYLOAD_PREFIX: usize = 9;

/// The framed record for `batch`.
pub fn encode(batch: &Profiles) -> io::Result<Vec<u8>> {
    let received_nanos = batch
        .received_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    let mut payload = Vec::with_capacity(PAYLOAD_PREFIX + batch.encoded_size);
    payload.push(PAYLOAD_VERSION);
    payload.extend_from_slice(&received_nanos.to_le_bytes());
    match batch.received_protobuf() {
        Some(protobuf) => payload.extend_from_slice(protobuf),
        None => batch
            .request()
            .encode(&mut payload)
            .map_err(|error| io::Error::other(error.to_string()))?,
    }
    frame(&payload)
}

/// `payload` with its length and checksum in front.
pub fn frame(payload: &[u8]) -> io::Result<Vec<u8>> {
    let length = u32::try_from(payload.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a {} byte request is too large to store", payload.len()),
        )
    })?;
    let length_bytes = length.to_le_bytes();
    let mut record = Vec::with_capacity(payload.len() + 8);
    record.extend_from_slice(&length_bytes);
    record.extend_from_slice(&checksum(&length_bytes, payload).to_le_bytes());
    record.extend_from_slice(payload);
    Ok(record)
}

fn checksum(length: &[u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(length);
    hasher.update(payload);
    hasher.finalize()
}

/// The request a payload holds, with the protobuf it decodes from for
/// exporters to send as it is.
pub fn decode(payload: Vec<u8>) -> io::Result<Profiles> {
    let corrupt = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let payload = Bytes::from(payload);
    let (prefix, protobuf) = payload
        .split_at_checked(PAYLOAD_PREFIX)
        .ok_or_else(|| corrupt("a record shorter than its header".to_owned()))?;
    let (version, nanos) = prefix
        .split_first()
        .ok_or_else(|| corrupt("an empty record".to_owned()))?;
    if *version != PAYLOAD_VERSION {
        return Err(corrupt(format!("unknown record version {version}")));
    }
    let nanos = <[u8; 8]>::try_from(nanos)
        .map(u64::from_le_bytes)
        .map_err(|_| corrupt("a record without its time".to_owned()))?;
    let request = decode_request(protobuf)
        .map_err(|error| corrupt(format!("not an OTLP request: {error}")))?;
    let mut batch = Profiles::received(request, payload.slice(PAYLOAD_PREFIX..), None);
    batch.received_at = UNIX_EPOCH + Duration::from_nanos(nanos);
    Ok(batch)
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
    use super::*;

    fn batch() -> Profiles {
        use profbridge_translate::otlp::{
            ExportProfilesServiceRequest, Profile, ResourceProfiles, ScopeProfiles,
        };
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
        let record = encode(&original).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload.clone()).unwrap();
        assert_eq!(back.request(), original.request());
        assert!(back.validation().is_none());
    }

    #[test]
    fn a_received_batch_is_stored_and_comes_back_as_the_bytes_it_arrived_as() {
        let request = profbridge_testkit::ebpf_like_request(5, 1);
        // Bytes our encoder would not write: a field it does not know.
        let mut arrived = request.encode_to_vec();
        arrived.extend_from_slice(&[0xf8, 0x3f, 0x01]);
        let arrived = Bytes::from(arrived);
        let original = Profiles::received(request, arrived.clone(), None);
        let record = encode(&original).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload).unwrap();
        assert_eq!(back.request(), original.request());
        assert_eq!(back.received_protobuf(), Some(&arrived));
        assert_eq!(back.protobuf(), arrived);
    }

    #[test]
    fn a_batch_round_trips_with_its_time() {
        let original = batch();
        let record = encode(&original).unwrap();
        let payload = read_payload(&mut record.as_slice(), record.len() as u64).unwrap();
        let back = decode(payload.clone()).unwrap();
        assert_eq!(back.request(), original.request());
        assert_eq!(back.received_at, original.received_at);
        assert_eq!(back.encoded_size, original.encoded_size);
    }

    #[test]
    fn a_flipped_bit_anywhere_is_caught() {
        let record = encode(&batch()).unwrap();
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
