//! OTLP/JSON for profiles, per the OTLP specification ("JSON Protobuf
//! Encoding"): lowerCamelCase keys (snake_case accepted too), hex
//! trace/span/profile ids, other bytes in base64, 64-bit integers as decimal
//! strings (strings or numbers accepted), enums as integers, default-valued
//! fields left out, unknown fields ignored. docs/otlp-json.md has the rules
//! and where opentelemetry-proto's `with-serde` differs.

mod any_value;
mod envelope;
mod path;
mod profile;
mod read;
mod scalar;
mod tables;
mod write;

use serde_json::Value;
use thiserror::Error;

pub use any_value::{any_value_from_json, any_value_to_json};

pub use self::path::MAX_UNKNOWN_KEYS;
use self::path::{Path, UnknownKeys};

use crate::otlp::ExportProfilesServiceRequest;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JsonError {
    #[error("not JSON: {0}")]
    Syntax(String),
    /// `path` is empty when the fault is the document itself.
    #[error("{}", located(path, problem))]
    Invalid { path: String, problem: String },
}

fn located(path: &str, problem: &str) -> String {
    if path.is_empty() {
        problem.to_owned()
    } else {
        format!("{path}: {problem}")
    }
}

pub fn request_to_json(request: &ExportProfilesServiceRequest) -> Value {
    envelope::request_to_json(request)
}

/// Compact JSON text.
pub fn request_to_json_string(request: &ExportProfilesServiceRequest) -> String {
    request_to_json(request).to_string()
}

pub fn request_from_json(bytes: &[u8]) -> Result<ExportProfilesServiceRequest, JsonError> {
    request_from_json_value(&parse(bytes)?)
}

pub fn request_from_json_value(value: &Value) -> Result<ExportProfilesServiceRequest, JsonError> {
    envelope::request_from_json(value, Path::Root)
}

/// A request read from OTLP/JSON, and the keys that were skipped because
/// the schema has no such field.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadWithUnknownKeys {
    pub request: ExportProfilesServiceRequest,
    /// Each skipped key once, by its path with list indexes written `[]`
    /// (`resourceProfiles[].scopeProfiles[].profiles[].sample`), sorted;
    /// the first [`MAX_UNKNOWN_KEYS`] found.
    pub unknown_keys: Vec<String>,
}

/// [`request_from_json`], noting the keys it skipped: unknown keys are
/// ignored, as OTLP receivers must, but a document written for another
/// version of the schema may lose everything that way.
pub fn request_from_json_noting_unknown_keys(
    bytes: &[u8],
) -> Result<ReadWithUnknownKeys, JsonError> {
    let value = parse(bytes)?;
    let record = UnknownKeys::default();
    let request = envelope::request_from_json(&value, Path::NotingRoot(&record))?;
    Ok(ReadWithUnknownKeys {
        request,
        unknown_keys: record.into_sorted(),
    })
}

fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    serde_json::from_slice(bytes).map_err(|e| JsonError::Syntax(e.to_string()))
}
