//! Builds one pprof from a group of OTLP profiles.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHasher};

use profbridge_pprof::{
    Function, Label, Line, Location, Mapping, Profile as Pprof, StringInterner, ValueType,
};

use super::labels::{attribute_labels, LabelOut};
use super::rows::{collect_rows, Row};
use super::samples::Samples;
use super::{profile_attributes, string_at, ToPprofOptions};
use crate::keys::{
    ATTR_TYPES_LABEL, BUILD_ID_GNU, BUILD_ID_GO, BUILD_ID_HTLHASH, COMMENT, DEFAULT_SAMPLE_TYPE,
    DOC_URL, DROP_FRAMES, FRAME_TYPE, FRAME_TYPES_LABEL, IS_FOLDED, KEEP_FRAMES, MAPPING_FLAGS,
    SAMPLE_TYPE_ORDER, SPAN_ID_LABEL, TIMESTAMP_LABEL, TRACE_ID_LABEL,
};
use crate::otlp::{any_value, resolve_strings, AnyValue, KeyValue, Profile, ProfilesDictionary};
use crate::reserved::{attr_types, frame_types, hex};

/// The pprof of a group: the profile without its samples, and the samples.
pub(super) fn pprof_of_group(
    group: &[&Profile],
    dictionary: &ProfilesDictionary,
    scope_attributes: &[KeyValue],
    copied: &[&KeyValue],
    options: &ToPprofOptions,
) -> (Pprof, Samples) {
    let mut builder = Builder {
        d: dictionary,
        strings: StringInterner::new(),
        out: Pprof::default(),
        samples: Samples::default(),
        attributes: Vec::new(),
        stacks: FxHashMap::default(),
    };
    let typed = group.iter().any(|p| p.sample_type.is_some());
    let width = if typed { group.len() } else { 0 };
    let perm = sample_type_order(scope_attributes, width);
    let columns: Vec<(&Profile, Option<usize>)> = group
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, if typed { perm.get(i).copied() } else { None }))
        .collect();

    let mut sample_types = vec![ValueType::default(); width];
    for &(profile, column) in &columns {
        if let Some(slot) = column.and_then(|c| sample_types.get_mut(c)) {
            *slot = builder.value_type(profile.sample_type.as_ref());
        }
    }
    builder.out.sample_type = sample_types;
    let default_name = match scope_string(scope_attributes, DEFAULT_SAMPLE_TYPE) {
        Some(name) => name,
        None if width == 0 || perm.first() == Some(&(width - 1)) => String::new(),
        None => group
            .first()
            .and_then(|p| p.sample_type.as_ref())
            .map(|vt| string_at(&dictionary.string_table, vt.type_strindex).to_owned())
            .unwrap_or_default(),
    };
    builder.out.default_sample_type = builder.strings.intern(&default_name);

    if let Some(first) = group.first() {
        builder.profile_fields(first);
    }
    let rows = collect_rows(&columns, width, options.aggregate_timestamps);
    let tables = builder.tables(&rows);
    for row in rows {
        builder.row(row, &tables, copied);
    }
    builder.out.string_table = builder.strings.into_table();
    (builder.out, builder.samples)
}

/// pprof index of each OTLP profile: `pprof.scope.sample_type_order` when
/// it is a permutation of 0..n, else OTLP order.
fn sample_type_order(scope_attributes: &[KeyValue], n: usize) -> Vec<usize> {
    let identity: Vec<usize> = (0..n).collect();
    let Some(value) = scope_attributes
        .iter()
        .find(|kv| kv.key == SAMPLE_TYPE_ORDER)
        .and_then(|kv| kv.value.as_ref())
    else {
        return identity;
    };
    let Some(any_value::Value::ArrayValue(array)) = &value.value else {
        return identity;
    };
    let perm: Option<Vec<usize>> = array
        .values
        .iter()
        .map(|v| match v.value {
            Some(any_value::Value::IntValue(i)) => usize::try_from(i).ok(),
            _ => None,
        })
        .collect();
    match perm {
        Some(perm)
            if perm.len() == n && {
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                sorted == identity
            } =>
        {
            perm
        }
        _ => identity,
    }
}

fn scope_string(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.clone()),
            _ => None,
        }
    })
}

/// Per OTLP location index: the pprof location id (0 when the rows do not
/// reach it) and its frame type, an index into `frame_type_names`.
struct Tables {
    location_ids: Vec<u64>,
    frame_types: Vec<Option<usize>>,
    frame_type_names: Vec<String>,
}

impl Tables {
    /// The pprof location id and frame type (an index into
    /// `frame_type_names`) of OTLP location `index`.
    fn location(&self, index: i32) -> (u64, Option<usize>) {
        let Ok(index) = usize::try_from(index) else {
            return (0, None);
        };
        let id = self.location_ids.get(index).copied().unwrap_or(0);
        (id, self.frame_types.get(index).copied().flatten())
    }

    fn frame_type_name(&self, frame_type: usize) -> &str {
        self.frame_type_names
            .get(frame_type)
            .map_or("", String::as_str)
    }
}

/// The labels an attribute becomes, interned once per pprof.
struct AttributeLabels<'d> {
    key: &'d str,
    labels: Vec<Label>,
    hint: Option<attr_types::TypedKey>,
}

/// What every sample of one stack shares: its location ids, held in
/// [`Samples`], and its frame-types label.
#[derive(Clone, Copy)]
struct StackLabels {
    location_ids: usize,
    frame_types: Option<Label>,
}

struct Builder<'d> {
    d: &'d ProfilesDictionary,
    strings: StringInterner,
    out: Pprof,
    samples: Samples,
    /// By attribute index, filled as samples use them.
    attributes: Vec<Option<AttributeLabels<'d>>>,
    stacks: FxHashMap<i32, StackLabels>,
}

impl<'d> Builder<'d> {
    fn text(&self, index: i32) -> &'d str {
        string_at(&self.d.string_table, index)
    }

    fn value_type(&mut self, vt: Option<&crate::otlp::ValueType>) -> ValueType {
        let (t, u) = vt.map_or(("", ""), |vt| {
            (self.text(vt.type_strindex), self.text(vt.unit_strindex))
        });
        ValueType {
            r#type: self.strings.intern(t),
            unit: self.strings.intern(u),
        }
    }

    fn attribute(&self, index: i32) -> Option<(&'d str, AnyValue, &'d str)> {
        let a = usize::try_from(index)
            .ok()
            .and_then(|i| self.d.attribute_table.get(i))?;
        let value = a
            .value
            .as_ref()
            .map(|v| resolve_strings(v, &self.d.string_table))
            .unwrap_or_default();
        Some((self.text(a.key_strindex), value, self.text(a.unit_strindex)))
    }

    fn profile_fields(&mut self, first: &Profile) {
        self.out.time_nanos = first.time_unix_nano as i64;
        self.out.duration_nanos = first.duration_nano as i64;
        self.out.period = first.period;
        self.out.period_type = first
            .period_type
            .as_ref()
            .map(|vt| self.value_type(Some(vt)));
        for (key, value) in profile_attributes(first, self.d) {
            let text = |v: &AnyValue| match &v.value {
                Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                _ => None,
            };
            match key.as_str() {
                COMMENT => {
                    let comments: Vec<String> = match &value.value {
                        Some(any_value::Value::ArrayValue(array)) => {
                            array.values.iter().filter_map(text).collect()
                        }
                        _ => text(&value).into_iter().collect(),
                    };
                    self.out.comment = comments.iter().map(|c| self.strings.intern(c)).collect();
                }
                DROP_FRAMES => {
                    self.out.drop_frames = self.strings.intern(&text(&value).unwrap_or_default())
                }
                KEEP_FRAMES => {
                    self.out.keep_frames = self.strings.intern(&text(&value).unwrap_or_default())
                }
                DOC_URL => {
                    self.out.doc_url = self.strings.intern(&text(&value).unwrap_or_default())
                }
                _ => {}
            }
        }
    }

    /// Locations, functions and mappings the rows reach, each table in
    /// dictionary order; OTLP locations that differ only in frame type are
    /// one pprof location.
    fn tables(&mut self, rows: &[Row]) -> Tables {
        let location_count = self.d.location_table.len();
        let mut reached = vec![false; location_count];
        for row in rows {
            let stack = usize::try_from(row.identity.0)
                .ok()
                .and_then(|s| self.d.stack_table.get(s));
            for &index in stack.map_or(&[][..], |s| &s.location_indices[..]) {
                if let Some(slot) = usize::try_from(index).ok().and_then(|i| reached.get_mut(i)) {
                    *slot = true;
                }
            }
        }
        let location_indices: Vec<usize> = reached
            .iter()
            .enumerate()
            .filter_map(|(i, &r)| r.then_some(i))
            .collect();
        let otlp_location = |i: usize| self.d.location_table.get(i);

        let mut function_reached = vec![false; self.d.function_table.len()];
        let mut mapping_reached = vec![false; self.d.mapping_table.len()];
        for location in location_indices.iter().filter_map(|&i| otlp_location(i)) {
            for line in &location.lines {
                mark(&mut function_reached, line.function_index);
            }
            if location.mapping_index != 0 {
                mark(&mut mapping_reached, location.mapping_index);
            }
        }
        let function_indices = reached_indices(&function_reached);
        let mapping_indices = reached_indices(&mapping_reached);

        let function_ids = ids_by_index(&function_indices, self.d.function_table.len());
        for (&index, id) in function_indices.iter().zip(1u64..) {
            let Some(f) = usize::try_from(index)
                .ok()
                .and_then(|i| self.d.function_table.get(i))
            else {
                continue;
            };
            let function = Function {
                id,
                name: self.strings.intern(self.text(f.name_strindex)),
                system_name: self.strings.intern(self.text(f.system_name_strindex)),
                filename: self.strings.intern(self.text(f.filename_strindex)),
                start_line: f.start_line,
            };
            self.out.function.push(function);
        }
        let mapping_ids = ids_by_index(&mapping_indices, self.d.mapping_table.len());
        for (&index, id) in mapping_indices.iter().zip(1u64..) {
            let m = usize::try_from(index)
                .ok()
                .and_then(|i| self.d.mapping_table.get(i))
                .cloned()
                .unwrap_or_default();
            let mapping = self.mapping(id, &m);
            self.out.mapping.push(mapping);
        }

        let mut tables = Tables {
            location_ids: vec![0; location_count],
            frame_types: vec![None; location_count],
            frame_type_names: Vec::new(),
        };
        let mut location_attributes = LocationAttributes(vec![None; self.d.attribute_table.len()]);
        let mut by_content = LocationsByContent(HashTable::with_capacity(location_indices.len()));
        for &index in &location_indices {
            let Some(l) = otlp_location(index) else {
                continue;
            };
            let mut is_folded = false;
            let mut frame_type = None;
            for &a in &l.attribute_indices {
                match location_attributes.get(self, a, &mut tables.frame_type_names) {
                    LocationAttribute::Folded(folded) => is_folded = folded,
                    LocationAttribute::FrameType(id) => frame_type = Some(id),
                    LocationAttribute::Other => {}
                }
            }
            let lines: Vec<Line> = l
                .lines
                .iter()
                .map(|line| Line {
                    function_id: id_at(&function_ids, line.function_index),
                    line: line.line,
                    column: line.column,
                })
                .collect();
            let mapping_id = id_at(&mapping_ids, l.mapping_index);
            let location = Location {
                id: self.out.location.len() as u64 + 1,
                mapping_id,
                address: l.address,
                line: lines,
                is_folded,
            };
            let id = by_content.id_of(location, &mut self.out.location);
            if let Some(slot) = tables.location_ids.get_mut(index) {
                *slot = id;
            }
            if let Some(slot) = tables.frame_types.get_mut(index) {
                *slot = frame_type;
            }
        }
        tables
    }

    fn mapping(&mut self, id: u64, m: &crate::otlp::Mapping) -> Mapping {
        let mut mapping = Mapping {
            id,
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename: self.strings.intern(self.text(m.filename_strindex)),
            ..Mapping::default()
        };
        let mut build_ids: [Option<String>; 3] = [None, None, None];
        for &a in &m.attribute_indices {
            let Some((key, value, _)) = self.attribute(a) else {
                continue;
            };
            let flag = matches!(value.value, Some(any_value::Value::BoolValue(true)));
            let text = match value.value {
                Some(any_value::Value::StringValue(s)) => Some(s),
                _ => None,
            };
            match key {
                BUILD_ID_GNU => build_ids[0] = text,
                BUILD_ID_GO => build_ids[1] = text,
                BUILD_ID_HTLHASH => build_ids[2] = text,
                k if k == MAPPING_FLAGS[0] => mapping.has_functions = flag,
                k if k == MAPPING_FLAGS[1] => mapping.has_filenames = flag,
                k if k == MAPPING_FLAGS[2] => mapping.has_line_numbers = flag,
                k if k == MAPPING_FLAGS[3] => mapping.has_inline_frames = flag,
                _ => {}
            }
        }
        let build_id = build_ids.into_iter().flatten().next().unwrap_or_default();
        mapping.build_id = self.strings.intern(&build_id);
        mapping
    }

    fn row(&mut self, row: Row, tables: &Tables, copied: &[&KeyValue]) {
        let (stack, attributes, link) = &row.identity;
        let stack_labels = self.stack_labels(*stack, tables);

        let mut labels: Vec<Label> = Vec::new();
        let mut hints = Vec::new();
        let mut keys: Vec<&str> = Vec::new();
        for &a in attributes {
            if let Some(cached) = self.attribute_labels(a) {
                keys.push(cached.key);
                labels.extend_from_slice(&cached.labels);
                hints.extend(cached.hint.iter().cloned());
            }
        }
        for kv in copied {
            if keys.contains(&kv.key.as_str()) {
                continue;
            }
            let value = kv.value.clone().unwrap_or_default();
            self.push_attribute(&kv.key, &value, "", &mut labels, &mut hints);
        }
        if let Some(label) = stack_labels.frame_types {
            labels.push(label);
        }
        if let Some(l) = usize::try_from(*link)
            .ok()
            .filter(|&l| l != 0)
            .and_then(|l| self.d.link_table.get(l))
        {
            labels.push(self.str_label(TRACE_ID_LABEL, &hex::encode(&l.trace_id)));
            labels.push(self.str_label(SPAN_ID_LABEL, &hex::encode(&l.span_id)));
        }
        if !hints.is_empty() {
            labels.push(self.str_label(ATTR_TYPES_LABEL, &attr_types::encode(hints)));
        }

        if !row.observations.is_empty() {
            let timestamp_key = self.strings.intern(TIMESTAMP_LABEL);
            self.samples.set_timestamp_key(timestamp_key);
        }
        self.samples.push_row(
            stack_labels.location_ids,
            labels,
            row.values,
            row.observations,
        );
    }

    /// The location ids and frame-types label of a stack, built once.
    fn stack_labels(&mut self, stack: i32, tables: &Tables) -> StackLabels {
        let Self {
            d,
            strings,
            stacks,
            samples,
            ..
        } = self;
        *stacks.entry(stack).or_insert_with(|| {
            let location_indices = usize::try_from(stack)
                .ok()
                .and_then(|s| d.stack_table.get(s))
                .map(|s| s.location_indices.as_slice())
                .unwrap_or_default();
            let mut location_ids = Vec::with_capacity(location_indices.len());
            let mut types = Vec::with_capacity(location_indices.len());
            for &index in location_indices {
                let (id, frame_type) = tables.location(index);
                location_ids.push(id);
                types.push(frame_type);
            }
            let frame_types =
                frame_types::encode(types, |t| tables.frame_type_name(t)).map(|value| Label {
                    key: strings.intern(FRAME_TYPES_LABEL),
                    str: strings.intern(&value),
                    ..Label::default()
                });
            StackLabels {
                location_ids: samples.add_stack(location_ids),
                frame_types,
            }
        })
    }

    /// The labels of attribute `index`, built once.
    fn attribute_labels(&mut self, index: i32) -> Option<&AttributeLabels<'d>> {
        let slot = usize::try_from(index).ok()?;
        if self.attributes.len() <= slot {
            self.attributes.resize_with(slot + 1, || None);
        }
        if self.attributes.get(slot).is_some_and(Option::is_none) {
            let (key, value, unit) = self.attribute(index)?;
            let mut labels = Vec::new();
            let mut hints = Vec::new();
            self.push_attribute(key, &value, unit, &mut labels, &mut hints);
            if let Some(entry) = self.attributes.get_mut(slot) {
                *entry = Some(AttributeLabels {
                    key,
                    labels,
                    hint: hints.pop(),
                });
            }
        }
        self.attributes.get(slot).and_then(Option::as_ref)
    }

    fn push_attribute(
        &mut self,
        key: &str,
        value: &AnyValue,
        unit: &str,
        labels: &mut Vec<Label>,
        hints: &mut Vec<attr_types::TypedKey>,
    ) {
        let (outs, hint) = attribute_labels(key, value, unit);
        for out in outs {
            labels.push(match out {
                LabelOut::Str(s) => self.str_label(key, &s),
                LabelOut::Num(num, unit) => Label {
                    key: self.strings.intern(key),
                    num,
                    num_unit: self.strings.intern(&unit),
                    ..Label::default()
                },
            });
        }
        hints.extend(hint);
    }

    fn str_label(&mut self, key: &str, value: &str) -> Label {
        Label {
            key: self.strings.intern(key),
            str: self.strings.intern(value),
            ..Label::default()
        }
    }
}

/// Marks table index `index` as reached; out-of-range indexes (which
/// validation rejects) are ignored.
fn mark(reached: &mut [bool], index: i32) {
    if let Some(slot) = usize::try_from(index).ok().and_then(|i| reached.get_mut(i)) {
        *slot = true;
    }
}

/// The reached indexes, in table order.
fn reached_indices(reached: &[bool]) -> Vec<i32> {
    reached
        .iter()
        .enumerate()
        .filter(|(_, &r)| r)
        .filter_map(|(i, _)| i32::try_from(i).ok())
        .collect()
}

/// pprof ids by dictionary index: `reached` (in table order) get 1, 2, …;
/// the rest 0.
fn ids_by_index(reached: &[i32], table_len: usize) -> Vec<u64> {
    let mut ids = vec![0; table_len];
    for (&index, id) in reached.iter().zip(1u64..) {
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| ids.get_mut(i)) {
            *slot = id;
        }
    }
    ids
}

fn id_at(ids: &[u64], index: i32) -> u64 {
    usize::try_from(index)
        .ok()
        .and_then(|i| ids.get(i))
        .copied()
        .unwrap_or(0)
}

/// What a location attribute means for pprof.
#[derive(Debug, Clone, Copy)]
enum LocationAttribute {
    Folded(bool),
    /// An index into `Tables::frame_type_names`.
    FrameType(usize),
    Other,
}

/// [`LocationAttribute`]s by attribute index, worked out once each:
/// thousands of locations share a handful of attributes.
struct LocationAttributes(Vec<Option<LocationAttribute>>);

impl LocationAttributes {
    fn get(
        &mut self,
        builder: &Builder<'_>,
        index: i32,
        frame_type_names: &mut Vec<String>,
    ) -> LocationAttribute {
        let slot = usize::try_from(index).ok().and_then(|i| self.0.get_mut(i));
        if let Some(Some(known)) = slot.as_deref() {
            return *known;
        }
        let meaning = match builder.attribute(index) {
            Some((IS_FOLDED, value, _)) => LocationAttribute::Folded(matches!(
                value.value,
                Some(any_value::Value::BoolValue(true))
            )),
            Some((FRAME_TYPE, value, _)) => match value.value {
                Some(any_value::Value::StringValue(name)) => {
                    let id = match frame_type_names.iter().position(|n| *n == name) {
                        Some(known) => known,
                        None => {
                            frame_type_names.push(name);
                            frame_type_names.len() - 1
                        }
                    };
                    LocationAttribute::FrameType(id)
                }
                _ => LocationAttribute::Other,
            },
            _ => LocationAttribute::Other,
        };
        if let Some(slot) = slot {
            *slot = Some(meaning);
        }
        meaning
    }
}

/// pprof locations by their content, so that OTLP locations that differ
/// only in what pprof does not keep (their frame type) become one.
struct LocationsByContent(HashTable<usize>);

impl LocationsByContent {
    fn hash(location: &Location) -> u64 {
        let mut hasher = FxHasher::default();
        (location.mapping_id, location.address, location.is_folded).hash(&mut hasher);
        for line in &location.line {
            (line.function_id, line.line, line.column).hash(&mut hasher);
        }
        hasher.finish()
    }

    fn same(a: &Location, b: &Location) -> bool {
        (a.mapping_id, a.address, a.is_folded) == (b.mapping_id, b.address, b.is_folded)
            && a.line == b.line
    }

    /// The id of the location in `locations` with `location`'s content,
    /// adding it (with its id) when there is none.
    fn id_of(&mut self, location: Location, locations: &mut Vec<Location>) -> u64 {
        let hash = Self::hash(&location);
        let found = self.0.find(hash, |&i| {
            locations
                .get(i)
                .is_some_and(|known| Self::same(known, &location))
        });
        if let Some(known) = found.and_then(|&i| locations.get(i)) {
            return known.id;
        }
        let id = location.id;
        locations.push(location);
        self.0.insert_unique(hash, locations.len() - 1, |&i| {
            locations.get(i).map_or(0, Self::hash)
        });
        id
    }
}
