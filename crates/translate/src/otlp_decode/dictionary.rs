//! The dictionary: the tables that profiles index into.

use super::common::any_value;
use super::field;
use super::wire::{field_counts, fields, int32, int64};
use super::{emptied, set_once, Fast, Refill};
use crate::otlp::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, ProfilesDictionary, Stack,
};

/// Decodes into `dictionary`, reusing its tables' memory.
pub(super) fn dictionary(message: &[u8], dictionary: &mut ProfilesDictionary) -> Fast<()> {
    let [_, mappings, locations, functions, links, strings, attributes, stacks] =
        field_counts(message)?;
    let mut mapping_table = Refill::new(&mut dictionary.mapping_table, mappings);
    let mut location_table = Refill::new(&mut dictionary.location_table, locations);
    let mut function_table = Refill::new(&mut dictionary.function_table, functions);
    let mut link_table = Refill::new(&mut dictionary.link_table, links);
    let mut string_table = Refill::new(&mut dictionary.string_table, strings);
    let mut attribute_table = Refill::new(&mut dictionary.attribute_table, attributes);
    let mut stack_table = Refill::new(&mut dictionary.stack_table, stacks);
    let mut lines = Vec::new();
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::dictionary::MAPPING_TABLE => mapping(field.bytes()?, mapping_table.next()?)?,
            field::dictionary::LOCATION_TABLE => {
                location(field.bytes()?, location_table.next()?, &mut lines)?
            }
            field::dictionary::FUNCTION_TABLE => {
                *function_table.next()? = function(field.bytes()?)?
            }
            field::dictionary::LINK_TABLE => *link_table.next()? = link(field.bytes()?)?,
            field::dictionary::STRING_TABLE => {
                let string = string_table.next()?;
                string.clear();
                string.push_str(field.str()?);
            }
            field::dictionary::ATTRIBUTE_TABLE => {
                *attribute_table.next()? = attribute(field.bytes()?)?
            }
            field::dictionary::STACK_TABLE => stack(field.bytes()?, stack_table.next()?)?,
            _ => {}
        }
    }
    Ok(())
}

fn mapping(message: &[u8], mapping: &mut Mapping) -> Fast<()> {
    *mapping = Mapping {
        attribute_indices: emptied(&mut mapping.attribute_indices),
        ..Mapping::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::mapping::MEMORY_START => mapping.memory_start = field.varint()?,
            field::mapping::MEMORY_LIMIT => mapping.memory_limit = field.varint()?,
            field::mapping::FILE_OFFSET => mapping.file_offset = field.varint()?,
            field::mapping::FILENAME_STRINDEX => mapping.filename_strindex = int32(field.varint()?),
            field::mapping::ATTRIBUTE_INDICES => {
                field.append_int32s(&mut mapping.attribute_indices)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// `lines` gathers the location's lines before they are copied into the
/// location's vector, at their exact size when it is new (cheaper than
/// counting them first).
fn location(message: &[u8], location: &mut Location, lines: &mut Vec<Line>) -> Fast<()> {
    lines.clear();
    *location = Location {
        lines: emptied(&mut location.lines),
        attribute_indices: emptied(&mut location.attribute_indices),
        ..Location::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::location::MAPPING_INDEX => location.mapping_index = int32(field.varint()?),
            field::location::ADDRESS => location.address = field.varint()?,
            field::location::LINES => lines.push(line(field.bytes()?)?),
            field::location::ATTRIBUTE_INDICES => {
                field.append_int32s(&mut location.attribute_indices)?
            }
            _ => {}
        }
    }
    location.lines.reserve_exact(lines.len());
    location.lines.extend_from_slice(lines);
    Ok(())
}

fn line(message: &[u8]) -> Fast<Line> {
    let mut line = Line::default();
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::line::FUNCTION_INDEX => line.function_index = int32(field.varint()?),
            field::line::LINE => line.line = int64(field.varint()?),
            field::line::COLUMN => line.column = int64(field.varint()?),
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
            field::function::NAME_STRINDEX => function.name_strindex = int32(field.varint()?),
            field::function::SYSTEM_NAME_STRINDEX => {
                function.system_name_strindex = int32(field.varint()?)
            }
            field::function::FILENAME_STRINDEX => {
                function.filename_strindex = int32(field.varint()?)
            }
            field::function::START_LINE => function.start_line = int64(field.varint()?),
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
            field::link::TRACE_ID => link.trace_id = field.bytes()?.to_vec(),
            field::link::SPAN_ID => link.span_id = field.bytes()?.to_vec(),
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
            field::attribute::KEY_STRINDEX => attribute.key_strindex = int32(field.varint()?),
            field::attribute::VALUE => {
                set_once(&mut attribute.value, any_value(field.bytes()?, 0)?)?
            }
            field::attribute::UNIT_STRINDEX => attribute.unit_strindex = int32(field.varint()?),
            _ => {}
        }
    }
    Ok(attribute)
}

fn stack(message: &[u8], stack: &mut Stack) -> Fast<()> {
    *stack = Stack {
        location_indices: emptied(&mut stack.location_indices),
    };
    for field in fields(message) {
        let field = field?;
        if field.number == field::stack::LOCATION_INDICES {
            field.append_int32s(&mut stack.location_indices)?;
        }
    }
    Ok(())
}
