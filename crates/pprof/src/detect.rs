//! Format detection: one function from bytes to the format they hold.

use std::borrow::Cow;
use std::fmt;

use thiserror::Error;

use crate::codec::wire::field::profile as profile_field;
use crate::codec::{gunzip, DecodeError, DecodeOptions};
use crate::legacy::{sniff_legacy, LegacyKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// pprof's profile.proto.
    Pprof,
    Legacy(LegacyKind),
    /// `frame;frame;frame value` lines.
    Folded,
    /// An OTLP ExportProfilesServiceRequest, protobuf.
    OtlpProtobuf,
    /// An OTLP ExportProfilesServiceRequest, JSON.
    OtlpJson,
    /// A JFR (Java Flight Recorder) recording: several profiles, read by
    /// profbridge-jfr.
    Jfr,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pprof => f.write_str("pprof"),
            Self::Legacy(kind) => f.write_str(kind.name()),
            Self::Folded => f.write_str("folded stacks"),
            Self::OtlpProtobuf => f.write_str("OTLP protobuf"),
            Self::OtlpJson => f.write_str("OTLP JSON"),
            Self::Jfr => f.write_str("JFR"),
        }
    }
}

/// What the bytes hold, and whether they were gzipped around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    pub format: Format,
    pub gzipped: bool,
}

#[derive(Debug, Error)]
pub enum DetectError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("unrecognized format; tried {}", tried_formats())]
    Unrecognized,
}

fn tried_formats() -> String {
    let mut names = vec!["pprof (gzipped or raw)".to_owned()];
    names.extend(LegacyKind::ALL.iter().map(|kind| kind.name().to_owned()));
    names.extend(["folded stacks", "OTLP protobuf", "OTLP JSON", "JFR"].map(str::to_owned));
    names.join(", ")
}

/// Detects the format of `data`, looking inside gzip.
pub fn detect_format(data: &[u8], options: &DecodeOptions) -> Result<Detected, DetectError> {
    unzip(data, options)?.detect()
}

/// An input with its gzip undone: the one gunzip every reader shares.
#[derive(Debug, Clone)]
pub struct Unzipped<'a> {
    pub gzipped: bool,
    /// The bytes inside the gzip, or the input itself.
    pub bytes: Cow<'a, [u8]>,
}

/// Gunzips `data` within the limits when it starts with gzip's magic.
pub fn unzip<'a>(data: &'a [u8], options: &DecodeOptions) -> Result<Unzipped<'a>, DecodeError> {
    let gzipped = crate::is_gzip(data);
    let bytes = if gzipped {
        Cow::Owned(gunzip(data, options)?)
    } else {
        Cow::Borrowed(data)
    };
    Ok(Unzipped { gzipped, bytes })
}

impl Unzipped<'_> {
    /// The format the bytes hold.
    pub fn detect(&self) -> Result<Detected, DetectError> {
        if self.bytes.is_empty() {
            return Err(DecodeError::Empty.into());
        }
        let format = format_of(&self.bytes).ok_or(DetectError::Unrecognized)?;
        Ok(Detected {
            format,
            gzipped: self.gzipped,
        })
    }
}

/// Every JFR chunk starts with this.
const JFR_MAGIC: &[u8] = b"FLR\0";

fn format_of(data: &[u8]) -> Option<Format> {
    if data.starts_with(JFR_MAGIC) {
        return Some(Format::Jfr);
    }
    if let Some(kind) = sniff_legacy(data) {
        return Some(Format::Legacy(kind));
    }
    if looks_like_otlp_json(data) {
        return Some(Format::OtlpJson);
    }
    if looks_like_folded(data) {
        return Some(Format::Folded);
    }
    protobuf_format(data)
}

fn looks_like_otlp_json(data: &[u8]) -> bool {
    let trimmed = data.trim_ascii_start();
    trimmed.starts_with(b"{")
        && [
            b"\"resourceProfiles\"".as_slice(),
            b"\"resource_profiles\"".as_slice(),
        ]
        .iter()
        .any(|key| trimmed.windows(key.len()).any(|window| window == *key))
}

/// Every line up to the 64th non-blank one is `frames value`.
fn looks_like_folded(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .take(64)
        .peekable();
    lines.peek().is_some()
        && lines.all(|line| {
            line.rsplit_once([' ', '\t'])
                .is_some_and(|(frames, value)| {
                    !frames.trim().is_empty() && value.parse::<i64>().is_ok()
                })
        })
}

/// pprof carries a string table; an OTLP request has only
/// resource_profiles (1) and the dictionary (2), numbers that
/// profbridge-translate's decoder owns and this crate cannot import. `None` when the bytes are
/// not well-formed protobuf.
fn protobuf_format(mut data: &[u8]) -> Option<Format> {
    let (mut string_table, mut only_otlp_fields, mut fields) = (false, true, 0usize);
    while !data.is_empty() {
        let key = read_varint(&mut data)?;
        let (field, wire_type) = (key >> 3, key & 7);
        if field == 0 {
            return None;
        }
        let skip = match wire_type {
            0 => {
                read_varint(&mut data)?;
                0
            }
            1 => 8,
            2 => usize::try_from(read_varint(&mut data)?).ok()?,
            5 => 4,
            _ => return None,
        };
        data = data.get(skip..)?;
        fields += 1;
        string_table |= field == u64::from(profile_field::STRING_TABLE) && wire_type == 2;
        only_otlp_fields &= (field == 1 || field == 2) && wire_type == 2;
    }
    if string_table {
        Some(Format::Pprof)
    } else {
        (fields > 0 && only_otlp_fields).then_some(Format::OtlpProtobuf)
    }
}

fn read_varint(data: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = data.split_first()?;
        *data = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_shapes_are_told_apart() {
        // field 6 (string table) with "", then field 1 (sample type).
        assert_eq!(
            protobuf_format(&[0x32, 0x00, 0x0a, 0x00]),
            Some(Format::Pprof)
        );
        assert_eq!(
            protobuf_format(&[0x0a, 0x00, 0x12, 0x00]),
            Some(Format::OtlpProtobuf)
        );
        assert_eq!(protobuf_format(&[0x0a, 0x05, 0x00]), None);
        assert_eq!(protobuf_format(&[0x08, 0x01]), None);
    }

    #[test]
    fn folded_and_json_are_recognised() {
        assert!(looks_like_folded(b"main;work 10\nmain;idle 3\n"));
        assert!(!looks_like_folded(b"main;work ten\n"));
        assert!(!looks_like_folded(b"\n\n"));
        assert!(looks_like_otlp_json(b" {\"resourceProfiles\": []}"));
        assert!(!looks_like_otlp_json(b"{\"other\": 1}"));
    }
}
