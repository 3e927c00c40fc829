//! The OTLP data pprof has no field for (docs/mapping.md, "Reserved
//! string"): mapping, location and profile attributes other than the ones
//! pprof fields carry, and schema URLs. OTLP → pprof appends it to the
//! pprof string table as one string that no field references:
//! [`PREFIX`] followed by a JSON object. google/pprof ignores strings no
//! field references (and drops them when it rewrites a profile);
//! pprof → OTLP decodes it instead of copying it.
//!
//! ```text
//! profbridge.otlp.v1:{"resourceSchemaUrl":"…","scopeSchemaUrl":"…",
//!   "profiles":[{"sampleType":0,"attributes":[A,…]}],
//!   "mappings":[{"id":1,"attributes":[A,…]}],
//!   "locations":[{"id":7,"attributes":[A,…]}]}
//! A = {"key":"…","value":<OTLP/JSON AnyValue>,"unit":"…"}
//! ```
//!
//! Every member is optional; `unit` is left out when empty.

use serde_json::{json, Map, Value};
use thiserror::Error;

use profbridge_pprof::SampleSource;

use crate::json::{any_value_from_json, any_value_to_json};
use crate::keys::{
    BUILD_ID_GNU, BUILD_ID_GO, BUILD_ID_HTLHASH, COMMENT, DOC_URL, DROP_FRAMES, FRAME_TYPE,
    IS_FOLDED, KEEP_FRAMES, MAPPING_FLAGS,
};
use crate::otlp::{any_value, AnyValue};
use crate::reserved::build_id::looks_like_go_build_id;

/// What the reserved string starts with.
pub(crate) const PREFIX: &str = "profbridge.otlp.v1:";

/// An attribute with its strings resolved.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Attribute {
    pub key: String,
    pub value: AnyValue,
    pub unit: String,
}

/// Attribute lists by pprof id (mappings, locations) or sample type index
/// (profiles), ids ascending.
pub(crate) type ById = Vec<(u64, Vec<Attribute>)>;

/// What the reserved string holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct OtlpData {
    pub resource_schema_url: String,
    pub scope_schema_url: String,
    /// The complete attribute list of the profile of each sample type
    /// whose attributes pprof fields do not carry exactly.
    pub profiles: ById,
    /// The complete attribute list of each mapping whose attributes
    /// pprof fields do not carry exactly.
    pub mappings: ById,
    /// The attributes of each location that pprof does not carry (all but
    /// a true `pprof.location.is_folded` and a string `profile.frame.type`).
    pub locations: ById,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum OtlpDataError {
    #[error("not JSON: {0}")]
    Syntax(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Value(#[from] crate::json::JsonError),
}

fn invalid(problem: impl Into<String>) -> OtlpDataError {
    OtlpDataError::Invalid(problem.into())
}

impl OtlpData {
    pub fn is_empty(&self) -> bool {
        self.resource_schema_url.is_empty()
            && self.scope_schema_url.is_empty()
            && self.profiles.is_empty()
            && self.mappings.is_empty()
            && self.locations.is_empty()
    }

    /// The reserved string.
    pub fn encode(&self) -> String {
        let mut object = Map::new();
        for (name, url) in [
            ("resourceSchemaUrl", &self.resource_schema_url),
            ("scopeSchemaUrl", &self.scope_schema_url),
        ] {
            if !url.is_empty() {
                object.insert(name.into(), Value::String(url.clone()));
            }
        }
        for (name, id_name, entries) in [
            ("profiles", "sampleType", &self.profiles),
            ("mappings", "id", &self.mappings),
            ("locations", "id", &self.locations),
        ] {
            if !entries.is_empty() {
                let entries = entries
                    .iter()
                    .map(|(id, attributes)| {
                        json!({
                            id_name: id,
                            "attributes": attributes.iter().map(attribute_to_json).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                object.insert(name.into(), Value::Array(entries));
            }
        }
        let mut out = String::from(PREFIX);
        out.push_str(&Value::Object(object).to_string());
        out
    }

    /// Reads a reserved string (with its prefix).
    pub fn decode(text: &str) -> Result<Self, OtlpDataError> {
        let body = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| invalid("no reserved prefix"))?;
        let value: Value =
            serde_json::from_str(body).map_err(|e| OtlpDataError::Syntax(e.to_string()))?;
        let Value::Object(object) = value else {
            return Err(invalid("not a JSON object"));
        };
        let url = |name: &str| match object.get(name) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(invalid(format!("{name} is not a string"))),
        };
        Ok(Self {
            resource_schema_url: url("resourceSchemaUrl")?,
            scope_schema_url: url("scopeSchemaUrl")?,
            profiles: entries_from_json(object.get("profiles"), "sampleType")?,
            mappings: entries_from_json(object.get("mappings"), "id")?,
            locations: entries_from_json(object.get("locations"), "id")?,
        })
    }

    /// The reserved string of `p`, decoded: its last string, when it starts
    /// with [`PREFIX`] and no field references it. `None` when there is
    /// none; an error when it does not decode.
    pub fn of_pprof(source: &impl SampleSource) -> Option<Result<Self, OtlpDataError>> {
        let p = source.tables();
        let last = p.string_table.len().checked_sub(1).filter(|&i| i != 0)?;
        let text = p.string_table.get(last)?;
        if !text.starts_with(PREFIX) || references(source, last as i64) {
            return None;
        }
        Some(Self::decode(text))
    }
}

/// Whether a field of `p` references string `index`.
fn references(source: &impl SampleSource, index: i64) -> bool {
    let p = source.tables();
    let value_type = |vt: &profbridge_pprof::ValueType| vt.r#type == index || vt.unit == index;
    p.sample_type.iter().any(value_type)
        || p.period_type.as_ref().is_some_and(value_type)
        || source
            .try_for_each_sample(|_, s| {
                let referenced = s
                    .label
                    .iter()
                    .any(|l| l.key == index || l.str == index || l.num_unit == index);
                if referenced {
                    Err(())
                } else {
                    Ok(())
                }
            })
            .is_err()
        || p.mapping
            .iter()
            .any(|m| m.filename == index || m.build_id == index)
        || p.function
            .iter()
            .any(|f| f.name == index || f.system_name == index || f.filename == index)
        || p.comment.contains(&index)
        || [
            p.drop_frames,
            p.keep_frames,
            p.default_sample_type,
            p.doc_url,
        ]
        .contains(&index)
}

fn attribute_to_json(attribute: &Attribute) -> Value {
    let mut object = Map::new();
    object.insert("key".into(), Value::String(attribute.key.clone()));
    object.insert("value".into(), any_value_to_json(&attribute.value));
    if !attribute.unit.is_empty() {
        object.insert("unit".into(), Value::String(attribute.unit.clone()));
    }
    Value::Object(object)
}

fn attribute_from_json(value: &Value) -> Result<Attribute, OtlpDataError> {
    let Value::Object(object) = value else {
        return Err(invalid("an attribute is not an object"));
    };
    let text = |name: &str| match object.get(name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(invalid(format!("attribute {name} is not a string"))),
    };
    let value = match object.get("value") {
        None => AnyValue::default(),
        Some(v) => any_value_from_json(v)?,
    };
    Ok(Attribute {
        key: text("key")?,
        value,
        unit: text("unit")?,
    })
}

fn entries_from_json(entries: Option<&Value>, id_name: &str) -> Result<ById, OtlpDataError> {
    let Some(entries) = entries else {
        return Ok(Vec::new());
    };
    let Value::Array(entries) = entries else {
        return Err(invalid("entries are not an array"));
    };
    let mut out: ById = entries
        .iter()
        .map(|entry| {
            let id = entry
                .get(id_name)
                .and_then(Value::as_u64)
                .ok_or_else(|| invalid(format!("an entry has no {id_name}")))?;
            let attributes = match entry.get("attributes") {
                None => Vec::new(),
                Some(Value::Array(list)) => list
                    .iter()
                    .map(attribute_from_json)
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(invalid("attributes are not an array")),
            };
            Ok((id, attributes))
        })
        .collect::<Result<_, _>>()?;
    out.sort_by_key(|(id, _)| *id);
    out.dedup_by_key(|(id, _)| *id);
    Ok(out)
}

/// The attributes of `id` in `entries` (sorted by id).
pub(crate) fn entry(entries: &ById, id: u64) -> Option<&[Attribute]> {
    entries
        .binary_search_by_key(&id, |(i, _)| *i)
        .ok()
        .and_then(|i| entries.get(i))
        .map(|(_, attributes)| attributes.as_slice())
}

fn string_of(value: &AnyValue) -> Option<&str> {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn is_true(value: &AnyValue) -> bool {
    matches!(value.value, Some(any_value::Value::BoolValue(true)))
}

/// The build id `Mapping.build_id` holds: the gnu one, else the go one,
/// else the htlhash one (string values only).
pub(crate) fn primary_build_id<'a>(
    attributes: impl Iterator<Item = (&'a str, &'a AnyValue)> + Clone,
) -> &'a str {
    [BUILD_ID_GNU, BUILD_ID_GO, BUILD_ID_HTLHASH]
        .iter()
        .find_map(|kind| {
            attributes
                .clone()
                .find(|(key, _)| key == kind)
                .and_then(|(_, value)| string_of(value))
        })
        .unwrap_or_default()
}

/// Whether pprof → OTLP gives back exactly these mapping attributes from
/// the pprof fields: at most one build id, under the kind its text implies,
/// and `has_*` flags that are true; no units.
pub(crate) fn mapping_is_plain<'a>(
    mut attributes: impl Iterator<Item = (&'a str, &'a AnyValue, &'a str)>,
) -> bool {
    let mut build_ids = 0;
    attributes.all(|(key, value, unit)| {
        unit.is_empty()
            && match key {
                BUILD_ID_GNU | BUILD_ID_GO => {
                    build_ids += 1;
                    string_of(value).is_some_and(|id| {
                        !id.is_empty() && looks_like_go_build_id(id) == (key == BUILD_ID_GO)
                    })
                }
                k if MAPPING_FLAGS.contains(&k) => is_true(value),
                _ => false,
            }
    }) && build_ids <= 1
}

/// Whether the mapping attributes of a reserved entry agree with the pprof
/// mapping's fields, so that they may stand for them.
pub(crate) fn mapping_entry_agrees(
    attributes: &[Attribute],
    build_id: &str,
    flags: [bool; 4],
) -> bool {
    let pairs = attributes.iter().map(|a| (a.key.as_str(), &a.value));
    primary_build_id(pairs) == build_id
        && MAPPING_FLAGS.iter().zip(flags).all(|(flag, set)| {
            attributes
                .iter()
                .any(|a| a.key == *flag && is_true(&a.value))
                == set
        })
}

/// Whether pprof carries a location attribute itself: a true
/// `pprof.location.is_folded` or a string `profile.frame.type`, no unit.
pub(crate) fn location_attribute_is_carried(key: &str, value: &AnyValue, unit: &str) -> bool {
    unit.is_empty()
        && match key {
            IS_FOLDED => is_true(value),
            FRAME_TYPE => string_of(value).is_some(),
            _ => false,
        }
}

/// Whether pprof → OTLP gives back exactly these profile attributes from
/// the pprof fields: `pprof.profile.comment` as an array of one or more
/// strings, the other `pprof.profile.*` as non-empty strings; no units.
pub(crate) fn profile_is_plain<'a>(
    mut attributes: impl Iterator<Item = (&'a str, &'a AnyValue, &'a str)>,
) -> bool {
    attributes.all(|(key, value, unit)| {
        unit.is_empty()
            && match key {
                COMMENT => match &value.value {
                    Some(any_value::Value::ArrayValue(array)) => {
                        !array.values.is_empty()
                            && array.values.iter().all(|v| string_of(v).is_some())
                    }
                    _ => false,
                },
                DROP_FRAMES | KEEP_FRAMES | DOC_URL => {
                    string_of(value).is_some_and(|s| !s.is_empty())
                }
                _ => false,
            }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::otlp::{array_value, bool_value, int_value, string_value};

    fn attribute(key: &str, value: AnyValue, unit: &str) -> Attribute {
        Attribute {
            key: key.into(),
            value,
            unit: unit.into(),
        }
    }

    #[test]
    fn encodes_and_decodes() {
        let data = OtlpData {
            resource_schema_url: "https://opentelemetry.io/schemas/1.30.0".into(),
            scope_schema_url: String::new(),
            profiles: vec![(1, vec![attribute("a", int_value(3), "ms")])],
            mappings: vec![(
                2,
                vec![
                    attribute(BUILD_ID_GNU, string_value("abcd"), ""),
                    attribute(BUILD_ID_HTLHASH, string_value("0123"), ""),
                ],
            )],
            locations: vec![(
                7,
                vec![attribute("b", array_value(vec![bool_value(true)]), "")],
            )],
        };
        let text = data.encode();
        assert!(text.starts_with(PREFIX));
        assert_eq!(OtlpData::decode(&text).unwrap(), data);
        assert!(OtlpData::default().is_empty());
    }

    #[test]
    fn malformed_strings_are_errors_not_panics() {
        for text in [
            "profbridge.otlp.v1:",
            "profbridge.otlp.v1:[]",
            "profbridge.otlp.v1:{\"mappings\":3}",
            "profbridge.otlp.v1:{\"mappings\":[{\"attributes\":[]}]}",
            "profbridge.otlp.v1:{\"mappings\":[{\"id\":-1}]}",
            "profbridge.otlp.v1:{\"locations\":[{\"id\":1,\"attributes\":[{\"key\":1}]}]}",
            "profbridge.otlp.v1:{\"locations\":[{\"id\":1,\"attributes\":[{\"value\":{\"intValue\":\"x\"}}]}]}",
            "profbridge.otlp.v1:{\"scopeSchemaUrl\":false}",
            "profbridge.otlp.v1:{\"profiles\":[{\"sampleType\":0,\"attributes\":{}}]}",
        ] {
            assert!(OtlpData::decode(text).is_err(), "{text}");
        }
    }

    #[test]
    fn plainness() {
        let gnu = string_value("deadbeef");
        let go = string_value("abc/def");
        let yes = bool_value(true);
        assert!(mapping_is_plain(
            [(BUILD_ID_GNU, &gnu, ""), (MAPPING_FLAGS[0], &yes, "")].into_iter()
        ));
        assert!(mapping_is_plain([(BUILD_ID_GO, &go, "")].into_iter()));
        assert!(!mapping_is_plain([(BUILD_ID_GNU, &go, "")].into_iter()));
        assert!(!mapping_is_plain(
            [(BUILD_ID_HTLHASH, &gnu, "")].into_iter()
        ));
        assert!(!mapping_is_plain(
            [(BUILD_ID_GNU, &gnu, ""), (BUILD_ID_GO, &go, "")].into_iter()
        ));
        assert!(!mapping_is_plain([("other", &yes, "")].into_iter()));
        assert_eq!(
            primary_build_id([(BUILD_ID_HTLHASH, &gnu), (BUILD_ID_GO, &go)].into_iter()),
            "abc/def"
        );
    }
}
