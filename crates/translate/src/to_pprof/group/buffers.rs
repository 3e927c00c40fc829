//! The memory [`super::pprof_of_group`] works in, kept between pprofs: a
//! converter that writes one request after another would otherwise
//! allocate, fault in and free megabytes of tables for each, and a small
//! allocation for every string.

use profbridge_pprof::{Function, Label, Mapping, Profile as Pprof, StringInterner};

use super::super::rows::Rows;
use super::super::samples::Samples;
use super::super::UnassembledPprof;
use super::tables::{Reach, Tables};
use super::StackLabels;

#[derive(Default)]
pub(in crate::to_pprof) struct GroupBuffers {
    /// Holds the strings of pprofs given back, for new strings.
    pub(super) strings: StringInterner,
    pub(super) interned: Vec<u32>,
    pub(super) stacks: Vec<Option<StackLabels>>,
    pub(super) links: Vec<Option<[Label; 2]>>,
    pub(super) tables: Tables,
    pub(super) reach: Reach,
    pub(super) rows: Rows,
    pub(super) samples: Samples,
    /// Emptied tables of a pprof given back.
    pub(super) locations: Vec<u8>,
    pub(super) functions: Vec<Function>,
    pub(super) mappings: Vec<Mapping>,
}

impl GroupBuffers {
    /// Takes back the memory of a pprof built in these buffers, once it is
    /// written.
    pub fn recycle(&mut self, pprof: UnassembledPprof) {
        let UnassembledPprof {
            head,
            mut locations,
            mut samples,
        } = pprof;
        let Pprof {
            mut function,
            mut mapping,
            string_table,
            ..
        } = head;
        self.strings.restart(string_table);
        locations.clear();
        function.clear();
        mapping.clear();
        keep_larger(&mut self.locations, locations);
        keep_larger(&mut self.functions, function);
        keep_larger(&mut self.mappings, mapping);
        samples.give_back_values(&mut self.rows);
        if samples.capacity_bytes() > self.samples.capacity_bytes() {
            self.samples = samples;
        }
    }

    /// About how many bytes these buffers hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.strings.capacity_bytes()
            + self.interned.capacity() * size_of::<u32>()
            + self.stacks.capacity() * size_of::<Option<StackLabels>>()
            + self.links.capacity() * size_of::<Option<[Label; 2]>>()
            + self.tables.capacity_bytes()
            + self.reach.capacity_bytes()
            + self.rows.capacity_bytes()
            + self.samples.capacity_bytes()
            + self.locations.capacity()
            + self.functions.capacity() * size_of::<Function>()
            + self.mappings.capacity() * size_of::<Mapping>()
    }
}

/// Keeps the larger of two emptied vectors.
fn keep_larger<T>(kept: &mut Vec<T>, other: Vec<T>) {
    if other.capacity() > kept.capacity() {
        *kept = other;
    }
}
