//! pprof mappings, functions and locations as OTLP dictionary entries,
//! interned in pprof table order so that the order survives the round trip.

use profbridge_pprof::{IdIndex, Profile as Pprof};

use crate::dictionary::DictionaryBuilder;
use crate::keys::{BUILD_ID_GNU, BUILD_ID_GO, FRAME_TYPE, IS_FOLDED, MAPPING_FLAGS};
use crate::otlp::{bool_value, string_value, Function, Line, Location, Mapping};
use crate::reserved::build_id::looks_like_go_build_id;
use crate::reserved::otlp_data::{self, Attribute, OtlpData};

pub(super) struct Tables<'p, 'd, F> {
    p: &'p Pprof,
    text: &'d F,
    dictionary: &'d mut DictionaryBuilder,
    locations: Option<IdIndex>,
    mappings: Option<IdIndex>,
    functions: Option<IdIndex>,
    /// Per pprof location: its OTLP index without a frame type (-1 while
    /// unused, 0 until interned)...
    untyped: Vec<i32>,
    /// ...and with each frame type samples give it, first use first.
    typed: Vec<Vec<(u32, i32)>>,
    /// The pprof's reserved string.
    data: &'d OtlpData,
}

const UNUSED: i32 = -1;

impl<'p, 'd, F: Fn(i64) -> &'p str> Tables<'p, 'd, F> {
    pub fn new(
        p: &'p Pprof,
        text: &'d F,
        dictionary: &'d mut DictionaryBuilder,
        data: &'d OtlpData,
    ) -> Self {
        Self {
            p,
            text,
            dictionary,
            locations: IdIndex::build(p.location.iter().map(|l| l.id)).ok(),
            mappings: IdIndex::build(p.mapping.iter().map(|m| m.id)).ok(),
            functions: IdIndex::build(p.function.iter().map(|f| f.id)).ok(),
            untyped: vec![UNUSED; p.location.len()],
            typed: vec![Vec::new(); p.location.len()],
            data,
        }
    }

    pub fn dictionary(&mut self) -> &mut DictionaryBuilder {
        self.dictionary
    }

    pub fn into_dictionary(self) -> &'d mut DictionaryBuilder {
        self.dictionary
    }

    fn location_position(&self, id: u64) -> Option<usize> {
        self.locations.as_ref()?.position(id)
    }

    /// Records which frame type each location of a sample has.
    pub fn note_frame_types(&mut self, location_ids: &[u64], types: Option<&[Option<u32>]>) {
        for (i, &id) in location_ids.iter().enumerate() {
            let Some(position) = self.location_position(id) else {
                continue;
            };
            match types.and_then(|t| t.get(i)).copied().flatten() {
                None => {
                    if let Some(slot) = self.untyped.get_mut(position) {
                        *slot = (*slot).max(0);
                    }
                }
                Some(frame_type) => {
                    if let Some(variants) = self.typed.get_mut(position) {
                        if !variants.iter().any(|(t, _)| *t == frame_type) {
                            variants.push((frame_type, 0));
                        }
                    }
                }
            }
        }
    }

    fn is_used(&self, position: usize) -> bool {
        self.untyped.get(position).is_some_and(|&i| i != UNUSED)
            || self.typed.get(position).is_some_and(|t| !t.is_empty())
    }

    /// Interns the used mappings, functions and locations, each table in
    /// pprof order.
    pub fn intern_in_table_order(&mut self, frame_type_names: &[String]) {
        let p = self.p;
        let mut mapping_used = vec![false; p.mapping.len()];
        let mut function_used = vec![false; p.function.len()];
        for (position, location) in p.location.iter().enumerate() {
            if !self.is_used(position) {
                continue;
            }
            if let Some(slot) = self
                .mapping_position(location.mapping_id)
                .and_then(|i| mapping_used.get_mut(i))
            {
                *slot = true;
            }
            for line in &location.line {
                if let Some(slot) = self
                    .function_position(line.function_id)
                    .and_then(|i| function_used.get_mut(i))
                {
                    *slot = true;
                }
            }
        }
        let mapping_index: Vec<i32> = p
            .mapping
            .iter()
            .zip(&mapping_used)
            .map(|(m, &used)| if used { self.intern_mapping(m) } else { 0 })
            .collect();
        let function_index: Vec<i32> = p
            .function
            .iter()
            .zip(&function_used)
            .map(|(f, &used)| if used { self.intern_function(f) } else { 0 })
            .collect();

        for (position, location) in p.location.iter().enumerate() {
            if !self.is_used(position) {
                continue;
            }
            let mapping_index = self
                .mapping_position(location.mapping_id)
                .and_then(|i| mapping_index.get(i).copied())
                .unwrap_or(0);
            let lines: Vec<Line> = location
                .line
                .iter()
                .map(|line| Line {
                    function_index: self
                        .function_position(line.function_id)
                        .and_then(|i| function_index.get(i).copied())
                        .unwrap_or(0),
                    line: line.line,
                    column: line.column,
                })
                .collect();
            let mut folded: Vec<i32> = location
                .is_folded
                .then(|| self.dictionary.attribute(IS_FOLDED, bool_value(true), ""))
                .into_iter()
                .collect();
            if let Some(extras) = otlp_data::entry(&self.data.locations, location.id) {
                folded.extend(intern_attributes(self.dictionary, extras));
            }
            let base = Location {
                mapping_index,
                address: location.address,
                lines,
                attribute_indices: folded,
            };
            if self.untyped.get(position).is_some_and(|&i| i != UNUSED) {
                let index = self.dictionary.location(base.clone());
                if let Some(slot) = self.untyped.get_mut(position) {
                    *slot = index;
                }
            }
            let typed = self
                .typed
                .get_mut(position)
                .map(std::mem::take)
                .unwrap_or_default();
            let mut interned = Vec::with_capacity(typed.len());
            for (frame_type, _) in typed {
                let name = usize::try_from(frame_type)
                    .ok()
                    .and_then(|i| frame_type_names.get(i))
                    .map_or("", String::as_str);
                let mut variant = base.clone();
                variant.attribute_indices.push(self.dictionary.attribute(
                    FRAME_TYPE,
                    string_value(name),
                    "",
                ));
                let index = self.dictionary.location(variant);
                interned.push((frame_type, index));
            }
            if let Some(slot) = self.typed.get_mut(position) {
                *slot = interned;
            }
        }
    }

    fn mapping_position(&self, id: u64) -> Option<usize> {
        self.mappings.as_ref()?.position(id)
    }

    fn function_position(&self, id: u64) -> Option<usize> {
        self.functions.as_ref()?.position(id)
    }

    fn intern_mapping(&mut self, m: &profbridge_pprof::Mapping) -> i32 {
        let text = self.text;
        let mut attribute_indices = Vec::new();
        let build_id = text(m.build_id);
        let flags = [
            m.has_functions,
            m.has_filenames,
            m.has_line_numbers,
            m.has_inline_frames,
        ];
        let entry = otlp_data::entry(&self.data.mappings, m.id)
            .filter(|entry| otlp_data::mapping_entry_agrees(entry, build_id, flags));
        if let Some(attributes) = entry {
            attribute_indices = intern_attributes(self.dictionary, attributes);
        } else if !build_id.is_empty() {
            let key = if looks_like_go_build_id(build_id) {
                BUILD_ID_GO
            } else {
                BUILD_ID_GNU
            };
            attribute_indices.push(self.dictionary.attribute(key, string_value(build_id), ""));
        }
        if entry.is_none() {
            for (key, set) in MAPPING_FLAGS.iter().zip(flags) {
                if set {
                    attribute_indices.push(self.dictionary.attribute(key, bool_value(true), ""));
                }
            }
        }
        let filename_strindex = self.dictionary.string(text(m.filename));
        self.dictionary.mapping(Mapping {
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename_strindex,
            attribute_indices,
        })
    }

    fn intern_function(&mut self, f: &profbridge_pprof::Function) -> i32 {
        let text = self.text;
        let function = Function {
            name_strindex: self.dictionary.string(text(f.name)),
            system_name_strindex: self.dictionary.string(text(f.system_name)),
            filename_strindex: self.dictionary.string(text(f.filename)),
            start_line: f.start_line,
        };
        self.dictionary.function(function)
    }

    /// The stack of a sample, as OTLP location indexes; `scratch` is a
    /// buffer reused across samples.
    pub fn stack(
        &mut self,
        location_ids: &[u64],
        types: Option<&[Option<u32>]>,
        scratch: &mut Vec<i32>,
    ) -> i32 {
        scratch.clear();
        scratch.extend(location_ids.iter().enumerate().map(|(i, &id)| {
            let Some(position) = self.location_position(id) else {
                return 0;
            };
            match types.and_then(|t| t.get(i)).copied().flatten() {
                None => self.untyped.get(position).copied().unwrap_or(0),
                Some(frame_type) => self
                    .typed
                    .get(position)
                    .and_then(|vs| vs.iter().find(|(t, _)| *t == frame_type))
                    .map_or(0, |(_, index)| *index),
            }
        }));
        self.dictionary.stack(scratch)
    }
}

/// Attributes of the reserved string as dictionary entries.
pub(super) fn intern_attributes(
    dictionary: &mut DictionaryBuilder,
    attributes: &[Attribute],
) -> Vec<i32> {
    attributes
        .iter()
        .map(|a| dictionary.attribute(&a.key, a.value.clone(), &a.unit))
        .collect()
}
