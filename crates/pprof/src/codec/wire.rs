//! A profile's protobuf encoding written by hand: the bytes prost writes
//! (fields in number order, zero scalars and empty repeated fields left
//! out, repeated scalars packed), without prost's second pass over every
//! nested message to learn its length first.

use std::convert::Infallible;

use super::RawStrings;
use crate::{Function, Label, Line, Location, Mapping, Profile, Sample, SampleSource, ValueType};

use field::{
    function as fun, label as lab, line as lin, location as loc, mapping as map, profile as pro,
    sample as sam, value_type as vt,
};

const VARINT: u8 = 0;
/// The wire type of length-delimited fields: messages, bytes, packed runs.
pub const LEN: u8 = 2;

/// profile.proto's field numbers, one module per message: the only place
/// in profbridge they are written (other encoders of pprof import them).
pub mod field {
    pub mod profile {
        pub const SAMPLE_TYPE: u8 = 1;
        pub const SAMPLE: u8 = 2;
        pub const MAPPING: u8 = 3;
        pub const LOCATION: u8 = 4;
        pub const FUNCTION: u8 = 5;
        pub const STRING_TABLE: u8 = 6;
        pub const DROP_FRAMES: u8 = 7;
        pub const KEEP_FRAMES: u8 = 8;
        pub const TIME_NANOS: u8 = 9;
        pub const DURATION_NANOS: u8 = 10;
        pub const PERIOD_TYPE: u8 = 11;
        pub const PERIOD: u8 = 12;
        pub const COMMENT: u8 = 13;
        pub const DEFAULT_SAMPLE_TYPE: u8 = 14;
        pub const DOC_URL: u8 = 15;
    }
    pub mod sample {
        pub const LOCATION_ID: u8 = 1;
        pub const VALUE: u8 = 2;
        pub const LABEL: u8 = 3;
    }
    pub mod label {
        pub const KEY: u8 = 1;
        pub const STR: u8 = 2;
        pub const NUM: u8 = 3;
        pub const NUM_UNIT: u8 = 4;
    }
    pub mod value_type {
        pub const TYPE: u8 = 1;
        pub const UNIT: u8 = 2;
    }
    pub mod mapping {
        pub const ID: u8 = 1;
        pub const MEMORY_START: u8 = 2;
        pub const MEMORY_LIMIT: u8 = 3;
        pub const FILE_OFFSET: u8 = 4;
        pub const FILENAME: u8 = 5;
        pub const BUILD_ID: u8 = 6;
        pub const HAS_FUNCTIONS: u8 = 7;
        pub const HAS_FILENAMES: u8 = 8;
        pub const HAS_LINE_NUMBERS: u8 = 9;
        pub const HAS_INLINE_FRAMES: u8 = 10;
    }
    pub mod location {
        pub const ID: u8 = 1;
        pub const MAPPING_ID: u8 = 2;
        pub const ADDRESS: u8 = 3;
        pub const LINE: u8 = 4;
        pub const IS_FOLDED: u8 = 5;
    }
    pub mod line {
        pub const FUNCTION_ID: u8 = 1;
        pub const LINE: u8 = 2;
        pub const COLUMN: u8 = 3;
    }
    pub mod function {
        pub const ID: u8 = 1;
        pub const NAME: u8 = 2;
        pub const SYSTEM_NAME: u8 = 3;
        pub const FILENAME: u8 = 4;
        pub const START_LINE: u8 = 5;
    }
}

/// The whole profile.
pub fn write_profile(profile: &Profile, out: &mut Vec<u8>) {
    write_source_keeping_raw(profile, &RawStrings::default(), out);
}

/// The whole profile, with the original bytes of the strings `raw` kept
/// ([`RawStrings::bytes_of`]).
pub fn write_profile_keeping_raw(profile: &Profile, raw: &RawStrings, out: &mut Vec<u8>) {
    write_source_keeping_raw(profile, raw, out);
}

/// [`write_profile_keeping_raw`] of a profile whose samples come from
/// `source`.
pub fn write_source_keeping_raw(source: &impl SampleSource, raw: &RawStrings, out: &mut Vec<u8>) {
    let profile = source.tables();
    write_sample_types(profile, out);
    source
        .try_for_each_sample(|_, sample| {
            put_message(out, pro::SAMPLE, |out| write_sample(sample, out));
            Ok::<(), Infallible>(())
        })
        .unwrap_or_else(|never| match never {});
    if raw.is_empty() {
        return write_after_samples(profile, out);
    }
    let strings = raw.bytes_of(&profile.string_table);
    write_mappings(profile, out);
    for location in &profile.location {
        put_message(out, pro::LOCATION, |out| write_location(location, out));
    }
    write_functions(profile, out);
    for string in strings {
        put_bytes(out, pro::STRING_TABLE, string);
    }
    write_after_strings(profile, out);
}

/// Field 1, `sample_type`: what comes before the samples.
pub fn write_sample_types(profile: &Profile, out: &mut Vec<u8>) {
    for value_type in &profile.sample_type {
        put_message(out, pro::SAMPLE_TYPE, |out| {
            write_value_type(value_type, out)
        });
    }
}

/// Fields 3 to 15: everything after the samples.
pub fn write_after_samples(profile: &Profile, out: &mut Vec<u8>) {
    write_mappings(profile, out);
    for location in &profile.location {
        put_message(out, pro::LOCATION, |out| write_location(location, out));
    }
    write_after_locations(profile, out);
}

/// Field 3, `mapping`: what comes between the samples and the locations.
pub fn write_mappings(profile: &Profile, out: &mut Vec<u8>) {
    for mapping in &profile.mapping {
        put_message(out, pro::MAPPING, |out| write_mapping(mapping, out));
    }
}

/// A `location` field (4) whose fields after its id are `content`, as
/// [`write_location_content`] writes them.
pub fn put_location(out: &mut Vec<u8>, id: u64, content: &[u8]) {
    let id_len = if id == 0 { 0 } else { 1 + varint_len(id) };
    put_tag(out, pro::LOCATION, LEN);
    put_varint(out, (id_len + content.len()) as u64);
    put_uint(out, loc::ID, id);
    out.extend_from_slice(content);
}

/// Fields 5 to 15: everything after the locations.
pub fn write_after_locations(profile: &Profile, out: &mut Vec<u8>) {
    write_functions(profile, out);
    for string in &profile.string_table {
        put_bytes(out, pro::STRING_TABLE, string.as_bytes());
    }
    write_after_strings(profile, out);
}

fn write_functions(profile: &Profile, out: &mut Vec<u8>) {
    for function in &profile.function {
        put_message(out, pro::FUNCTION, |out| write_function(function, out));
    }
}

/// Fields 7 to 15.
fn write_after_strings(profile: &Profile, out: &mut Vec<u8>) {
    put_int(out, pro::DROP_FRAMES, profile.drop_frames);
    put_int(out, pro::KEEP_FRAMES, profile.keep_frames);
    put_int(out, pro::TIME_NANOS, profile.time_nanos);
    put_int(out, pro::DURATION_NANOS, profile.duration_nanos);
    if let Some(period_type) = &profile.period_type {
        put_message(out, pro::PERIOD_TYPE, |out| {
            write_value_type(period_type, out)
        });
    }
    put_int(out, pro::PERIOD, profile.period);
    put_packed(out, pro::COMMENT, profile.comment.iter().map(|&c| c as u64));
    put_int(out, pro::DEFAULT_SAMPLE_TYPE, profile.default_sample_type);
    put_int(out, pro::DOC_URL, profile.doc_url);
}

/// Field 3 of a sample, one label.
#[inline]
pub fn write_label(label: &Label, out: &mut Vec<u8>) {
    put_int(out, lab::KEY, label.key);
    put_int(out, lab::STR, label.str);
    put_int(out, lab::NUM, label.num);
    put_int(out, lab::NUM_UNIT, label.num_unit);
}

fn write_sample(sample: &Sample, out: &mut Vec<u8>) {
    put_packed(out, sam::LOCATION_ID, sample.location_id.iter().copied());
    put_packed(out, sam::VALUE, sample.value.iter().map(|&v| v as u64));
    for label in &sample.label {
        put_message(out, sam::LABEL, |out| write_label(label, out));
    }
}

fn write_value_type(value_type: &ValueType, out: &mut Vec<u8>) {
    put_int(out, vt::TYPE, value_type.r#type);
    put_int(out, vt::UNIT, value_type.unit);
}

fn write_mapping(mapping: &Mapping, out: &mut Vec<u8>) {
    put_uint(out, map::ID, mapping.id);
    put_uint(out, map::MEMORY_START, mapping.memory_start);
    put_uint(out, map::MEMORY_LIMIT, mapping.memory_limit);
    put_uint(out, map::FILE_OFFSET, mapping.file_offset);
    put_int(out, map::FILENAME, mapping.filename);
    put_int(out, map::BUILD_ID, mapping.build_id);
    put_bool(out, map::HAS_FUNCTIONS, mapping.has_functions);
    put_bool(out, map::HAS_FILENAMES, mapping.has_filenames);
    put_bool(out, map::HAS_LINE_NUMBERS, mapping.has_line_numbers);
    put_bool(out, map::HAS_INLINE_FRAMES, mapping.has_inline_frames);
}

fn write_location(location: &Location, out: &mut Vec<u8>) {
    put_uint(out, loc::ID, location.id);
    write_location_content(
        location.mapping_id,
        location.address,
        location.line.iter().copied(),
        location.is_folded,
        out,
    );
}

/// A location's fields after its id (2 to 5).
pub fn write_location_content(
    mapping_id: u64,
    address: u64,
    lines: impl IntoIterator<Item = Line>,
    is_folded: bool,
    out: &mut Vec<u8>,
) {
    put_uint(out, loc::MAPPING_ID, mapping_id);
    put_uint(out, loc::ADDRESS, address);
    for line in lines {
        put_message(out, loc::LINE, |out| write_line(&line, out));
    }
    put_bool(out, loc::IS_FOLDED, is_folded);
}

fn write_line(line: &Line, out: &mut Vec<u8>) {
    put_uint(out, lin::FUNCTION_ID, line.function_id);
    put_int(out, lin::LINE, line.line);
    put_int(out, lin::COLUMN, line.column);
}

fn write_function(function: &Function, out: &mut Vec<u8>) {
    put_uint(out, fun::ID, function.id);
    put_int(out, fun::NAME, function.name);
    put_int(out, fun::SYSTEM_NAME, function.system_name);
    put_int(out, fun::FILENAME, function.filename);
    put_int(out, fun::START_LINE, function.start_line);
}

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[inline]
#[allow(clippy::manual_div_ceil)] // `div_ceil` also takes a remainder: slower.
pub fn varint_len(value: u64) -> usize {
    // One byte per 7 significant bits, at least one.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    (bits + 6) / 7
}

/// The one-byte tag of a field numbered below 16.
pub const fn tag(field: u8, wire_type: u8) -> u8 {
    field << 3 | wire_type
}

fn put_tag(out: &mut Vec<u8>, field: u8, wire_type: u8) {
    out.push(tag(field, wire_type));
}

fn put_uint(out: &mut Vec<u8>, field: u8, value: u64) {
    if value != 0 {
        put_tag(out, field, VARINT);
        put_varint(out, value);
    }
}

/// int64: negative values take ten bytes, as two's complement.
fn put_int(out: &mut Vec<u8>, field: u8, value: i64) {
    put_uint(out, field, value as u64);
}

fn put_bool(out: &mut Vec<u8>, field: u8, value: bool) {
    put_uint(out, field, u64::from(value));
}

fn put_bytes(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A packed repeated varint field; nothing when empty.
pub fn put_packed(out: &mut Vec<u8>, field: u8, values: impl Iterator<Item = u64> + Clone) {
    let len: usize = values.clone().map(varint_len).sum();
    if len == 0 {
        return;
    }
    put_tag(out, field, LEN);
    put_varint(out, len as u64);
    for value in values {
        put_varint(out, value);
    }
}

/// A nested message: its body is written first, then its length is put in
/// front of it (moving the body only when the length needs two bytes or
/// more, which the small messages of a profile rarely do).
pub fn put_message(out: &mut Vec<u8>, field: u8, body: impl FnOnce(&mut Vec<u8>)) {
    put_tag(out, field, LEN);
    let length_at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - length_at - 1;
    if len < 0x80 {
        if let Some(byte) = out.get_mut(length_at) {
            *byte = len as u8;
        }
        return;
    }
    let mut prefix = Vec::with_capacity(10);
    put_varint(&mut prefix, len as u64);
    out.splice(length_at..=length_at, prefix);
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn varint_lengths_match_prost() {
        for value in [
            0,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            assert_eq!(out.len(), prost::encoding::encoded_len_varint(value));
        }
    }

    #[test]
    fn locations_put_from_their_content_match_prost() {
        for location in [
            Location::default(),
            Location {
                id: 300,
                mapping_id: 2,
                address: u64::MAX,
                line: vec![
                    Line {
                        function_id: 7,
                        line: -1,
                        column: 3
                    };
                    20
                ],
                is_folded: true,
            },
        ] {
            let mut content = Vec::new();
            write_location_content(
                location.mapping_id,
                location.address,
                location.line.iter().copied(),
                location.is_folded,
                &mut content,
            );
            let mut out = Vec::new();
            put_location(&mut out, location.id, &content);
            let profile = Profile {
                location: vec![location],
                ..Profile::default()
            };
            assert_eq!(out, profile.encode_to_vec());
        }
    }

    #[test]
    fn negative_values_long_messages_and_empty_strings_match_prost() {
        let profile = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 0 }],
            sample: vec![Sample {
                location_id: (1..200).collect(),
                value: vec![-1, i64::MIN, 0, i64::MAX],
                label: vec![Label {
                    key: 2,
                    num: -5,
                    ..Label::default()
                }],
            }],
            location: vec![Location {
                id: 1,
                line: vec![Line::default(); 50],
                is_folded: true,
                ..Location::default()
            }],
            string_table: vec![String::new(), "x".repeat(300), String::new()],
            time_nanos: -1,
            comment: vec![1, 2],
            period_type: Some(ValueType::default()),
            ..Profile::default()
        };
        let mut out = Vec::new();
        write_profile(&profile, &mut out);
        assert_eq!(out, profile.encode_to_vec());
    }
}
