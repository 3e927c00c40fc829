//! The summary as JSON, for scripts (shape in docs/cli-inspect.md).

use serde_json::{json, Map, Value};

use super::source::Origin;
use super::summary::Summary;

pub struct JsonReport<'a> {
    pub file: &'a str,
    pub format: &'a str,
    pub origin: Option<&'a Origin>,
    pub summary: &'a Summary,
    pub top: usize,
}

impl JsonReport<'_> {
    pub fn to_value(&self) -> Value {
        let summary = self.summary;
        let mut object = Map::new();
        object.insert("file".into(), json!(self.file));
        object.insert("format".into(), json!(self.format));
        match self.origin {
            Some(Origin::Otlp(origin)) => {
                object.insert(
                    "otlp".into(),
                    json!({
                        "resource": origin.resource,
                        "scope": origin.scope,
                        "scope_name": origin.scope_name,
                        "scope_version": origin.scope_version,
                        "service_name": origin.service_name,
                    }),
                );
            }
            Some(Origin::Jfr(kind)) => {
                object.insert(
                    "jfr".into(),
                    json!({ "profile": kind.name(), "metric": kind.metric() }),
                );
            }
            None => {}
        }
        let sample_types: Vec<Value> = summary
            .sample_types
            .iter()
            .map(|sample_type| {
                json!({
                    "type": sample_type.name,
                    "unit": sample_type.unit,
                    "default": sample_type.is_default,
                    "total": number(sample_type.total),
                })
            })
            .collect();
        object.insert("sample_types".into(), Value::Array(sample_types));
        object.insert(
            "selected_sample_type".into(),
            json!(summary.selected_type().map(|t| &t.name)),
        );
        let counts = summary.counts;
        object.insert(
            "counts".into(),
            json!({
                "samples": counts.samples,
                "locations": counts.locations,
                "functions": counts.functions,
                "mappings": counts.mappings,
            }),
        );
        let top: Vec<Value> = summary
            .top(self.top)
            .iter()
            .map(|function| json!({ "function": function.name, "flat": number(function.flat), "cum": number(function.cum) }))
            .collect();
        object.insert("top".into(), Value::Array(top));
        let frame_types: Vec<Value> = summary
            .frame_types
            .iter()
            .map(|(name, value)| json!({ "type": name, "value": number(*value) }))
            .collect();
        object.insert("frame_types".into(), Value::Array(frame_types));
        Value::Object(object)
    }
}

/// A sum as a JSON integer; one beyond 64 bits (only from overflowing
/// inputs) is clamped.
fn number(value: i128) -> Value {
    json!(i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX }))
}
