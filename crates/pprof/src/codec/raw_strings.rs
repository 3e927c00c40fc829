//! Strings that are not UTF-8. google/pprof (Go) reads a string table of
//! byte strings; the prost types hold `String`s. Decoding replaces each
//! invalid sequence with U+FFFD (as `String::from_utf8_lossy` does) and
//! keeps the original bytes of those strings here, for the callers that
//! must write them back (the encoder, the dump).
//!
//! The slow path only runs when prost refused the input: the top-level
//! message is scanned for field 6 (`string_table`), the strings taken out
//! lossily, and prost decodes the rest, so every other field (and every
//! error) is prost's.

use prost::bytes::Buf;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use prost::Message;

use crate::Profile;

/// `Profile.string_table`'s field number.
const STRING_TABLE: u32 = 6;

/// The original bytes of the string-table entries that were not UTF-8,
/// sorted by index. Empty for nearly every profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawStrings {
    entries: Vec<(usize, Vec<u8>)>,
}

impl RawStrings {
    /// No string was replaced.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many strings were not UTF-8 (and hold U+FFFD in the profile).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// (index, original bytes), by index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.entries
            .iter()
            .map(|(index, bytes)| (*index, bytes.as_slice()))
    }

    /// The original bytes of entry `index`, if it was not UTF-8.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        self.entries
            .binary_search_by_key(&index, |(i, _)| *i)
            .ok()
            .and_then(|at| self.entries.get(at))
            .map(|(_, bytes)| bytes.as_slice())
    }

    /// The bytes of each entry of `table`: the original ones where they
    /// were kept and `table` still holds their lossy form (so originals
    /// never replace a string that was changed since decoding), else the
    /// table's.
    pub fn bytes_of<'a>(&'a self, table: &'a [String]) -> Vec<&'a [u8]> {
        let mut out: Vec<&[u8]> = table.iter().map(String::as_bytes).collect();
        for (index, raw) in self.iter() {
            if let (Some(slot), Some(text)) = (out.get_mut(index), table.get(index)) {
                if String::from_utf8_lossy(raw) == text.as_str() {
                    *slot = raw;
                }
            }
        }
        out
    }

    /// Records entry `index` (added in increasing index order).
    fn push(&mut self, index: usize, bytes: Vec<u8>) {
        self.entries.push((index, bytes));
    }
}

enum Field<'a> {
    /// A `string_table` entry's bytes.
    String(&'a [u8]),
    /// Any other field, skipped.
    Other,
}

/// The next top-level field, or `None` when the bytes are malformed.
fn next_field<'a>(buf: &mut &'a [u8]) -> Option<Field<'a>> {
    let (tag, wire_type) = decode_key(buf).ok()?;
    if tag == STRING_TABLE && wire_type == WireType::LengthDelimited {
        let len = usize::try_from(decode_varint(buf).ok()?).ok()?;
        let string = buf.get(..len)?;
        buf.advance(len);
        Some(Field::String(string))
    } else {
        skip_field(wire_type, tag, buf, DecodeContext::default()).ok()?;
        Some(Field::Other)
    }
}

/// Decodes `bytes`, which prost refused, with strings that are not UTF-8
/// taken lossily: `None` when the scan finds no such string before the
/// first malformed field, so that the caller reports prost's own error.
/// Otherwise prost decodes everything else (from a malformed field on,
/// everything that is left), and any error is prost's for that.
pub(crate) fn decode_lossy(
    bytes: &[u8],
) -> Option<Result<(Profile, RawStrings), prost::DecodeError>> {
    // Most refused inputs are just broken: find that out without copying.
    if !has_invalid_string(bytes) {
        return None;
    }
    let mut buf = bytes;
    let mut table = Vec::new();
    let mut raw = RawStrings::default();
    let mut rest = Vec::with_capacity(bytes.len());
    while buf.has_remaining() {
        let start = bytes.len() - buf.remaining();
        match next_field(&mut buf) {
            Some(Field::String(string)) => match std::str::from_utf8(string) {
                Ok(text) => table.push(text.to_owned()),
                Err(_) => {
                    raw.push(table.len(), string.to_vec());
                    table.push(String::from_utf8_lossy(string).into_owned());
                }
            },
            Some(Field::Other) => {
                let end = bytes.len() - buf.remaining();
                rest.extend_from_slice(bytes.get(start..end)?);
            }
            None => {
                // Malformed from here: prost says why, on what is left.
                rest.extend_from_slice(bytes.get(start..)?);
                break;
            }
        }
    }
    if raw.is_empty() {
        return None;
    }
    Some(Profile::decode(rest.as_slice()).map(|mut profile| {
        profile.string_table = table;
        (profile, raw)
    }))
}

/// Whether a string-table entry that is not UTF-8 comes before the first
/// malformed field; reads without allocating.
fn has_invalid_string(bytes: &[u8]) -> bool {
    let mut buf = bytes;
    while buf.has_remaining() {
        match next_field(&mut buf) {
            Some(Field::String(string)) if std::str::from_utf8(string).is_err() => return true,
            Some(_) => {}
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::codec::wire::put_varint;
    use crate::{
        decode, decode_keeping_raw, dump, dump_bytes, encode, encode_keeping_raw, DecodeError,
        DecodeOptions, EncodeOptions, Function, Line, Location, ValueType,
    };

    const STRINGS: [&[u8]; 8] = [
        b"",
        b"cpu",
        b"caf\xe9",           // Latin-1
        b"a\x80b",            // lone continuation byte
        b"trunc\xe2\x82",     // truncated three-byte sequence
        b"over\xc0\xaf",      // overlong '/'
        b"/src/\xf0\x9f\x98", // truncated four-byte sequence
        b"fine",
    ];

    /// A valid profile whose strings are `strings`, written after the
    /// other fields.
    fn profile_with(strings: &[&[u8]]) -> Vec<u8> {
        let profile = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 7 }],
            location: vec![Location {
                id: 1,
                line: vec![Line {
                    function_id: 1,
                    line: 3,
                    column: 0,
                }],
                ..Location::default()
            }],
            function: vec![Function {
                id: 1,
                name: 2,
                system_name: 3,
                filename: 6,
                start_line: 0,
            }],
            comment: vec![4, 5],
            ..Profile::default()
        };
        let mut bytes = profile.encode_to_vec();
        for string in strings {
            bytes.push(6 << 3 | 2);
            put_varint(&mut bytes, string.len() as u64);
            bytes.extend_from_slice(string);
        }
        bytes
    }

    #[test]
    fn valid_strings_take_the_fast_path_and_keep_nothing() {
        let bytes = profile_with(&[b"", b"cpu", b"f", b"g", b"h", b"i", b"j", b"k"]);
        let (profile, raw) = decode_keeping_raw(&bytes, &DecodeOptions::default()).unwrap();
        assert!(raw.is_empty());
        assert_eq!(profile.string_table[2], "f");
    }

    #[test]
    fn invalid_strings_are_lossy_in_the_profile_and_kept_beside_it() {
        let bytes = profile_with(&STRINGS);
        let (profile, raw) = decode_keeping_raw(&bytes, &DecodeOptions::default()).unwrap();
        let lossy: Vec<String> = STRINGS
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        assert_eq!(profile.string_table, lossy);
        assert_eq!(profile.string_table[5], "over\u{FFFD}\u{FFFD}");
        assert_eq!(raw.len(), 5);
        assert_eq!(
            raw.iter().map(|(i, _)| i).collect::<Vec<_>>(),
            vec![2, 3, 4, 5, 6]
        );
        assert_eq!(raw.get(2), Some(STRINGS[2]));
        assert_eq!(raw.get(7), None);
        // `decode` accepts it too, with the same profile.
        assert_eq!(decode(&bytes, &DecodeOptions::default()).unwrap(), profile);
    }

    #[test]
    fn encoding_writes_the_original_bytes_back() {
        let bytes = profile_with(&STRINGS);
        let (profile, raw) = decode_keeping_raw(&bytes, &DecodeOptions::default()).unwrap();
        let options = EncodeOptions {
            compression: crate::Compression::None,
        };
        let written = encode_keeping_raw(&profile, &raw, &options);
        // The same bytes, in prost's field order.
        let (again, raw_again) = decode_keeping_raw(&written, &DecodeOptions::default()).unwrap();
        assert_eq!(again, profile);
        assert_eq!(raw_again, raw);
        let mut expected = Vec::new();
        crate::wire::write_profile(&profile, &mut expected);
        assert_ne!(written, expected, "the lossy encoding differs");
        // Without originals, or for a table that changed, the table's text.
        assert_eq!(encode(&profile, &options), expected);
        let mut changed = profile.clone();
        changed.string_table[3] = "other".to_owned();
        let (_, raw_changed) = decode_keeping_raw(
            &encode_keeping_raw(&changed, &raw, &options),
            &DecodeOptions::default(),
        )
        .unwrap();
        assert_eq!(raw_changed.len(), 4);
        assert_eq!(raw_changed.get(3), None);
    }

    #[test]
    fn the_dump_prints_the_original_bytes() {
        let bytes = profile_with(&STRINGS);
        let (profile, raw) = decode_keeping_raw(&bytes, &DecodeOptions::default()).unwrap();
        let text = dump_bytes(&profile, &raw).unwrap();
        let expected_line: &[u8] = b"     1: 0x0 caf\xe9 /src/\xf0\x9f\x98:3:0 s=0(a\x80b)\n";
        assert!(
            text.windows(expected_line.len())
                .any(|w| w == expected_line),
            "{}",
            String::from_utf8_lossy(&text)
        );
        assert!(text.starts_with(b"Comment: trunc\xe2\x82\nComment: over\xc0\xaf\n"));
        // The lossy dump is the same text with U+FFFD.
        assert_eq!(dump(&profile).unwrap(), String::from_utf8_lossy(&text));
        assert_eq!(
            dump_bytes(&profile, &RawStrings::default()).unwrap(),
            dump(&profile).unwrap().into_bytes()
        );
    }

    #[test]
    fn other_faults_are_prosts_errors_whole() {
        // Invalid strings and a truncated sample_type: prost's error for
        // the rest.
        let mut bytes = profile_with(&STRINGS);
        bytes.extend_from_slice(&[0x0a, 0x05, 0x08]);
        let error = decode(&bytes, &DecodeOptions::default()).unwrap_err();
        assert!(matches!(error, DecodeError::Protobuf(_)));
        assert_eq!(
            error.to_string(),
            "protobuf: failed to decode Protobuf message: Profile.sample_type: buffer underflow"
        );
        assert!(std::error::Error::source(&error).is_none());
        // A string that runs past the end.
        let mut bytes = profile_with(&STRINGS[..3]);
        bytes.extend_from_slice(&[6 << 3 | 2, 0x10, b'x']);
        let error = decode(&bytes, &DecodeOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "protobuf: failed to decode Protobuf message: Profile.string_table: buffer underflow"
        );
        // Without invalid strings, prost's error as it was.
        let mut bytes = profile_with(&[b"", b"cpu", b"f", b"g", b"h", b"i", b"j", b"k"]);
        bytes.extend_from_slice(&[0x0a, 0x05, 0x08]);
        let error = decode(&bytes, &DecodeOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "protobuf: {}",
                Profile::decode(bytes.as_slice()).unwrap_err()
            )
        );
    }
}
