//! The scalar parsers every message decoder shares: proto3 JSON's
//! booleans, strings, numbers (as numbers or decimal strings) and base64.

use base64::Engine;
use serde_json::Value;

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
