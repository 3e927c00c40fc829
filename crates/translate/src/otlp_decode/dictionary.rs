//! The dictionary: the tables that profiles index into.

use super::common::any_value;
use super::set_once;
use super::wire::{field_counts, fields, int32, int64};
use super::Fast;
use crate::otlp::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, ProfilesDictionary, Stack,
};

pub(super) fn dictionary(message: &[u8]) -> Fast<ProfilesDictionary> {
    let [_, mappings, locations, functions, links, strings, attributes, stacks] =
        field_counts(message)?;
    let mut dictionary = ProfilesDictionary {
        mapping_table: Vec::with_capacity(mappings),
        location_table: Vec::with_capacity(locations),
        function_table: Vec::with_capacity(functions),
        link_table: Vec::with_capacity(links),
        string_table: Vec::with_capacity(strings),
        attribute_table: Vec::with_capacity(attributes),
        stack_table: Vec::with_capacity(stacks),
    };
    let mut lines = Vec::new();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => dictionary.mapping_table.push(mapping(field.bytes()?)?),
            2 => dictionary
                .location_table
                .push(location(field.bytes()?, &mut lines)?),
            3 => dictionary.function_table.push(function(field.bytes()?)?),
            4 => dictionary.link_table.push(link(field.bytes()?)?),
            5 => dictionary.string_table.push(field.string()?),
            6 => dictionary.attribute_table.push(attribute(field.bytes()?)?),
            7 => dictionary.stack_table.push(stack(field.bytes()?)?),
            _ => {}
        }
    }
    Ok(dictionary)
}

fn mapping(message: &[u8]) -> Fast<Mapping> {
    let mut mapping = Mapping::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => mapping.memory_start = field.varint()?,
            2 => mapping.memory_limit = field.varint()?,
            3 => mapping.file_offset = field.varint()?,
            4 => mapping.filename_strindex = int32(field.varint()?),
            5 => field.append_int32s(&mut mapping.attribute_indices)?,
            _ => {}
        }
    }
    Ok(mapping)
}

/// `lines` gathers the location's lines before they are copied into a
/// vector of their exact size (cheaper than counting them first).
fn location(message: &[u8], lines: &mut Vec<Line>) -> Fast<Location> {
    lines.clear();
    let mut location = Location::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => location.mapping_index = int32(field.varint()?),
            2 => location.address = field.varint()?,
            3 => lines.push(line(field.bytes()?)?),
            4 => field.append_int32s(&mut location.attribute_indices)?,
            _ => {}
        }
    }
    location.lines = lines.to_vec();
    Ok(location)
}

fn line(message: &[u8]) -> Fast<Line> {
    let mut line = Line::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => line.function_index = int32(field.varint()?),
            2 => line.line = int64(field.varint()?),
            3 => line.column = int64(field.varint()?),
            _ => {}
        }
    }
    Ok(line)
}

fn function(message: &[u8]) -> Fast<Function> {
    let mut function = Function::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => function.name_strindex = int32(field.varint()?),
            2 => function.system_name_strindex = int32(field.varint()?),
            3 => function.filename_strindex = int32(field.varint()?),
            4 => function.start_line = int64(field.varint()?),
            _ => {}
        }
    }
    Ok(function)
}

fn link(message: &[u8]) -> Fast<Link> {
    let mut link = Link::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => link.trace_id = field.bytes()?.to_vec(),
            2 => link.span_id = field.bytes()?.to_vec(),
            _ => {}
        }
    }
    Ok(link)
}

fn attribute(message: &[u8]) -> Fast<KeyValueAndUnit> {
    let mut attribute = KeyValueAndUnit::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => attribute.key_strindex = int32(field.varint()?),
            2 => set_once(&mut attribute.value, any_value(field.bytes()?, 0)?)?,
            3 => attribute.unit_strindex = int32(field.varint()?),
            _ => {}
        }
    }
    Ok(attribute)
}

fn stack(message: &[u8]) -> Fast<Stack> {
    let mut stack = Stack::default();
    for field in fields(message) {
        let field = field?;
        if field.number == 1 {
            field.append_int32s(&mut stack.location_indices)?;
        }
    }
    Ok(stack)
}
