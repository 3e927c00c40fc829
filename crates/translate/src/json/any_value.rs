//! `AnyValue` ⇄ JSON, as OTLP/JSON writes it: `{"stringValue": "…"}`,
//! `{"intValue": "42"}`, `{"arrayValue": {"values": […]}}`, ….

use base64::Engine;
use serde_json::{json, Map, Value};

use super::path::Path;
use super::read::{key, Fields, Key};
use super::scalar::{bool_from_json, double_from_json};
use super::JsonError;
use crate::otlp::{any_value, AnyValue, ArrayValue, KeyValue, KeyValueList};

/// Deeper `AnyValue`s than this are refused rather than risking the stack.
const MAX_NESTING: usize = 100;

/// The `AnyValue` oneof's members, as JSON keys.
#[derive(Clone, Copy)]
enum Kind {
    String,
    Bool,
    Int,
    Double,
    Array,
    Kvlist,
    Bytes,
    StringStrindex,
}

const KINDS: [(Key, Kind); 8] = [
    (key("stringValue", "string_value"), Kind::String),
    (key("boolValue", "bool_value"), Kind::Bool),
    (key("intValue", "int_value"), Kind::Int),
    (key("doubleValue", "double_value"), Kind::Double),
    (key("arrayValue", "array_value"), Kind::Array),
    (key("kvlistValue", "kvlist_value"), Kind::Kvlist),
    (key("bytesValue", "bytes_value"), Kind::Bytes),
    (
        key("stringValueStrindex", "string_value_strindex"),
        Kind::StringStrindex,
    ),
];
const VALUES: Key = key("values", "values");
const KEY: Key = key("key", "key");
const VALUE: Key = key("value", "value");
const KEY_STRINDEX: Key = key("keyStrindex", "key_strindex");

pub fn any_value_to_json(value: &AnyValue) -> Value {
    let Some(value) = &value.value else {
        return Value::Object(Map::new());
    };
    match value {
        any_value::Value::StringValue(s) => json!({ "stringValue": s }),
        any_value::Value::BoolValue(b) => json!({ "boolValue": b }),
        any_value::Value::IntValue(i) => json!({ "intValue": i.to_string() }),
        any_value::Value::DoubleValue(d) => json!({ "doubleValue": double_to_json(*d) }),
        any_value::Value::ArrayValue(array) => json!({
            "arrayValue": { "values": array.values.iter().map(any_value_to_json).collect::<Vec<_>>() }
        }),
        any_value::Value::KvlistValue(list) => json!({
            "kvlistValue": { "values": list.values.iter().map(key_value_to_json).collect::<Vec<_>>() }
        }),
        any_value::Value::BytesValue(bytes) => {
            json!({ "bytesValue": base64::engine::general_purpose::STANDARD.encode(bytes) })
        }
        any_value::Value::StringValueStrindex(index) => json!({ "stringValueStrindex": index }),
    }
}

pub(crate) fn key_value_to_json(kv: &KeyValue) -> Value {
    let mut object = Map::new();
    if !kv.key.is_empty() || kv.key_strindex == 0 {
        object.insert("key".into(), Value::String(kv.key.clone()));
    }
    if kv.key_strindex != 0 {
        object.insert("keyStrindex".into(), json!(kv.key_strindex));
    }
    if let Some(value) = &kv.value {
        object.insert("value".into(), any_value_to_json(value));
    }
    Value::Object(object)
}

/// proto3 JSON writes non-finite doubles as strings.
pub(crate) fn double_to_json(d: f64) -> Value {
    if d.is_nan() {
        Value::String("NaN".into())
    } else if d == f64::INFINITY {
        Value::String("Infinity".into())
    } else if d == f64::NEG_INFINITY {
        Value::String("-Infinity".into())
    } else {
        json!(d)
    }
}

/// An `AnyValue` on its own, outside a document.
pub fn any_value_from_json(value: &Value) -> Result<AnyValue, JsonError> {
    any_value_at(value, Path::Root)
}

pub(crate) fn any_value_at(value: &Value, at: Path<'_>) -> Result<AnyValue, JsonError> {
    nested_any_value(value, at, 0)
}

pub(crate) fn key_value_at(value: &Value, at: Path<'_>) -> Result<KeyValue, JsonError> {
    nested_key_value(value, at, 0)
}

fn nested_any_value(value: &Value, at: Path<'_>, depth: usize) -> Result<AnyValue, JsonError> {
    if depth > MAX_NESTING {
        return Err(at.error(format!("values nest deeper than {MAX_NESTING} levels")));
    }
    let fields = Fields::of(value, &at)?;
    let mut present = KINDS.into_iter().filter(|&(k, _)| fields.has(k));
    let (k, kind) = match (present.next(), present.next()) {
        (None, _) => return Ok(AnyValue { value: None }),
        (Some(only), None) => only,
        (Some((first, _)), Some((second, _))) => {
            let problem = format!(
                "sets both {} and {}; an AnyValue holds one",
                first.camel(),
                second.camel()
            );
            return Err(at.error(problem));
        }
    };
    let value = match kind {
        Kind::String => any_value::Value::StringValue(fields.string(k)?),
        Kind::Bool => any_value::Value::BoolValue(fields.scalar(k, bool_from_json)?),
        Kind::Int => any_value::Value::IntValue(fields.i64(k)?),
        Kind::Double => any_value::Value::DoubleValue(fields.scalar(k, double_from_json)?),
        Kind::Array => any_value::Value::ArrayValue(
            fields
                .message(k, |v, at| nested_array(v, at, depth))?
                .unwrap_or_default(),
        ),
        Kind::Kvlist => any_value::Value::KvlistValue(
            fields
                .message(k, |v, at| nested_kvlist(v, at, depth))?
                .unwrap_or_default(),
        ),
        Kind::Bytes => any_value::Value::BytesValue(fields.base64(k)?),
        Kind::StringStrindex => any_value::Value::StringValueStrindex(fields.i32(k)?),
    };
    Ok(AnyValue { value: Some(value) })
}

fn nested_array(value: &Value, at: Path<'_>, depth: usize) -> Result<ArrayValue, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(ArrayValue {
        values: fields.list(VALUES, |v, at| nested_any_value(v, at, depth + 1))?,
    })
}

fn nested_kvlist(value: &Value, at: Path<'_>, depth: usize) -> Result<KeyValueList, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(KeyValueList {
        values: fields.list(VALUES, |v, at| nested_key_value(v, at, depth + 1))?,
    })
}

fn nested_key_value(value: &Value, at: Path<'_>, depth: usize) -> Result<KeyValue, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(KeyValue {
        key: fields.string(KEY)?,
        value: fields.message(VALUE, |v, at| nested_any_value(v, at, depth))?,
        key_strindex: fields.i32(KEY_STRINDEX)?,
    })
}
