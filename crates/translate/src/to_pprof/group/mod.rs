//! Builds one pprof from a group of OTLP profiles.

mod buffers;
mod locations;
mod tables;

use profbridge_pprof::{Label, Mapping, Profile as Pprof, StringInterner, ValueType};

use super::labels::{attribute_labels, LabelOut};
use super::rows::{collect_rows, Row, Rows};
use super::samples::{Samples, SamplesSize};
use super::{profile_attributes, string_at, ToPprofOptions, UnassembledPprof};
use crate::keys::{
    ATTR_TYPES_LABEL, COMMENT, DEFAULT_SAMPLE_TYPE, DOC_URL, DROP_FRAMES, FRAME_TYPES_LABEL,
    KEEP_FRAMES, MAPPING_FLAGS, SAMPLE_TYPE_ORDER, SPAN_ID_LABEL, TIMESTAMP_LABEL, TRACE_ID_LABEL,
};
use crate::otlp::{any_value, resolve_strings, AnyValue, KeyValue, Profile, ProfilesDictionary};
use crate::reserved::otlp_data::{self, OtlpData};
use crate::reserved::{attr_types, frame_types, hex};
pub(super) use buffers::GroupBuffers;
use tables::Tables;

/// The schema URLs of a group's resource and scope.
#[derive(Clone, Copy)]
pub(super) struct SchemaUrls<'a> {
    pub resource: &'a str,
    pub scope: &'a str,
}

/// The pprof of a group, built in `buffers`' memory.
pub(super) fn pprof_of_group(
    group: &[&Profile],
    dictionary: &ProfilesDictionary,
    scope_attributes: &[KeyValue],
    copied: &[&KeyValue],
    schema_urls: SchemaUrls<'_>,
    options: &ToPprofOptions,
    buffers: &mut GroupBuffers,
) -> UnassembledPprof {
    let mut builder = Builder::new(dictionary, buffers);
    builder.data.resource_schema_url = schema_urls.resource.to_owned();
    builder.data.scope_schema_url = schema_urls.scope.to_owned();
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
    for &(profile, column) in &columns {
        builder.profile_data(profile, column.unwrap_or(0));
    }
    let spare_rows = std::mem::take(&mut buffers.rows);
    let mut rows = collect_rows(&columns, width, options.aggregate_timestamps, spare_rows);
    let stacks = builder.tables(&rows, &mut buffers.tables, &mut buffers.reach);
    let size = SamplesSize {
        labels: label_estimate(&rows, &buffers.tables, copied.len()),
        ..stacks
    };
    let spare_samples = std::mem::take(&mut buffers.samples);
    builder.samples = Samples::for_rows(&mut rows, width, size, spare_samples);
    for row in &rows.rows {
        builder.row(row, rows.attributes(row), &buffers.tables, copied);
    }
    buffers.rows = rows;
    builder.finish(buffers)
}

/// About how many labels the rows get: one per attribute (arrays get
/// more), per copied attribute, per frame-types label, and two per link.
fn label_estimate(rows: &Rows, tables: &Tables, copied: usize) -> usize {
    let per_row = copied + usize::from(tables.has_frame_types());
    let linked = rows.rows.iter().filter(|row| row.link != 0).count();
    rows.attribute_count() + rows.rows.len() * per_row + 2 * linked
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
    location_ids: u32,
    /// Whether it has a frame-types label, and the string index of its
    /// value (the key is [`Builder::frame_types_key`]).
    typed: bool,
    frame_types: i64,
}

struct Builder<'d> {
    d: &'d ProfilesDictionary,
    strings: StringInterner,
    /// pprof string index plus one by dictionary string index, filled as
    /// used (0: not yet).
    interned: Vec<u32>,
    out: Pprof,
    /// The pprof's `Profile.location` fields.
    locations: Vec<u8>,
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
    /// The string index of `profile.frame.types`, once a stack has that
    /// label.
    frame_types_key: i64,
    /// What pprof has no field for, for the reserved string.
    data: OtlpData,
}

impl<'d> Builder<'d> {
    /// A builder working in `buffers`' memory, which [`Builder::finish`]
    /// gives back.
    fn new(d: &'d ProfilesDictionary, buffers: &mut GroupBuffers) -> Self {
        let mut strings = std::mem::take(&mut buffers.strings);
        strings.restart(Vec::new());
        let mut out = Pprof {
            function: std::mem::take(&mut buffers.functions),
            mapping: std::mem::take(&mut buffers.mappings),
            ..Pprof::default()
        };
        let mut locations = std::mem::take(&mut buffers.locations);
        locations.clear();
        out.function.clear();
        out.mapping.clear();
        Self {
            d,
            strings,
            interned: zeros(std::mem::take(&mut buffers.interned), d.string_table.len()),
            out,
            locations,
            samples: Samples::default(),
            attributes: std::iter::repeat_with(|| None)
                .take(d.attribute_table.len())
                .collect(),
            stacks: nones(std::mem::take(&mut buffers.stacks), d.stack_table.len()),
            links: nones(std::mem::take(&mut buffers.links), d.link_table.len()),
            keys: Vec::new(),
            frame_types_text: String::new(),
            frame_types_key: 0,
            data: OtlpData::default(),
        }
    }

    /// The pprof; the working memory goes back to `buffers`.
    fn finish(mut self, buffers: &mut GroupBuffers) -> UnassembledPprof {
        self.out.string_table = self.strings.take_table();
        if !self.data.is_empty() {
            self.data.profiles.sort_by_key(|(column, _)| *column);
            self.out.string_table.push(self.data.encode());
        }
        buffers.strings = self.strings;
        buffers.interned = self.interned;
        buffers.stacks = self.stacks;
        buffers.links = self.links;
        UnassembledPprof {
            head: self.out,
            locations: self.locations,
            samples: self.samples,
        }
    }

    fn text(&self, index: i32) -> &'d str {
        string_at(&self.d.string_table, index)
    }

    /// The pprof string index of dictionary string `index`.
    fn intern_text(&mut self, index: i32) -> i64 {
        let slot = usize::try_from(index).ok();
        if let Some(&known) = slot.and_then(|i| self.interned.get(i)) {
            if known != 0 {
                return i64::from(known - 1);
            }
        }
        let interned = self.strings.intern(self.text(index));
        let entry = slot.and_then(|i| self.interned.get_mut(i));
        if let (Some(entry), Ok(plus_one)) = (entry, u32::try_from(interned + 1)) {
            *entry = plus_one;
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

    fn mapping(&mut self, id: u64, m: &crate::otlp::Mapping) -> Mapping {
        let mut mapping = Mapping {
            id,
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename: self.intern_text(m.filename_strindex),
            ..Mapping::default()
        };
        let attributes = self.resolved_attributes(&m.attribute_indices);
        for a in &attributes {
            let flag = matches!(a.value.value, Some(any_value::Value::BoolValue(true)));
            match a.key.as_str() {
                k if k == MAPPING_FLAGS[0] => mapping.has_functions = flag,
                k if k == MAPPING_FLAGS[1] => mapping.has_filenames = flag,
                k if k == MAPPING_FLAGS[2] => mapping.has_line_numbers = flag,
                k if k == MAPPING_FLAGS[3] => mapping.has_inline_frames = flag,
                _ => {}
            }
        }
        let build_id =
            otlp_data::primary_build_id(attributes.iter().map(|a| (a.key.as_str(), &a.value)));
        mapping.build_id = self.strings.intern(build_id);
        let plain = otlp_data::mapping_is_plain(
            attributes
                .iter()
                .map(|a| (a.key.as_str(), &a.value, a.unit.as_str())),
        );
        if !plain {
            self.data.mappings.push((id, attributes));
        }
        mapping
    }

    /// The attributes at `indices`, resolved.
    fn resolved_attributes(&self, indices: &[i32]) -> Vec<otlp_data::Attribute> {
        indices
            .iter()
            .filter_map(|&a| self.attribute(a))
            .map(|(key, value, unit)| otlp_data::Attribute {
                key: key.to_owned(),
                value,
                unit: unit.to_owned(),
            })
            .collect()
    }

    /// Keeps the attributes of the group's profile of pprof sample type
    /// `column` for the reserved string unless pprof fields carry them.
    fn profile_data(&mut self, profile: &Profile, column: usize) {
        let column = column as u64;
        if self.data.profiles.iter().any(|(c, _)| *c == column) {
            return;
        }
        let attributes = self.resolved_attributes(&profile.attribute_indices);
        let plain = otlp_data::profile_is_plain(
            attributes
                .iter()
                .map(|a| (a.key.as_str(), &a.value, a.unit.as_str())),
        );
        if !plain {
            self.data.profiles.push((column, attributes));
        }
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
        if stack_labels.typed {
            self.samples.push_label(Label {
                key: self.frame_types_key,
                str: stack_labels.frame_types,
                ..Label::default()
            });
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
            row.values,
            row.timestamps,
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
        let mut typed = false;
        let location_ids = self.samples.add_stack(location_indices.iter().map(|&i| {
            let (id, frame_type) = tables.location(i);
            typed |= frame_type.is_some();
            id
        }));
        let mut text = std::mem::take(&mut self.frame_types_text);
        let mut frame_types = 0;
        if typed {
            frame_types::encode_into(
                &mut text,
                location_indices.iter().map(|&i| tables.location(i).1),
                |t, out| out.push_str(tables.escaped_frame_type(t)),
            );
            let label = self.str_label(FRAME_TYPES_LABEL, &text);
            self.frame_types_key = label.key;
            frame_types = label.str;
        }
        self.frame_types_text = text;
        let labels = StackLabels {
            location_ids,
            typed,
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

/// `vector`, emptied, with `len` zeros.
fn zeros(mut vector: Vec<u32>, len: usize) -> Vec<u32> {
    vector.clear();
    vector.resize(len, 0);
    vector
}

/// `vector`, emptied, with `len` times `None`.
fn nones<T>(mut vector: Vec<Option<T>>, len: usize) -> Vec<Option<T>> {
    vector.clear();
    vector.resize_with(len, || None);
    vector
}
