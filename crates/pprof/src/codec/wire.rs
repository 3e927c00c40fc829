//! A profile's protobuf encoding written by hand: the bytes prost writes
//! (fields in number order, zero scalars and empty repeated fields left
//! out, repeated scalars packed), without prost's second pass over every
//! nested message to learn its length first.

use super::RawStrings;
use crate::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

const VARINT: u8 = 0;
const LEN: u8 = 2;

/// The whole profile.
pub fn write_profile(profile: &Profile, out: &mut Vec<u8>) {
    write_sample_types(profile, out);
    for sample in &profile.sample {
        put_message(out, 2, |out| write_sample(sample, out));
    }
    write_after_samples(profile, out);
}

/// The whole profile, with the original bytes of the strings `raw` kept
/// ([`RawStrings::bytes_of`]).
pub fn write_profile_keeping_raw(profile: &Profile, raw: &RawStrings, out: &mut Vec<u8>) {
    if raw.is_empty() {
        return write_profile(profile, out);
    }
    let strings = raw.bytes_of(&profile.string_table);
    write_sample_types(profile, out);
    for sample in &profile.sample {
        put_message(out, 2, |out| write_sample(sample, out));
    }
    write_mappings(profile, out);
    for location in &profile.location {
        put_message(out, 4, |out| write_location(location, out));
    }
    write_functions(profile, out);
    for string in strings {
        put_bytes(out, 6, string);
    }
    write_after_strings(profile, out);
}

/// Field 1, `sample_type`: what comes before the samples.
pub fn write_sample_types(profile: &Profile, out: &mut Vec<u8>) {
    for value_type in &profile.sample_type {
        put_message(out, 1, |out| write_value_type(value_type, out));
    }
}

/// Fields 3 to 15: everything after the samples.
pub fn write_after_samples(profile: &Profile, out: &mut Vec<u8>) {
    write_mappings(profile, out);
    for location in &profile.location {
        put_message(out, 4, |out| write_location(location, out));
    }
    write_after_locations(profile, out);
}

/// Field 3, `mapping`: what comes between the samples and the locations.
pub fn write_mappings(profile: &Profile, out: &mut Vec<u8>) {
    for mapping in &profile.mapping {
        put_message(out, 3, |out| write_mapping(mapping, out));
    }
}

/// A `location` field (4) whose fields after its id are `content`, as
/// [`write_location_content`] writes them.
pub fn put_location(out: &mut Vec<u8>, id: u64, content: &[u8]) {
    let id_len = if id == 0 { 0 } else { 1 + varint_len(id) };
    put_tag(out, 4, LEN);
    put_varint(out, (id_len + content.len()) as u64);
    put_uint(out, 1, id);
    out.extend_from_slice(content);
}

/// Fields 5 to 15: everything after the locations.
pub fn write_after_locations(profile: &Profile, out: &mut Vec<u8>) {
    write_functions(profile, out);
    for string in &profile.string_table {
        put_bytes(out, 6, string.as_bytes());
    }
    write_after_strings(profile, out);
}

fn write_functions(profile: &Profile, out: &mut Vec<u8>) {
    for function in &profile.function {
        put_message(out, 5, |out| write_function(function, out));
    }
}

/// Fields 7 to 15.
fn write_after_strings(profile: &Profile, out: &mut Vec<u8>) {
    put_int(out, 7, profile.drop_frames);
    put_int(out, 8, profile.keep_frames);
    put_int(out, 9, profile.time_nanos);
    put_int(out, 10, profile.duration_nanos);
    if let Some(period_type) = &profile.period_type {
        put_message(out, 11, |out| write_value_type(period_type, out));
    }
    put_int(out, 12, profile.period);
    put_packed(out, 13, profile.comment.iter().map(|&c| c as u64));
    put_int(out, 14, profile.default_sample_type);
    put_int(out, 15, profile.doc_url);
}

/// Field 3 of a sample, one label.
#[inline]
pub fn write_label(label: &Label, out: &mut Vec<u8>) {
    put_int(out, 1, label.key);
    put_int(out, 2, label.str);
    put_int(out, 3, label.num);
    put_int(out, 4, label.num_unit);
}

fn write_sample(sample: &Sample, out: &mut Vec<u8>) {
    put_packed(out, 1, sample.location_id.iter().copied());
    put_packed(out, 2, sample.value.iter().map(|&v| v as u64));
    for label in &sample.label {
        put_message(out, 3, |out| write_label(label, out));
    }
}

fn write_value_type(value_type: &ValueType, out: &mut Vec<u8>) {
    put_int(out, 1, value_type.r#type);
    put_int(out, 2, value_type.unit);
}

fn write_mapping(mapping: &Mapping, out: &mut Vec<u8>) {
    put_uint(out, 1, mapping.id);
    put_uint(out, 2, mapping.memory_start);
    put_uint(out, 3, mapping.memory_limit);
    put_uint(out, 4, mapping.file_offset);
    put_int(out, 5, mapping.filename);
    put_int(out, 6, mapping.build_id);
    put_bool(out, 7, mapping.has_functions);
    put_bool(out, 8, mapping.has_filenames);
    put_bool(out, 9, mapping.has_line_numbers);
    put_bool(out, 10, mapping.has_inline_frames);
}

fn write_location(location: &Location, out: &mut Vec<u8>) {
    put_uint(out, 1, location.id);
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
    put_uint(out, 2, mapping_id);
    put_uint(out, 3, address);
    for line in lines {
        put_message(out, 4, |out| write_line(&line, out));
    }
    put_bool(out, 5, is_folded);
}

fn write_line(line: &Line, out: &mut Vec<u8>) {
    put_uint(out, 1, line.function_id);
    put_int(out, 2, line.line);
    put_int(out, 3, line.column);
}

fn write_function(function: &Function, out: &mut Vec<u8>) {
    put_uint(out, 1, function.id);
    put_int(out, 2, function.name);
    put_int(out, 3, function.system_name);
    put_int(out, 4, function.filename);
    put_int(out, 5, function.start_line);
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

/// A tag for field numbers below 16, which fit one byte.
fn put_tag(out: &mut Vec<u8>, field: u8, wire_type: u8) {
    out.push(field << 3 | wire_type);
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
