//! Canonical form of a pprof profile, as docs/mapping.md defines it.
//!
//! Two profiles are canonically equal when they carry the same information
//! regardless of string-table layout, ids, duplicate or unreferenced table
//! entries, label order, and samples split across equal identities.

mod keys;

use std::collections::HashMap;

pub(crate) use keys::LabelKey;
use keys::{FunctionKey, LocationKey, MappingKey, SampleKey};

use crate::dump::dump;
use crate::strings::resolve;
use crate::validate::ids::IdIndex;
use crate::validate::{validate, ValidationError};
use crate::{Function, Label, Line, Location, Mapping, Profile, Sample, StringInterner, ValueType};

/// The canonical form: a valid profile with ids 1..n, a fresh string table,
/// only referenced entries, merged duplicates, sorted labels, merged samples.
pub fn canonicalize(profile: &Profile) -> Result<Profile, ValidationError> {
    validate(profile)?;
    Ok(Canonicalizer::new(profile).run())
}

/// Whether two profiles are canonically equal.
pub fn canonical_eq(a: &Profile, b: &Profile) -> Result<bool, ValidationError> {
    Ok(canonicalize(a)? == canonicalize(b)?)
}

/// `None` when canonically equal, else the first differing line of the two
/// canonical dumps, for test failure messages.
pub fn canonical_diff(a: &Profile, b: &Profile) -> Result<Option<String>, ValidationError> {
    let (a, b) = (canonicalize(a)?, canonicalize(b)?);
    if a == b {
        return Ok(None);
    }
    let difference = first_difference(&dump(&a)?, &dump(&b)?)
        .or_else(|| first_difference(&format!("{a:#?}"), &format!("{b:#?}")))
        .unwrap_or_default();
    Ok(Some(format!("canonical forms differ at {difference}")))
}

fn first_difference(left: &str, right: &str) -> Option<String> {
    let mut left_lines = left.lines();
    let mut right_lines = right.lines();
    for line_number in 1.. {
        match (left_lines.next(), right_lines.next()) {
            (Some(l), Some(r)) if l == r => continue,
            (None, None) => return None,
            (l, r) => {
                return Some(format!(
                    "line {line_number}:\n  left:  {}\n  right: {}",
                    l.unwrap_or("<end>"),
                    r.unwrap_or("<end>")
                ))
            }
        }
    }
    None
}

struct Canonicalizer<'a> {
    input: &'a Profile,
    strings: StringInterner,
}

impl<'a> Canonicalizer<'a> {
    fn new(input: &'a Profile) -> Self {
        Self {
            input,
            strings: StringInterner::new(),
        }
    }

    fn text(&self, index: i64) -> &'a str {
        resolve(&self.input.string_table, index)
    }

    fn value_type(&mut self, value_type: Option<&ValueType>) -> ValueType {
        let (kind, unit) =
            value_type.map_or(("", ""), |vt| (self.text(vt.r#type), self.text(vt.unit)));
        ValueType {
            r#type: self.strings.intern(kind),
            unit: self.strings.intern(unit),
        }
    }

    fn run(mut self) -> Profile {
        let input = self.input;
        let mut out = Profile {
            sample_type: input
                .sample_type
                .iter()
                .map(|vt| self.value_type(Some(vt)))
                .collect(),
            ..Profile::default()
        };
        out.period_type = Some(self.value_type(input.period_type.as_ref()));
        out.period = input.period;
        out.time_nanos = input.time_nanos;
        out.duration_nanos = input.duration_nanos;
        out.comment = input
            .comment
            .iter()
            .map(|&c| self.strings.intern(self.text(c)))
            .collect();
        out.default_sample_type = self.strings.intern(self.text(input.default_sample_type));
        out.drop_frames = self.strings.intern(self.text(input.drop_frames));
        out.keep_frames = self.strings.intern(self.text(input.keep_frames));
        out.doc_url = self.strings.intern(self.text(input.doc_url));

        let used = UsedEntries::find(input);
        let function_ids = self.functions(&used, &mut out.function);
        let mapping_ids = self.mappings(&used, &mut out.mapping);
        let location_ids = self.locations(&used, &function_ids, &mapping_ids, &mut out.location);
        self.samples(&used, &location_ids, &mut out.sample);
        out.string_table = self.strings.into_table();
        out
    }

    /// Canonical id per input position (0 where unused).
    fn functions(&mut self, used: &UsedEntries, out: &mut Vec<Function>) -> Vec<u64> {
        let mut seen: HashMap<FunctionKey<'a>, u64> = HashMap::new();
        let mut ids = vec![0; self.input.function.len()];
        for (position, function) in self.input.function.iter().enumerate() {
            if !used.functions.get(position).copied().unwrap_or(false) {
                continue;
            }
            let key = FunctionKey {
                name: self.text(function.name),
                system_name: self.text(function.system_name),
                filename: self.text(function.filename),
                start_line: function.start_line,
            };
            let next_id = out.len() as u64 + 1;
            let id = *seen.entry(key).or_insert_with(|| {
                out.push(Function {
                    id: next_id,
                    name: self.strings.intern(key.name),
                    system_name: self.strings.intern(key.system_name),
                    filename: self.strings.intern(key.filename),
                    start_line: key.start_line,
                });
                next_id
            });
            if let Some(slot) = ids.get_mut(position) {
                *slot = id;
            }
        }
        ids
    }

    fn mappings(&mut self, used: &UsedEntries, out: &mut Vec<Mapping>) -> Vec<u64> {
        let mut seen: HashMap<MappingKey<'a>, u64> = HashMap::new();
        let mut ids = vec![0; self.input.mapping.len()];
        for (position, mapping) in self.input.mapping.iter().enumerate() {
            if !used.mappings.get(position).copied().unwrap_or(false) {
                continue;
            }
            let key = MappingKey::of(mapping, |i| self.text(i));
            if key.is_all_zero() {
                continue;
            }
            let next_id = out.len() as u64 + 1;
            let id = *seen.entry(key).or_insert_with(|| {
                out.push(key.to_mapping(next_id, &mut self.strings));
                next_id
            });
            if let Some(slot) = ids.get_mut(position) {
                *slot = id;
            }
        }
        ids
    }

    fn locations(
        &mut self,
        used: &UsedEntries,
        function_ids: &[u64],
        mapping_ids: &[u64],
        out: &mut Vec<Location>,
    ) -> Vec<u64> {
        let mut seen: HashMap<LocationKey, u64> = HashMap::new();
        let mut ids = vec![0; self.input.location.len()];
        for (position, location) in self.input.location.iter().enumerate() {
            if !used.locations.get(position).copied().unwrap_or(false) {
                continue;
            }
            let mapping_id = used
                .mapping_position(location.mapping_id)
                .and_then(|p| mapping_ids.get(p).copied())
                .unwrap_or(0);
            let lines = location
                .line
                .iter()
                .map(|line| Line {
                    function_id: used
                        .function_position(line.function_id)
                        .and_then(|p| function_ids.get(p).copied())
                        .unwrap_or(0),
                    line: line.line,
                    column: line.column,
                })
                .collect();
            let key = LocationKey {
                mapping_id,
                address: location.address,
                lines,
                is_folded: location.is_folded,
            };
            let next_id = out.len() as u64 + 1;
            let id = *seen.entry(key).or_insert_with_key(|key| {
                out.push(Location {
                    id: next_id,
                    mapping_id: key.mapping_id,
                    address: key.address,
                    line: key.lines.clone(),
                    is_folded: key.is_folded,
                });
                next_id
            });
            if let Some(slot) = ids.get_mut(position) {
                *slot = id;
            }
        }
        ids
    }

    fn samples(&mut self, used: &UsedEntries, location_ids: &[u64], out: &mut Vec<Sample>) {
        let mut seen: HashMap<SampleKey<'a>, usize> = HashMap::new();
        for sample in &self.input.sample {
            let locations: Vec<u64> = sample
                .location_id
                .iter()
                .map(|&id| {
                    used.location_position(id)
                        .and_then(|p| location_ids.get(p).copied())
                        .unwrap_or(0)
                })
                .collect();
            let mut labels: Vec<LabelKey<'a>> = sample
                .label
                .iter()
                .filter_map(|label| LabelKey::of(label, |i| self.text(i)))
                .collect();
            labels.sort_unstable();
            let key = SampleKey { locations, labels };
            match seen.get(&key) {
                Some(&index) => {
                    if let Some(merged) = out.get_mut(index) {
                        for (total, value) in merged.value.iter_mut().zip(&sample.value) {
                            *total = total.wrapping_add(*value);
                        }
                    }
                }
                None => {
                    let label = key.labels.iter().map(|l| self.label(l)).collect();
                    out.push(Sample {
                        location_id: key.locations.clone(),
                        value: sample.value.clone(),
                        label,
                    });
                    seen.insert(key, out.len() - 1);
                }
            }
        }
    }

    fn label(&mut self, key: &LabelKey<'_>) -> Label {
        Label {
            key: self.strings.intern(key.key),
            str: self.strings.intern(key.str_value),
            num: key.num,
            num_unit: self.strings.intern(key.unit),
        }
    }
}

/// Which table entries samples reach, by input position.
struct UsedEntries {
    locations: Vec<bool>,
    functions: Vec<bool>,
    mappings: Vec<bool>,
    location_index: Option<IdIndex>,
    function_index: Option<IdIndex>,
    mapping_index: Option<IdIndex>,
}

impl UsedEntries {
    fn find(profile: &Profile) -> Self {
        let location_index = IdIndex::build(profile.location.iter().map(|l| l.id)).ok();
        let function_index = IdIndex::build(profile.function.iter().map(|f| f.id)).ok();
        let mapping_index = IdIndex::build(profile.mapping.iter().map(|m| m.id)).ok();
        let mut used = Self {
            locations: vec![false; profile.location.len()],
            functions: vec![false; profile.function.len()],
            mappings: vec![false; profile.mapping.len()],
            location_index,
            function_index,
            mapping_index,
        };
        for sample in &profile.sample {
            for &id in &sample.location_id {
                if let Some(slot) = used
                    .location_position(id)
                    .and_then(|p| used.locations.get_mut(p))
                {
                    *slot = true;
                }
            }
        }
        for (position, location) in profile.location.iter().enumerate() {
            if !used.locations.get(position).copied().unwrap_or(false) {
                continue;
            }
            if let Some(slot) = used
                .mapping_position(location.mapping_id)
                .and_then(|p| used.mappings.get_mut(p))
            {
                *slot = true;
            }
            for line in &location.line {
                if let Some(slot) = used
                    .function_position(line.function_id)
                    .and_then(|p| used.functions.get_mut(p))
                {
                    *slot = true;
                }
            }
        }
        used
    }

    fn location_position(&self, id: u64) -> Option<usize> {
        self.location_index.as_ref()?.position(id)
    }

    fn function_position(&self, id: u64) -> Option<usize> {
        self.function_index.as_ref()?.position(id)
    }

    fn mapping_position(&self, id: u64) -> Option<usize> {
        self.mapping_index.as_ref()?.position(id)
    }
}
