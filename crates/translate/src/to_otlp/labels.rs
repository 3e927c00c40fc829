//! A pprof sample's labels: the reserved ones decoded, the others grouped
//! by key into OTLP attributes.

use std::borrow::Cow;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use base64::Engine;
use thiserror::Error;

use crate::dictionary::DictionaryBuilder;
use crate::json::any_value_from_json;
use crate::keys::{
    ATTR_TYPES_LABEL, FRAME_TYPES_LABEL, SPAN_ID_LABEL, TIMESTAMP_LABEL, TRACE_ID_LABEL,
};
use crate::otlp::{any_value, array_value, int_value, string_value, AnyValue, Link};
use crate::reserved::attr_types::{self, TypeHint, TypedKey};
use crate::reserved::{frame_types, hex};

/// A label after string resolution; key-only labels never get here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum LabelValue<'a> {
    Str(&'a str),
    Num(i64, &'a str),
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LabelError {
    #[error("label {key:?} has both str and num values; OTLP attributes hold one type")]
    Mixed { key: String },
    #[error("label {key:?} has numbers in different units ({first:?} and {second:?})")]
    Units {
        key: String,
        first: String,
        second: String,
    },
}

/// What one sample's labels become.
#[derive(Debug, Default)]
pub(super) struct SampleLabels {
    pub frame_types: Option<FrameTypes>,
    pub link: Option<Link>,
    pub timestamp: Option<u64>,
    pub attributes: Vec<i32>,
}

impl SampleLabels {
    /// What a sample without labels gets.
    pub fn is_empty(&self) -> bool {
        self.frame_types.is_none()
            && self.link.is_none()
            && self.timestamp.is_none()
            && self.attributes.is_empty()
    }
}

/// Decoded frame types as ids into `LabelCache::frame_type_names`, shared by
/// the samples whose labels are equal.
pub(super) type FrameTypes = Rc<[Option<u32>]>;

/// What many samples share: decoded frame-type labels and the attributes
/// of single labels, so that each is worked out once per profile.
#[derive(Default)]
pub(super) struct LabelCache<'a> {
    frame_types: FxHashMap<(&'a str, usize), Option<FrameTypes>>,
    frame_type_ids: FxHashMap<Cow<'a, str>, u32>,
    pub frame_type_names: Vec<String>,
    single: FxHashMap<(&'a str, LabelValue<'a>), i32>,
}

impl<'a> LabelCache<'a> {
    fn frame_type_id(&mut self, name: Cow<'a, str>) -> u32 {
        if let Some(&id) = self.frame_type_ids.get(&name) {
            return id;
        }
        let id = u32::try_from(self.frame_type_names.len()).unwrap_or(u32::MAX);
        self.frame_type_names.push(name.to_string());
        self.frame_type_ids.insert(name, id);
        id
    }
}

/// Splits `labels` into reserved and ordinary ones for a stack of `depth`
/// frames, and interns the ordinary ones as attributes.
pub(super) fn convert<'a>(
    labels: &[(&'a str, LabelValue<'a>)],
    depth: usize,
    aggregate_timestamps: bool,
    dictionary: &mut DictionaryBuilder,
    cache: &mut LabelCache<'a>,
) -> Result<SampleLabels, LabelError> {
    let mut out = SampleLabels::default();
    if labels.is_empty() {
        return Ok(out);
    }
    let only = |key: &str| {
        let mut found = labels.iter().filter(|(k, _)| *k == key);
        match (found.next(), found.next()) {
            (Some((_, value)), None) => Some(*value),
            _ => None,
        }
    };
    let mut reserved: Vec<&str> = Vec::new();

    if let Some(LabelValue::Str(value)) = only(FRAME_TYPES_LABEL) {
        let decoded = match cache.frame_types.get(&(value, depth)) {
            Some(decoded) => decoded.clone(),
            None => {
                let ids: Option<FrameTypes> = frame_types::decode(value, depth).map(|types| {
                    types
                        .into_iter()
                        .map(|t| t.map(|name| cache.frame_type_id(name)))
                        .collect()
                });
                cache.frame_types.insert((value, depth), ids.clone());
                ids
            }
        };
        if let Some(types) = decoded {
            out.frame_types = Some(types);
            reserved.push(FRAME_TYPES_LABEL);
        }
    }
    if let (Some(LabelValue::Str(trace)), Some(LabelValue::Str(span))) =
        (only(TRACE_ID_LABEL), only(SPAN_ID_LABEL))
    {
        if let (Some(trace_id), Some(span_id)) = (
            hex::decode_lowercase(trace, 16),
            hex::decode_lowercase(span, 8),
        ) {
            out.link = Some(Link { trace_id, span_id });
            reserved.extend([TRACE_ID_LABEL, SPAN_ID_LABEL]);
        }
    }
    if let Some(LabelValue::Num(nanos, "")) = only(TIMESTAMP_LABEL) {
        if !aggregate_timestamps {
            out.timestamp = Some(nanos as u64);
        }
        reserved.push(TIMESTAMP_LABEL);
    }

    let groups = group_by_key(labels, &reserved);
    let typed = match only(ATTR_TYPES_LABEL) {
        Some(LabelValue::Str(value)) => {
            attr_types::decode(value).and_then(|keys| typed_attributes(&keys, &groups))
        }
        _ => None,
    };
    let typed = typed.unwrap_or_default();
    for (key, values) in &groups {
        if typed.iter().any(|(k, _)| k.key == *key)
            || (*key == ATTR_TYPES_LABEL && !typed.is_empty())
        {
            continue;
        }
        if let [single] = values.as_slice() {
            if let Some(&index) = cache.single.get(&(*key, *single)) {
                out.attributes.push(index);
                continue;
            }
        }
        let (value, unit) = plain_attribute(key, values)?;
        let index = dictionary.attribute(key, value, unit);
        if let [single] = values.as_slice() {
            cache.single.insert((*key, *single), index);
        }
        out.attributes.push(index);
    }
    for (typed_key, value) in typed {
        out.attributes
            .push(dictionary.attribute(&typed_key.key, value, &typed_key.unit));
    }
    out.attributes.sort_unstable();
    out.attributes.dedup();
    Ok(out)
}

/// Ordinary labels grouped by key, keys in order of first appearance.
fn group_by_key<'a>(
    labels: &[(&'a str, LabelValue<'a>)],
    reserved: &[&str],
) -> Vec<(&'a str, Vec<LabelValue<'a>>)> {
    let mut groups: Vec<(&str, Vec<LabelValue<'_>>)> = Vec::new();
    for &(key, value) in labels {
        if reserved.contains(&key) {
            continue;
        }
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => groups.push((key, vec![value])),
        }
    }
    groups
}

/// Strings become a string or an array of strings; numbers (in one unit)
/// an int or an array of ints.
fn plain_attribute<'a>(
    key: &str,
    values: &[LabelValue<'a>],
) -> Result<(AnyValue, &'a str), LabelError> {
    let mut strings = Vec::new();
    let mut numbers = Vec::new();
    let mut unit: Option<&str> = None;
    for value in values {
        match *value {
            LabelValue::Str(s) => strings.push(string_value(s)),
            LabelValue::Num(n, u) => {
                if let Some(first) = unit.filter(|first| *first != u) {
                    return Err(LabelError::Units {
                        key: key.to_owned(),
                        first: first.to_owned(),
                        second: u.to_owned(),
                    });
                }
                unit = Some(u);
                numbers.push(int_value(n));
            }
        }
    }
    let mut chosen = match (strings.is_empty(), numbers.is_empty()) {
        (false, false) => {
            return Err(LabelError::Mixed {
                key: key.to_owned(),
            })
        }
        (true, _) => numbers,
        (false, true) => strings,
    };
    let value = if chosen.len() == 1 {
        chosen.pop().unwrap_or_default()
    } else {
        array_value(chosen)
    };
    Ok((value, unit.unwrap_or_default()))
}

/// The attributes that `otel.attr_types` types; `None` (the label then
/// counts as ordinary) when any of them does not decode.
fn typed_attributes(
    keys: &[TypedKey],
    groups: &[(&str, Vec<LabelValue<'_>>)],
) -> Option<Vec<(TypedKey, AnyValue)>> {
    keys.iter()
        .map(|typed_key| {
            let (_, values) = groups.iter().find(|(k, _)| *k == typed_key.key)?;
            let [LabelValue::Str(text)] = values.as_slice() else {
                return None;
            };
            let value = match typed_key.hint {
                TypeHint::Bool => match *text {
                    "true" => any_value::Value::BoolValue(true),
                    "false" => any_value::Value::BoolValue(false),
                    _ => return None,
                },
                TypeHint::Double => any_value::Value::DoubleValue(text.parse().ok()?),
                TypeHint::Bytes => any_value::Value::BytesValue(
                    base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .ok()?,
                ),
                TypeHint::Json => {
                    let json: serde_json::Value = serde_json::from_str(text).ok()?;
                    return Some((typed_key.clone(), any_value_from_json(&json).ok()?));
                }
            };
            Some((typed_key.clone(), AnyValue { value: Some(value) }))
        })
        .collect()
}
