//! `AnyValue` ⇄ JSON, as OTLP/JSON writes it: `{"stringValue": "…"}`,
//! `{"intValue": "42"}`, `{"arrayValue": {"values": […]}}`, …, and the
//! scalar parsers the other message decoders share.

use base64::Engine;
use serde_json::{json, Map, Value};

use super::path::Path;
use super::read::{key, Fields, Key};
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

/// A JSON scalar that is not what its field holds; each names the value
/// as [`describe`] writes it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ScalarError {
    #[error("{0} is not a boolean")]
    NotBoolean(String),
    #[error("{0} is not a string")]
    NotString(String),
    #[error("{0} is not a double")]
    NotDouble(String),
    #[error("{0} is not a 64-bit integer")]
    NotI64(String),
    #[error("{0} is not an unsigned 64-bit integer")]
    NotU64(String),
    #[error("{0} is not a 32-bit integer")]
    NotI32(String),
    #[error("{0} is not an unsigned 32-bit integer")]
    NotU32(String),
    #[error("{0} is not a base64 string")]
    NotBase64String(String),
    #[error("{0} is not base64")]
    NotBase64(String),
    #[error("{0} is not a hex string")]
    NotHexString(String),
    #[error("{value} is not a hex id of {bytes} bytes ({} hex digits)", bytes * 2)]
    NotHexId { value: String, bytes: usize },
}

/// A short description of a JSON value for error messages: scalars as
/// written (long strings cut), containers by kind.
pub(crate) fn describe(value: &Value) -> String {
    const LIMIT: usize = 40;
    match value {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "an array".into(),
        Value::String(s) if s.chars().count() > LIMIT => {
            let cut: String = s.chars().take(LIMIT).collect();
            format!("{:?}…", cut)
        }
        other => other.to_string(),
    }
}

pub(crate) fn bool_from_json(value: &Value) -> Result<bool, ScalarError> {
    value
        .as_bool()
        .ok_or_else(|| ScalarError::NotBoolean(describe(value)))
}

pub(crate) fn string_from_json(value: &Value) -> Result<String, ScalarError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(ScalarError::NotString(describe(other))),
    }
}

pub(crate) fn double_from_json(value: &Value) -> Result<f64, ScalarError> {
    let not_double = || ScalarError::NotDouble(describe(value));
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(not_double),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other.parse().map_err(|_| not_double()),
        },
        _ => Err(not_double()),
    }
}

/// A 64-bit integer written as a decimal string or a JSON number.
pub(crate) fn i64_from_json(value: &Value) -> Result<i64, ScalarError> {
    let parsed = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| ScalarError::NotI64(describe(value)))
}

pub(crate) fn u64_from_json(value: &Value) -> Result<u64, ScalarError> {
    let parsed = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| ScalarError::NotU64(describe(value)))
}

/// A 32-bit integer (an index), as a JSON number or decimal string.
pub(crate) fn i32_from_json(value: &Value) -> Result<i32, ScalarError> {
    i64_from_json(value)
        .ok()
        .and_then(|i| i32::try_from(i).ok())
        .ok_or_else(|| ScalarError::NotI32(describe(value)))
}

pub(crate) fn u32_from_json(value: &Value) -> Result<u32, ScalarError> {
    u64_from_json(value)
        .ok()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| ScalarError::NotU32(describe(value)))
}

pub(crate) fn base64_from_json(value: &Value) -> Result<Vec<u8>, ScalarError> {
    match value {
        Value::String(text) => decode_base64(text),
        other => Err(ScalarError::NotBase64String(describe(other))),
    }
}

/// Standard or URL-safe base64, padded or not, as proto3 JSON accepts.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, ScalarError> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
        .ok_or_else(|| ScalarError::NotBase64(describe(&Value::String(text.to_owned()))))
}
