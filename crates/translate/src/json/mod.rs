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
mod tables;
mod write;

use serde_json::Value;
use thiserror::Error;

pub use any_value::{any_value_from_json, any_value_to_json};

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
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| JsonError::Syntax(e.to_string()))?;
    request_from_json_value(&value)
}

pub fn request_from_json_value(value: &Value) -> Result<ExportProfilesServiceRequest, JsonError> {
    envelope::request_from_json(value)
}
