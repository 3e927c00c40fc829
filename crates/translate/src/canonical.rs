//! Canonical form of an OTLP profiles request (docs/mapping.md): resolved
//! values instead of indexes, samples keyed by what they are, and the
//! encodings that mean the same thing made equal.

use std::collections::BTreeMap;

use crate::keys::{DEFAULT_SAMPLE_TYPE, SAMPLE_TYPE_ORDER};
use crate::otlp::{
    any_value, resolve_strings, AnyValue, ExportProfilesServiceRequest, KeyValue,
    ProfilesDictionary,
};

/// An attribute value with doubles compared by their bits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    Empty,
    String(String),
    Bool(bool),
    Int(i64),
    Double(u64),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
    Bytes(Vec<u8>),
}

impl Value {
    fn of(value: &AnyValue) -> Self {
        match &value.value {
            None => Self::Empty,
            Some(any_value::Value::StringValue(s)) => Self::String(s.clone()),
            // Resolved before this point; an unresolvable one stays distinct.
            Some(any_value::Value::StringValueStrindex(i)) => Self::Int(i64::from(*i)),
            Some(any_value::Value::BoolValue(b)) => Self::Bool(*b),
            Some(any_value::Value::IntValue(i)) => Self::Int(*i),
            Some(any_value::Value::DoubleValue(d)) => Self::Double(d.to_bits()),
            Some(any_value::Value::ArrayValue(a)) => {
                Self::Array(a.values.iter().map(Self::of).collect())
            }
            Some(any_value::Value::KvlistValue(list)) => Self::Map(key_values(&list.values)),
            Some(any_value::Value::BytesValue(b)) => Self::Bytes(b.clone()),
        }
    }
}

/// (key, value, unit), sorted.
pub type Attributes = Vec<(String, Value, String)>;

fn key_values(values: &[KeyValue]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = values
        .iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map_or(Value::Empty, Value::of),
            )
        })
        .collect();
    out.sort();
    out
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mapping {
    pub memory_start: u64,
    pub memory_limit: u64,
    pub file_offset: u64,
    pub filename: String,
    pub attributes: Attributes,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Function {
    pub name: String,
    pub system_name: String,
    pub filename: String,
    pub start_line: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub mapping: Option<Mapping>,
    pub address: u64,
    pub lines: Vec<(Function, i64, i64)>,
    pub attributes: Attributes,
}

/// What identifies a sample: its stack, attributes and link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SampleKey {
    pub stack: Vec<Location>,
    pub attributes: Attributes,
    pub link: Option<(Vec<u8>, Vec<u8>)>,
}

/// Untimed values summed; timed observations as sorted (timestamp, value).
/// Zero values are as if absent, so that a profile that lacks a sample and
/// one that has it at 0 compare equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleValues {
    pub total: i64,
    pub observations: Vec<(u64, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub sample_type: Option<(String, String)>,
    pub time_unix_nano: u64,
    pub duration_nano: u64,
    pub period_type: Option<(String, String)>,
    pub period: i64,
    pub attributes: Attributes,
    pub samples: BTreeMap<SampleKey, SampleValues>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub name: String,
    pub version: String,
    pub attributes: Vec<(String, Value)>,
    pub schema_url: String,
    pub profiles: Vec<Profile>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub attributes: Vec<(String, Value)>,
    pub schema_url: String,
    pub scopes: Vec<Scope>,
}

/// The canonical form of a request that passed `validate_request`.
pub fn canonicalize(request: &ExportProfilesServiceRequest) -> Vec<Resource> {
    let empty = ProfilesDictionary::default();
    let d = request.dictionary.as_ref().unwrap_or(&empty);
    let resolver = Resolver { d };
    request
        .resource_profiles
        .iter()
        .map(|rp| Resource {
            attributes: key_values(
                &resolver.key_values(rp.resource.as_ref().map_or(&[][..], |r| &r.attributes)),
            ),
            schema_url: rp.schema_url.clone(),
            scopes: rp
                .scope_profiles
                .iter()
                .map(|sp| {
                    let profiles: Vec<Profile> =
                        sp.profiles.iter().map(|p| resolver.profile(p)).collect();
                    let scope = sp.scope.clone().unwrap_or_default();
                    let mut attributes = key_values(&resolver.key_values(&scope.attributes));
                    attributes
                        .retain(|(key, value)| !implied_scope_attribute(key, value, &profiles));
                    Scope {
                        name: scope.name,
                        version: scope.version,
                        attributes,
                        schema_url: sp.schema_url.clone(),
                        profiles,
                    }
                })
                .collect(),
        })
        .collect()
}

/// Whether two requests are equal under OTLP canonical equality.
pub fn canonical_eq(a: &ExportProfilesServiceRequest, b: &ExportProfilesServiceRequest) -> bool {
    canonicalize(a) == canonicalize(b)
}

/// An identity `sample_type_order` and a `default_sample_type` naming
/// profiles[0]'s type say nothing.
fn implied_scope_attribute(key: &str, value: &Value, profiles: &[Profile]) -> bool {
    match (key, value) {
        (SAMPLE_TYPE_ORDER, Value::Array(perm)) => perm
            .iter()
            .enumerate()
            .all(|(i, v)| *v == Value::Int(i as i64)),
        (DEFAULT_SAMPLE_TYPE, Value::String(name)) => profiles
            .first()
            .and_then(|p| p.sample_type.as_ref())
            .is_some_and(|(t, _)| t == name),
        _ => false,
    }
}

struct Resolver<'d> {
    d: &'d ProfilesDictionary,
}

impl Resolver<'_> {
    fn text(&self, index: i32) -> String {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.d.string_table.get(i))
            .cloned()
            .unwrap_or_default()
    }

    fn key_values(&self, values: &[KeyValue]) -> Vec<KeyValue> {
        values
            .iter()
            .map(|kv| KeyValue {
                key: if kv.key.is_empty() {
                    self.text(kv.key_strindex)
                } else {
                    kv.key.clone()
                },
                value: kv
                    .value
                    .as_ref()
                    .map(|v| resolve_strings(v, &self.d.string_table)),
                key_strindex: 0,
            })
            .collect()
    }

    fn attributes(&self, indices: &[i32]) -> Attributes {
        let mut out: Attributes = indices
            .iter()
            .filter_map(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| self.d.attribute_table.get(i))
            })
            .map(|a| {
                let value = a.value.as_ref().map_or(Value::Empty, |v| {
                    Value::of(&resolve_strings(v, &self.d.string_table))
                });
                (self.text(a.key_strindex), value, self.text(a.unit_strindex))
            })
            .collect();
        out.sort();
        out
    }

    fn mapping(&self, index: i32) -> Option<Mapping> {
        let m = usize::try_from(index)
            .ok()
            .filter(|&i| i != 0)
            .and_then(|i| self.d.mapping_table.get(i))?;
        let mapping = Mapping {
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename: self.text(m.filename_strindex),
            attributes: self.attributes(&m.attribute_indices),
        };
        let empty = Mapping {
            memory_start: 0,
            memory_limit: 0,
            file_offset: 0,
            filename: String::new(),
            attributes: Vec::new(),
        };
        (mapping != empty).then_some(mapping)
    }

    fn function(&self, index: i32) -> Function {
        let f = usize::try_from(index)
            .ok()
            .and_then(|i| self.d.function_table.get(i))
            .cloned()
            .unwrap_or_default();
        Function {
            name: self.text(f.name_strindex),
            system_name: self.text(f.system_name_strindex),
            filename: self.text(f.filename_strindex),
            start_line: f.start_line,
        }
    }

    fn location(&self, index: i32) -> Location {
        let l = usize::try_from(index)
            .ok()
            .and_then(|i| self.d.location_table.get(i))
            .cloned()
            .unwrap_or_default();
        Location {
            mapping: self.mapping(l.mapping_index),
            address: l.address,
            lines: l
                .lines
                .iter()
                .map(|line| (self.function(line.function_index), line.line, line.column))
                .collect(),
            attributes: self.attributes(&l.attribute_indices),
        }
    }

    fn link(&self, index: i32) -> Option<(Vec<u8>, Vec<u8>)> {
        let link = usize::try_from(index)
            .ok()
            .filter(|&i| i != 0)
            .and_then(|i| self.d.link_table.get(i))?;
        (!link.trace_id.is_empty() || !link.span_id.is_empty())
            .then(|| (link.trace_id.clone(), link.span_id.clone()))
    }

    fn value_type(&self, vt: Option<&crate::otlp::ValueType>) -> Option<(String, String)> {
        vt.map(|vt| (self.text(vt.type_strindex), self.text(vt.unit_strindex)))
    }

    fn profile(&self, p: &crate::otlp::Profile) -> Profile {
        let mut samples: BTreeMap<SampleKey, SampleValues> = BTreeMap::new();
        for sample in &p.samples {
            let stack = usize::try_from(sample.stack_index)
                .ok()
                .and_then(|i| self.d.stack_table.get(i))
                .map(|s| {
                    s.location_indices
                        .iter()
                        .map(|&l| self.location(l))
                        .collect()
                })
                .unwrap_or_default();
            let key = SampleKey {
                stack,
                attributes: self.attributes(&sample.attribute_indices),
                link: self.link(sample.link_index),
            };
            let entry = samples.entry(key).or_default();
            if sample.timestamps_unix_nano.is_empty() {
                for value in &sample.values {
                    entry.total = entry.total.wrapping_add(*value);
                }
            } else {
                for (i, &timestamp) in sample.timestamps_unix_nano.iter().enumerate() {
                    let value = if sample.values.is_empty() {
                        1
                    } else {
                        sample.values.get(i).copied().unwrap_or(0)
                    };
                    if value != 0 {
                        entry.observations.push((timestamp, value));
                    }
                }
            }
        }
        samples.retain(|_, values| {
            values.observations.sort_unstable();
            values.total != 0 || !values.observations.is_empty()
        });
        Profile {
            sample_type: self.value_type(p.sample_type.as_ref()),
            time_unix_nano: p.time_unix_nano,
            duration_nano: p.duration_nano,
            period_type: self.value_type(p.period_type.as_ref()),
            period: p.period,
            attributes: self.attributes(&p.attribute_indices),
            samples,
        }
    }
}
