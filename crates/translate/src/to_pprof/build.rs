//! Builds one pprof from a group of OTLP profiles.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use profbridge_pprof::{
    Function, Label, Line, Location, Mapping, Profile as Pprof, StringInterner, ValueType,
};

use super::labels::{attribute_labels, LabelOut};
use super::rows::{collect_rows, Row, Rows};
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
        interned: vec![None; dictionary.string_table.len()],
        out: Pprof::default(),
        samples: Samples::default(),
        attributes: std::iter::repeat_with(|| None)
            .take(dictionary.attribute_table.len())
            .collect(),
        stacks: vec![None; dictionary.stack_table.len()],
        links: vec![None; dictionary.link_table.len()],
        keys: Vec::new(),
        frame_types_text: String::new(),
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
    let mut rows = collect_rows(&columns, width, options.aggregate_timestamps);
    let tables = builder.tables(&rows);
    builder.samples = Samples::for_rows(&mut rows, width);
    for row in &rows.rows {
        builder.row(row, rows.attributes(row), &tables, copied);
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
/// reach it) and its frame type, an index into `escaped_frame_types`: the
/// names as `profile.frame.types` items spell them.
struct Tables {
    location_ids: Vec<u64>,
    frame_types: Vec<Option<usize>>,
    escaped_frame_types: Vec<String>,
}

impl Tables {
    /// The pprof location id and frame type (an index into
    /// `escaped_frame_types`) of OTLP location `index`.
    fn location(&self, index: i32) -> (u64, Option<usize>) {
        let Ok(index) = usize::try_from(index) else {
            return (0, None);
        };
        let id = self.location_ids.get(index).copied().unwrap_or(0);
        (id, self.frame_types.get(index).copied().flatten())
    }

    fn escaped_frame_type(&self, frame_type: usize) -> &str {
        self.escaped_frame_types
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

/// What every sample of one stack shares: its location ids (a handle into
/// [`Samples`]) and its frame-types label.
#[derive(Clone, Copy)]
struct StackLabels {
    location_ids: usize,
    frame_types: Option<Label>,
}

struct Builder<'d> {
    d: &'d ProfilesDictionary,
    strings: StringInterner,
    /// pprof string index by dictionary string index, filled as used.
    interned: Vec<Option<i64>>,
    out: Pprof,
    samples: Samples,
    /// By attribute index, filled as samples use them.
    attributes: Vec<Option<AttributeLabels<'d>>>,
    /// By stack index, filled as samples use them.
    stacks: Vec<Option<StackLabels>>,
    /// The `trace_id` and `span_id` labels by link index, filled as used.
    links: Vec<Option<[Label; 2]>>,
    /// The attribute keys of the row being built.
    keys: Vec<&'d str>,
    /// The `profile.frame.types` value of the stack being built.
    frame_types_text: String,
}

impl<'d> Builder<'d> {
    fn text(&self, index: i32) -> &'d str {
        string_at(&self.d.string_table, index)
    }

    /// The pprof string index of dictionary string `index`.
    fn intern_text(&mut self, index: i32) -> i64 {
        let slot = usize::try_from(index).ok();
        if let Some(&Some(known)) = slot.and_then(|i| self.interned.get(i)) {
            return known;
        }
        let interned = self.strings.intern(self.text(index));
        if let Some(entry) = slot.and_then(|i| self.interned.get_mut(i)) {
            *entry = Some(interned);
        }
        interned
    }

    fn value_type(&mut self, vt: Option<&crate::otlp::ValueType>) -> ValueType {
        match vt {
            Some(vt) => ValueType {
                r#type: self.intern_text(vt.type_strindex),
                unit: self.intern_text(vt.unit_strindex),
            },
            None => ValueType {
                r#type: self.strings.intern(""),
                unit: self.strings.intern(""),
            },
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
    fn tables(&mut self, rows: &Rows) -> Tables {
        let location_count = self.d.location_table.len();
        let mut reached = vec![false; location_count];
        for row in &rows.rows {
            let stack = usize::try_from(row.stack)
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
        self.out.function.reserve_exact(function_indices.len());
        self.out.mapping.reserve_exact(mapping_indices.len());
        self.out.location.reserve_exact(location_indices.len());
        for (&index, id) in function_indices.iter().zip(1u64..) {
            let Some(f) = usize::try_from(index)
                .ok()
                .and_then(|i| self.d.function_table.get(i))
            else {
                continue;
            };
            let function = Function {
                id,
                name: self.intern_text(f.name_strindex),
                system_name: self.intern_text(f.system_name_strindex),
                filename: self.intern_text(f.filename_strindex),
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
            escaped_frame_types: Vec::new(),
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
                match location_attributes.get(self, a, &mut tables.escaped_frame_types) {
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
            filename: self.intern_text(m.filename_strindex),
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

    fn row(&mut self, row: &Row, attributes: &[i32], tables: &Tables, copied: &[&KeyValue]) {
        let stack_labels = self.stack_labels(row.stack, tables);
        let labels_start = self.samples.labels_end();
        let mut hints = Vec::new();
        self.keys.clear();
        for &a in attributes {
            let Some(slot) = self.cache_attribute_labels(a) else {
                continue;
            };
            if let Some(Some(cached)) = self.attributes.get(slot) {
                self.keys.push(cached.key);
                self.samples.extend_labels(&cached.labels);
                hints.extend(cached.hint.iter().cloned());
            }
        }
        for kv in copied {
            if self.keys.contains(&kv.key.as_str()) {
                continue;
            }
            let value = kv.value.clone().unwrap_or_default();
            let mut labels = Vec::new();
            self.push_attribute(&kv.key, &value, "", &mut labels, &mut hints);
            self.samples.extend_labels(&labels);
        }
        if let Some(label) = stack_labels.frame_types {
            self.samples.push_label(label);
        }
        if let Some([trace_id, span_id]) = self.link_labels(row.link) {
            self.samples.push_label(trace_id);
            self.samples.push_label(span_id);
        }
        if !hints.is_empty() {
            let label = self.str_label(ATTR_TYPES_LABEL, &attr_types::encode(hints));
            self.samples.push_label(label);
        }

        if !row.timestamps.is_empty() && !self.samples.has_timestamp_key() {
            let timestamp_key = self.strings.intern(TIMESTAMP_LABEL);
            self.samples.set_timestamp_key(timestamp_key);
        }
        self.samples.push_row(
            stack_labels.location_ids,
            labels_start,
            row.values.clone(),
            row.timestamps.clone(),
        );
    }

    /// The `trace_id` and `span_id` labels of link `index` (none for 0),
    /// built once.
    fn link_labels(&mut self, index: i32) -> Option<[Label; 2]> {
        let slot = usize::try_from(index).ok().filter(|&l| l != 0)?;
        if let Some(Some(known)) = self.links.get(slot) {
            return Some(*known);
        }
        let link = self.d.link_table.get(slot)?;
        let labels = [
            self.str_label(TRACE_ID_LABEL, &hex::encode(&link.trace_id)),
            self.str_label(SPAN_ID_LABEL, &hex::encode(&link.span_id)),
        ];
        if let Some(entry) = self.links.get_mut(slot) {
            *entry = Some(labels);
        }
        Some(labels)
    }

    /// The location ids and frame-types label of a stack, built once.
    fn stack_labels(&mut self, stack: i32, tables: &Tables) -> StackLabels {
        let slot = usize::try_from(stack).ok();
        if let Some(&Some(known)) = slot.and_then(|s| self.stacks.get(s)) {
            return known;
        }
        let location_indices = slot
            .and_then(|s| self.d.stack_table.get(s))
            .map(|s| s.location_indices.as_slice())
            .unwrap_or_default();
        let location_ids = self
            .samples
            .add_stack(location_indices.iter().map(|&i| tables.location(i).0));
        let mut text = std::mem::take(&mut self.frame_types_text);
        let typed = frame_types::encode_into(
            &mut text,
            location_indices.iter().map(|&i| tables.location(i).1),
            |t, out| out.push_str(tables.escaped_frame_type(t)),
        );
        let frame_types = typed.then(|| self.str_label(FRAME_TYPES_LABEL, &text));
        self.frame_types_text = text;
        let labels = StackLabels {
            location_ids,
            frame_types,
        };
        if let Some(entry) = slot.and_then(|s| self.stacks.get_mut(s)) {
            *entry = Some(labels);
        }
        labels
    }

    /// Builds the labels of attribute `index` unless they are built;
    /// returns their slot in `self.attributes`.
    fn cache_attribute_labels(&mut self, index: i32) -> Option<usize> {
        let slot = usize::try_from(index).ok()?;
        if self.attributes.get(slot)?.is_none() {
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
        Some(slot)
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
    /// An index into `Tables::escaped_frame_types`.
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
        escaped_frame_types: &mut Vec<String>,
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
                    let name = frame_types::escape(&name);
                    let id = match escaped_frame_types.iter().position(|n| *n == name) {
                        Some(known) => known,
                        None => {
                            escaped_frame_types.push(name);
                            escaped_frame_types.len() - 1
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
