//! The pprof's location, function and mapping tables: what the rows reach,
//! each table in dictionary order.

use profbridge_pprof::wire::varint_len;
use profbridge_pprof::{Function, Line};

use super::super::rows::Rows;
use super::super::samples::SamplesSize;
use super::locations::{ExtraAttributes, LocationContent, LocationsByContent};
use super::Builder;
use crate::keys::{FRAME_TYPE, IS_FOLDED};
use crate::otlp::any_value;
use crate::reserved::frame_types;
use crate::reserved::otlp_data::location_attribute_is_carried;

/// Per OTLP location index: the pprof location id (0 when the rows do not
/// reach it) and its frame type, an index into `escaped_frame_types` (the
/// names as `profile.frame.types` items spell them) plus one, or 0. Both
/// are below the dictionary's location and attribute counts, far below
/// 2^32; side by side, as stacks look both up.
#[derive(Default)]
pub(in crate::to_pprof) struct Tables {
    locations: Vec<[u32; 2]>,
    escaped_frame_types: Vec<String>,
}

impl Tables {
    /// The pprof location id and frame type (an index into
    /// `escaped_frame_types`) of OTLP location `index`.
    pub(super) fn location(&self, index: i32) -> (u64, Option<usize>) {
        let Ok(index) = usize::try_from(index) else {
            return (0, None);
        };
        let [id, frame_type] = self.locations.get(index).copied().unwrap_or([0, 0]);
        (u64::from(id), (frame_type as usize).checked_sub(1))
    }

    /// Whether a location the rows reach has a frame type.
    pub(super) fn has_frame_types(&self) -> bool {
        !self.escaped_frame_types.is_empty()
    }

    pub(super) fn escaped_frame_type(&self, frame_type: usize) -> &str {
        self.escaped_frame_types
            .get(frame_type)
            .map_or("", String::as_str)
    }

    /// Empties the tables for a dictionary of `location_count` locations.
    fn reset(&mut self, location_count: usize) {
        self.locations.clear();
        self.locations.resize(location_count, [0, 0]);
        self.escaped_frame_types.clear();
    }

    pub(in crate::to_pprof) fn capacity_bytes(&self) -> usize {
        self.locations.capacity() * size_of::<[u32; 2]>()
    }
}

/// What [`Builder::tables`] works out on the way, by dictionary index;
/// kept between pprofs for its memory.
#[derive(Default)]
pub(in crate::to_pprof) struct Reach {
    /// Whether a row has the stack.
    stacks: Vec<bool>,
    /// How many times the rows' distinct stacks have the location.
    locations: Vec<u32>,
    location_indices: Vec<u32>,
    functions: Vec<bool>,
    mappings: Vec<bool>,
    function_indices: Vec<i32>,
    mapping_indices: Vec<i32>,
    function_ids: Vec<u32>,
    mapping_ids: Vec<u32>,
    location_attributes: LocationAttributes,
    by_content: LocationsByContent,
    /// The attributes pprof does not carry of the location being added...
    extras: Vec<i32>,
    /// ...and the lists of them, numbered.
    extra_lists: ExtraAttributes,
}

impl Reach {
    pub(in crate::to_pprof) fn capacity_bytes(&self) -> usize {
        self.stacks.capacity()
            + self.functions.capacity()
            + self.mappings.capacity()
            + (self.locations.capacity() + self.location_indices.capacity()) * size_of::<u32>()
            + (self.function_indices.capacity() + self.mapping_indices.capacity())
                * size_of::<i32>()
            + (self.function_ids.capacity() + self.mapping_ids.capacity()) * size_of::<u32>()
            + self.location_attributes.0.capacity() * size_of::<Option<LocationAttribute>>()
            + self.by_content.capacity_bytes()
            + self.extras.capacity() * size_of::<i32>()
            + self.extra_lists.capacity_bytes()
    }
}

impl Builder<'_> {
    /// Fills `tables` with the locations, functions and mappings the rows
    /// reach, each table in dictionary order; OTLP locations that differ
    /// only in frame type are one pprof location. `reach` is working
    /// memory. Returns the room the rows' distinct stacks take in
    /// [`Samples`](super::Samples).
    pub(super) fn tables(
        &mut self,
        rows: &Rows,
        tables: &mut Tables,
        reach: &mut Reach,
    ) -> SamplesSize {
        let location_count = self.d.location_table.len();
        reach.locations.clear();
        reach.locations.resize(location_count, 0);
        reset(&mut reach.stacks, self.d.stack_table.len());
        let mut size = SamplesSize::default();
        for row in &rows.rows {
            let Ok(s) = usize::try_from(row.stack) else {
                continue;
            };
            let (Some(seen), Some(stack)) = (reach.stacks.get_mut(s), self.d.stack_table.get(s))
            else {
                continue;
            };
            if std::mem::replace(seen, true) {
                continue;
            }
            size.stacks += 1;
            // Its field's tag and length: ids take ten bytes at most.
            let ids = stack.location_indices.len() as u64;
            size.stack_bytes += 1 + varint_len(10 * ids);
            for &index in &stack.location_indices {
                let count = usize::try_from(index)
                    .ok()
                    .and_then(|i| reach.locations.get_mut(i));
                if let Some(count) = count {
                    *count = count.saturating_add(1);
                }
            }
        }
        reach.location_indices.clear();
        reach.location_indices.extend(
            reach
                .locations
                .iter()
                .zip(0u32..)
                .filter_map(|(&count, i)| (count != 0).then_some(i)),
        );
        let otlp_location = |i: u32| self.d.location_table.get(i as usize);

        reset(&mut reach.functions, self.d.function_table.len());
        reset(&mut reach.mappings, self.d.mapping_table.len());
        for location in reach
            .location_indices
            .iter()
            .filter_map(|&i| otlp_location(i))
        {
            for line in &location.lines {
                mark(&mut reach.functions, line.function_index);
            }
            if location.mapping_index != 0 {
                mark(&mut reach.mappings, location.mapping_index);
            }
        }
        reached_indices(&reach.functions, &mut reach.function_indices);
        reached_indices(&reach.mappings, &mut reach.mapping_indices);

        ids_by_index(
            &reach.function_indices,
            self.d.function_table.len(),
            &mut reach.function_ids,
        );
        self.out
            .function
            .reserve_exact(reach.function_indices.len());
        self.out.mapping.reserve_exact(reach.mapping_indices.len());
        for (&index, id) in reach.function_indices.iter().zip(1u64..) {
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
        ids_by_index(
            &reach.mapping_indices,
            self.d.mapping_table.len(),
            &mut reach.mapping_ids,
        );
        for (&index, id) in reach.mapping_indices.iter().zip(1u64..) {
            let m = usize::try_from(index)
                .ok()
                .and_then(|i| self.d.mapping_table.get(i))
                .cloned()
                .unwrap_or_default();
            let mapping = self.mapping(id, &m);
            self.out.mapping.push(mapping);
        }

        tables.reset(location_count);
        reach
            .location_attributes
            .reset(self.d.attribute_table.len());
        reach.by_content.reset(reach.location_indices.len());
        reach.extra_lists.reset();
        for &index in &reach.location_indices {
            let Some(l) = otlp_location(index) else {
                continue;
            };
            let mut is_folded = false;
            let mut frame_type = None;
            reach.extras.clear();
            for &a in &l.attribute_indices {
                match reach
                    .location_attributes
                    .get(self, a, &mut tables.escaped_frame_types)
                {
                    LocationAttribute::Folded => is_folded = true,
                    LocationAttribute::FrameType(id) => frame_type = Some(id),
                    LocationAttribute::Other => reach.extras.push(a),
                }
            }
            // Locations with different attributes that pprof does not
            // carry stay apart.
            let extras = reach.extra_lists.id_of(&reach.extras);
            let location = LocationContent {
                mapping_id: id_at(&reach.mapping_ids, l.mapping_index),
                address: l.address,
                lines: l.lines.iter().map(|line| Line {
                    function_id: id_at(&reach.function_ids, line.function_index),
                    line: line.line,
                    column: line.column,
                }),
                is_folded,
                extras,
            };
            let known = reach.by_content.len();
            let id = reach.by_content.id_of(location, &mut self.locations);
            if extras != 0 && reach.by_content.len() > known {
                let attributes = self.resolved_attributes(&reach.extras);
                self.data.locations.push((id, attributes));
            }
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            let index = index as usize;
            if let Some(slot) = tables.locations.get_mut(index) {
                *slot = [
                    id,
                    frame_type.map_or(0, |t| u32::try_from(t + 1).unwrap_or(0)),
                ];
            }
            // Each of the stacks' references to it.
            let references = reach.locations.get(index).copied().unwrap_or(0);
            size.stack_bytes += references as usize * varint_len(u64::from(id));
        }
        size
    }
}

/// `len` times `false`.
fn reset(flags: &mut Vec<bool>, len: usize) {
    flags.clear();
    flags.resize(len, false);
}

/// Marks table index `index` as reached; out-of-range indexes (which
/// validation rejects) are ignored.
fn mark(reached: &mut [bool], index: i32) {
    if let Some(slot) = usize::try_from(index).ok().and_then(|i| reached.get_mut(i)) {
        *slot = true;
    }
}

/// The reached indexes, in table order, into `indices`.
fn reached_indices(reached: &[bool], indices: &mut Vec<i32>) {
    indices.clear();
    indices.extend(
        reached
            .iter()
            .enumerate()
            .filter(|(_, &r)| r)
            .filter_map(|(i, _)| i32::try_from(i).ok()),
    );
}

/// pprof ids by dictionary index, into `ids`: `reached` (in table order)
/// get 1, 2, …; the rest 0.
fn ids_by_index(reached: &[i32], table_len: usize, ids: &mut Vec<u32>) {
    ids.clear();
    ids.resize(table_len, 0);
    for (&index, id) in reached.iter().zip(1u32..) {
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| ids.get_mut(i)) {
            *slot = id;
        }
    }
}

fn id_at(ids: &[u32], index: i32) -> u64 {
    usize::try_from(index)
        .ok()
        .and_then(|i| ids.get(i))
        .map_or(0, |&id| u64::from(id))
}

/// What a location attribute means for pprof.
#[derive(Debug, Clone, Copy)]
enum LocationAttribute {
    /// A true `pprof.location.is_folded`.
    Folded,
    /// An index into `Tables::escaped_frame_types`.
    FrameType(usize),
    Other,
}

/// [`LocationAttribute`]s by attribute index, worked out once each:
/// thousands of locations share a handful of attributes.
#[derive(Default)]
struct LocationAttributes(Vec<Option<LocationAttribute>>);

impl LocationAttributes {
    fn reset(&mut self, attribute_count: usize) {
        self.0.clear();
        self.0.resize(attribute_count, None);
    }

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
            Some((key, value, unit)) if !location_attribute_is_carried(key, &value, unit) => {
                LocationAttribute::Other
            }
            Some((IS_FOLDED, _, _)) => LocationAttribute::Folded,
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
