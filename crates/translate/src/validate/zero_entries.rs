//! Entry 0 of every dictionary table must be that table's zero value. It is
//! judged by meaning, as the OpenTelemetry Collector's Go pdata library
//! (`pdata/pprofile`) reads it, not by prost's struct equality, because
//! the producers that matter write it in ways prost keeps apart:
//!
//! - pdata always writes `KeyValueAndUnit.value` (its `AnyValue` is not a
//!   pointer), so `attribute_table[0]` arrives as `12 00`: prost decodes
//!   `value: Some(AnyValue { value: None })`. pdata reads an `AnyValue`
//!   with no member set as the empty value, which is the zero value.
//! - pdata's trace and span ids are fixed-size arrays; all zero bytes mean
//!   "no id" (and encode as nothing). async-profiler's OTLP writer
//!   (src/otlp.cpp, and its Java converter) writes `link_table[0]` as 16 and
//!   8 zero bytes, which pdata reads as `Link{}`.
//!
//! Explicit zero scalars, empty packed lists and non-minimal length
//! prefixes need nothing here: prost already decodes them to the default.
//!
//! Not zero, as in pdata: an `AnyValue` holding any member, even an empty
//! one (`string_value ""`, `int_value 0`, `bool_value false`, an empty
//! array or kvlist): pdata reads `string_value ""` as a string, and a
//! string is not the empty value (`pcommon.Value.Equal` compares types
//! first). `string_value_strindex` is refused too, even 0: it stands for a
//! string of the table (pdata's `Value.Type()` calls it empty only because
//! its API has no such type; no producer writes it in entry 0). A trace or
//! span id of any length other than 0 or its size is refused, as pdata
//! refuses the whole request for it.

use thiserror::Error;

use crate::otlp::{any_value, AnyValue, Function, KeyValueAndUnit, Link, Location, Mapping};
use crate::otlp::{ProfilesDictionary, Stack};
use crate::reserved::hex;

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

/// A table of the profiles dictionary, named as the proto names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    Mapping,
    Location,
    Function,
    Link,
    String,
    Attribute,
    Stack,
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Mapping => "mapping_table",
            Self::Location => "location_table",
            Self::Function => "function_table",
            Self::Link => "link_table",
            Self::String => "string_table",
            Self::Attribute => "attribute_table",
            Self::Stack => "stack_table",
        })
    }
}

/// Why entry 0 of a dictionary table is not the zero value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ZeroEntryError {
    #[error("{0} is empty; entry 0 must be the zero value")]
    Missing(Table),
    #[error("string_table[0] is {0:?}, must be empty")]
    String(String),
    /// A number field that is not 0 (`value` holds any u64, i64 or i32).
    #[error("{table}[0].{field} is {value}, must be 0")]
    Number {
        table: Table,
        field: &'static str,
        value: i128,
    },
    /// A repeated field that is not empty.
    #[error("{table}[0].{field} has {len} {}, must be empty", entries(*.len))]
    List {
        table: Table,
        field: &'static str,
        len: usize,
    },
    /// A trace or span id that is neither empty nor all zero bytes.
    #[error("link_table[0].{field} is {}{}, must be empty", shown_id(.id), id_size_note(.id, *.size))]
    Id {
        field: &'static str,
        id: Vec<u8>,
        /// The size of such an id: 16 for a trace id, 8 for a span id.
        size: usize,
    },
    /// `attribute_table[0].value` holds a member (`member` is its proto
    /// name, `shown` its value as the message shows it).
    #[error("attribute_table[0].value is {member} {shown}, must be empty")]
    Value { member: &'static str, shown: String },
}

/// Messages show this much of a value that holds data, so that a huge
/// entry 0 does not make a huge error.
const SHOWN_CHARS: usize = 40;
const SHOWN_ID_BYTES: usize = 32;

fn shortened(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    cut.push('…');
    cut
}

fn shown_id(id: &[u8]) -> String {
    let mut shown = hex::encode(id.get(..SHOWN_ID_BYTES).unwrap_or(id));
    if id.len() > SHOWN_ID_BYTES {
        shown.push('…');
    }
    shown
}

fn entries(len: usize) -> &'static str {
    if len == 1 {
        "entry"
    } else {
        "entries"
    }
}

fn id_size_note(id: &[u8], size: usize) -> String {
    if id.len() == size {
        String::new()
    } else {
        format!(" ({} bytes; such an id has {size})", id.len())
    }
}

/// Whether `id` is no id: empty, or `size` zero bytes.
pub(crate) fn is_zero_id(id: &[u8], size: usize) -> bool {
    id.is_empty() || (id.len() == size && id.iter().all(|&b| b == 0))
}

/// Whether `link` is `Link{}` as pdata reads it.
pub fn is_zero_link(link: &Link) -> bool {
    is_zero_id(&link.trace_id, TRACE_ID_BYTES) && is_zero_id(&link.span_id, SPAN_ID_BYTES)
}

/// Whether `value` is the empty value as pdata reads it: absent, or
/// present with no member set.
pub fn is_empty_value(value: Option<&AnyValue>) -> bool {
    value.is_none_or(|v| v.value.is_none())
}

/// Checks entry 0 of every table, in the proto's field order.
pub(crate) fn check_zero_entries(d: &ProfilesDictionary) -> Result<(), ZeroEntryError> {
    zero_mapping(first(&d.mapping_table, Table::Mapping)?)?;
    zero_location(first(&d.location_table, Table::Location)?)?;
    zero_function(first(&d.function_table, Table::Function)?)?;
    zero_link(first(&d.link_table, Table::Link)?)?;
    let string = first(&d.string_table, Table::String)?;
    if !string.is_empty() {
        return Err(ZeroEntryError::String(shortened(string)));
    }
    zero_attribute(first(&d.attribute_table, Table::Attribute)?)?;
    zero_stack(first(&d.stack_table, Table::Stack)?)
}

fn first<T>(table: &[T], which: Table) -> Result<&T, ZeroEntryError> {
    table.first().ok_or(ZeroEntryError::Missing(which))
}

fn number(table: Table, field: &'static str, value: impl Into<i128>) -> Result<(), ZeroEntryError> {
    let value = value.into();
    if value == 0 {
        Ok(())
    } else {
        Err(ZeroEntryError::Number {
            table,
            field,
            value,
        })
    }
}

fn list<T>(table: Table, field: &'static str, items: &[T]) -> Result<(), ZeroEntryError> {
    if items.is_empty() {
        Ok(())
    } else {
        Err(ZeroEntryError::List {
            table,
            field,
            len: items.len(),
        })
    }
}

fn zero_mapping(m: &Mapping) -> Result<(), ZeroEntryError> {
    let t = Table::Mapping;
    number(t, "memory_start", m.memory_start)?;
    number(t, "memory_limit", m.memory_limit)?;
    number(t, "file_offset", m.file_offset)?;
    number(t, "filename_strindex", m.filename_strindex)?;
    list(t, "attribute_indices", &m.attribute_indices)
}

fn zero_location(l: &Location) -> Result<(), ZeroEntryError> {
    let t = Table::Location;
    number(t, "mapping_index", l.mapping_index)?;
    number(t, "address", l.address)?;
    list(t, "lines", &l.lines)?;
    list(t, "attribute_indices", &l.attribute_indices)
}

fn zero_function(f: &Function) -> Result<(), ZeroEntryError> {
    let t = Table::Function;
    number(t, "name_strindex", f.name_strindex)?;
    number(t, "system_name_strindex", f.system_name_strindex)?;
    number(t, "filename_strindex", f.filename_strindex)?;
    number(t, "start_line", f.start_line)
}

fn zero_link(l: &Link) -> Result<(), ZeroEntryError> {
    for (field, id, size) in [
        ("trace_id", &l.trace_id, TRACE_ID_BYTES),
        ("span_id", &l.span_id, SPAN_ID_BYTES),
    ] {
        if !is_zero_id(id, size) {
            return Err(ZeroEntryError::Id {
                field,
                id: id.clone(),
                size,
            });
        }
    }
    Ok(())
}

fn zero_attribute(a: &KeyValueAndUnit) -> Result<(), ZeroEntryError> {
    let t = Table::Attribute;
    number(t, "key_strindex", a.key_strindex)?;
    if let Some(member) = a.value.as_ref().and_then(|v| v.value.as_ref()) {
        let (member, shown) = describe(member);
        return Err(ZeroEntryError::Value { member, shown });
    }
    number(t, "unit_strindex", a.unit_strindex)
}

fn zero_stack(s: &Stack) -> Result<(), ZeroEntryError> {
    list(Table::Stack, "location_indices", &s.location_indices)
}

/// The proto name of an `AnyValue` member, and its value as shown.
fn describe(value: &any_value::Value) -> (&'static str, String) {
    match value {
        any_value::Value::StringValue(s) => ("string_value", format!("{:?}", shortened(s))),
        any_value::Value::BoolValue(b) => ("bool_value", b.to_string()),
        any_value::Value::IntValue(i) => ("int_value", i.to_string()),
        any_value::Value::DoubleValue(d) => ("double_value", d.to_string()),
        any_value::Value::ArrayValue(a) => (
            "array_value",
            format!("of {} value{}", a.values.len(), plural(a.values.len())),
        ),
        any_value::Value::KvlistValue(l) => (
            "kvlist_value",
            format!("of {} {}", l.values.len(), entries(l.values.len())),
        ),
        any_value::Value::BytesValue(b) => (
            "bytes_value",
            format!("of {} byte{}", b.len(), plural(b.len())),
        ),
        any_value::Value::StringValueStrindex(i) => ("string_value_strindex", i.to_string()),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
