//! The profiles dictionary and its tables' entries.

use serde_json::Value;

use super::any_value::{any_value_at, any_value_to_json};
use super::path::Path;
use super::read::{key, Fields, Key};
use super::scalar::{i32_from_json, string_from_json};
use super::write::Object;
use super::JsonError;
use crate::otlp::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, ProfilesDictionary, Stack,
};

const MAPPING_TABLE: Key = key("mappingTable", "mapping_table");
const LOCATION_TABLE: Key = key("locationTable", "location_table");
const FUNCTION_TABLE: Key = key("functionTable", "function_table");
const LINK_TABLE: Key = key("linkTable", "link_table");
const STRING_TABLE: Key = key("stringTable", "string_table");
const ATTRIBUTE_TABLE: Key = key("attributeTable", "attribute_table");
const STACK_TABLE: Key = key("stackTable", "stack_table");
const MEMORY_START: Key = key("memoryStart", "memory_start");
const MEMORY_LIMIT: Key = key("memoryLimit", "memory_limit");
const FILE_OFFSET: Key = key("fileOffset", "file_offset");
const FILENAME_STRINDEX: Key = key("filenameStrindex", "filename_strindex");
const ATTRIBUTE_INDICES: Key = key("attributeIndices", "attribute_indices");
const MAPPING_INDEX: Key = key("mappingIndex", "mapping_index");
const ADDRESS: Key = key("address", "address");
const LINES: Key = key("lines", "lines");
const FUNCTION_INDEX: Key = key("functionIndex", "function_index");
const LINE: Key = key("line", "line");
const COLUMN: Key = key("column", "column");
const NAME_STRINDEX: Key = key("nameStrindex", "name_strindex");
const SYSTEM_NAME_STRINDEX: Key = key("systemNameStrindex", "system_name_strindex");
const START_LINE: Key = key("startLine", "start_line");
const TRACE_ID: Key = key("traceId", "trace_id");
const SPAN_ID: Key = key("spanId", "span_id");
const KEY_STRINDEX: Key = key("keyStrindex", "key_strindex");
const VALUE: Key = key("value", "value");
const UNIT_STRINDEX: Key = key("unitStrindex", "unit_strindex");
const LOCATION_INDICES: Key = key("locationIndices", "location_indices");

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

pub(crate) fn dictionary_to_json(d: &ProfilesDictionary) -> Value {
    Object::new()
        .list(MAPPING_TABLE, &d.mapping_table, mapping_to_json)
        .list(LOCATION_TABLE, &d.location_table, location_to_json)
        .list(FUNCTION_TABLE, &d.function_table, function_to_json)
        .list(LINK_TABLE, &d.link_table, link_to_json)
        .list(STRING_TABLE, &d.string_table, |s| Value::String(s.clone()))
        .list(ATTRIBUTE_TABLE, &d.attribute_table, attribute_to_json)
        .list(STACK_TABLE, &d.stack_table, stack_to_json)
        .finish()
}

pub(crate) fn dictionary_from_json(
    value: &Value,
    at: Path<'_>,
) -> Result<ProfilesDictionary, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(ProfilesDictionary {
        mapping_table: fields.list(MAPPING_TABLE, mapping_from_json)?,
        location_table: fields.list(LOCATION_TABLE, location_from_json)?,
        function_table: fields.list(FUNCTION_TABLE, function_from_json)?,
        link_table: fields.list(LINK_TABLE, link_from_json)?,
        string_table: fields.scalars(STRING_TABLE, string_from_json)?,
        attribute_table: fields.list(ATTRIBUTE_TABLE, attribute_from_json)?,
        stack_table: fields.list(STACK_TABLE, stack_from_json)?,
    })
}

fn mapping_to_json(m: &Mapping) -> Value {
    Object::new()
        .int64(MEMORY_START, m.memory_start)
        .int64(MEMORY_LIMIT, m.memory_limit)
        .int64(FILE_OFFSET, m.file_offset)
        .number(FILENAME_STRINDEX, m.filename_strindex)
        .numbers(ATTRIBUTE_INDICES, &m.attribute_indices)
        .finish()
}

fn mapping_from_json(value: &Value, at: Path<'_>) -> Result<Mapping, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Mapping {
        memory_start: fields.u64(MEMORY_START)?,
        memory_limit: fields.u64(MEMORY_LIMIT)?,
        file_offset: fields.u64(FILE_OFFSET)?,
        filename_strindex: fields.i32(FILENAME_STRINDEX)?,
        attribute_indices: fields.scalars(ATTRIBUTE_INDICES, i32_from_json)?,
    })
}

fn location_to_json(l: &Location) -> Value {
    Object::new()
        .number(MAPPING_INDEX, l.mapping_index)
        .int64(ADDRESS, l.address)
        .list(LINES, &l.lines, line_to_json)
        .numbers(ATTRIBUTE_INDICES, &l.attribute_indices)
        .finish()
}

fn location_from_json(value: &Value, at: Path<'_>) -> Result<Location, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Location {
        mapping_index: fields.i32(MAPPING_INDEX)?,
        address: fields.u64(ADDRESS)?,
        lines: fields.list(LINES, line_from_json)?,
        attribute_indices: fields.scalars(ATTRIBUTE_INDICES, i32_from_json)?,
    })
}

fn line_to_json(l: &Line) -> Value {
    Object::new()
        .number(FUNCTION_INDEX, l.function_index)
        .int64(LINE, l.line)
        .int64(COLUMN, l.column)
        .finish()
}

fn line_from_json(value: &Value, at: Path<'_>) -> Result<Line, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Line {
        function_index: fields.i32(FUNCTION_INDEX)?,
        line: fields.i64(LINE)?,
        column: fields.i64(COLUMN)?,
    })
}

fn function_to_json(f: &Function) -> Value {
    Object::new()
        .number(NAME_STRINDEX, f.name_strindex)
        .number(SYSTEM_NAME_STRINDEX, f.system_name_strindex)
        .number(FILENAME_STRINDEX, f.filename_strindex)
        .int64(START_LINE, f.start_line)
        .finish()
}

fn function_from_json(value: &Value, at: Path<'_>) -> Result<Function, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Function {
        name_strindex: fields.i32(NAME_STRINDEX)?,
        system_name_strindex: fields.i32(SYSTEM_NAME_STRINDEX)?,
        filename_strindex: fields.i32(FILENAME_STRINDEX)?,
        start_line: fields.i64(START_LINE)?,
    })
}

fn link_to_json(l: &Link) -> Value {
    Object::new()
        .hex(TRACE_ID, &l.trace_id)
        .hex(SPAN_ID, &l.span_id)
        .finish()
}

fn link_from_json(value: &Value, at: Path<'_>) -> Result<Link, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Link {
        trace_id: fields.hex_id(TRACE_ID, TRACE_ID_BYTES)?,
        span_id: fields.hex_id(SPAN_ID, SPAN_ID_BYTES)?,
    })
}

fn attribute_to_json(a: &KeyValueAndUnit) -> Value {
    Object::new()
        .number(KEY_STRINDEX, a.key_strindex)
        .message(VALUE, a.value.as_ref(), any_value_to_json)
        .number(UNIT_STRINDEX, a.unit_strindex)
        .finish()
}

fn attribute_from_json(value: &Value, at: Path<'_>) -> Result<KeyValueAndUnit, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(KeyValueAndUnit {
        key_strindex: fields.i32(KEY_STRINDEX)?,
        value: fields.message(VALUE, any_value_at)?,
        unit_strindex: fields.i32(UNIT_STRINDEX)?,
    })
}

fn stack_to_json(s: &Stack) -> Value {
    Object::new()
        .numbers(LOCATION_INDICES, &s.location_indices)
        .finish()
}

fn stack_from_json(value: &Value, at: Path<'_>) -> Result<Stack, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Stack {
        location_indices: fields.scalars(LOCATION_INDICES, i32_from_json)?,
    })
}
