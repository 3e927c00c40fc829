//! A dictionary holding only what one piece of a split request references.
//! Entries are copied from the source dictionary on first use, in
//! first-use order, with their own references renumbered; the running
//! encoded size says what the piece's dictionary costs. A mark and a
//! rollback take back everything copied since the mark, so that a unit
//! can be tried and withdrawn when it does not fit.

use prost::encoding::encoded_len_varint;
use prost::Message;

use profbridge_translate::otlp::{
    any_value, AnyValue, KeyValue, Profile, ProfilesDictionary, Sample, ValueType,
};

/// The encoded size of a length-delimited field with a one-byte tag (every
/// field the splitter writes has a number below 16) and a body of `len`.
pub(super) fn framed(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

/// The most a length-delimited field costs beyond its body: a one-byte tag
/// and the longest varint.
pub(super) const FRAME_BOUND: usize = 11;

/// Old → new indexes of one table. 0 maps to 0; `new_of_old` holds 0 for
/// entries not copied yet.
struct Renumbering {
    new_of_old: Vec<i32>,
    /// Old indexes in the order they were copied: `copied[k]` is new `k + 1`.
    copied: Vec<usize>,
}

enum Lookup {
    /// Index 0, or an index outside the source table.
    Zero,
    Copied(i32),
    Missing(usize),
}

impl Renumbering {
    fn new(len: usize) -> Self {
        Self {
            new_of_old: vec![0; len],
            copied: Vec::new(),
        }
    }

    fn lookup(&self, old: i32) -> Lookup {
        let Some(index) = usize::try_from(old).ok().filter(|&i| i != 0) else {
            return Lookup::Zero;
        };
        match self.new_of_old.get(index) {
            None => Lookup::Zero,
            Some(0) => Lookup::Missing(index),
            Some(&new) => Lookup::Copied(new),
        }
    }

    /// Notes that `old` was appended to the target table; its new index.
    fn record(&mut self, old: usize) -> i32 {
        self.copied.push(old);
        let new = i32::try_from(self.copied.len()).unwrap_or(i32::MAX);
        if let Some(slot) = self.new_of_old.get_mut(old) {
            *slot = new;
        }
        new
    }

    fn rollback(&mut self, copied: usize) {
        for old in self.copied.drain(copied..) {
            if let Some(slot) = self.new_of_old.get_mut(old) {
                *slot = 0;
            }
        }
    }
}

/// What [`Pruner::rollback`] returns to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    copied: [usize; 7],
    bytes: usize,
}

pub(super) struct Pruner<'a> {
    source: &'a ProfilesDictionary,
    target: ProfilesDictionary,
    bytes: usize,
    strings: Renumbering,
    attributes: Renumbering,
    mappings: Renumbering,
    functions: Renumbering,
    locations: Renumbering,
    stacks: Renumbering,
    links: Renumbering,
}

/// A dictionary of zero entries only.
fn zero_dictionary() -> ProfilesDictionary {
    ProfilesDictionary {
        mapping_table: vec![Default::default()],
        location_table: vec![Default::default()],
        function_table: vec![Default::default()],
        link_table: vec![Default::default()],
        string_table: vec![String::new()],
        attribute_table: vec![Default::default()],
        stack_table: vec![Default::default()],
    }
}

impl<'a> Pruner<'a> {
    pub(super) fn new(source: &'a ProfilesDictionary) -> Self {
        let target = zero_dictionary();
        Self {
            source,
            bytes: target.encoded_len(),
            target,
            strings: Renumbering::new(source.string_table.len()),
            attributes: Renumbering::new(source.attribute_table.len()),
            mappings: Renumbering::new(source.mapping_table.len()),
            functions: Renumbering::new(source.function_table.len()),
            locations: Renumbering::new(source.location_table.len()),
            stacks: Renumbering::new(source.stack_table.len()),
            links: Renumbering::new(source.link_table.len()),
        }
    }

    /// The encoded size of the dictionary built so far.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    fn tables(&mut self) -> [&mut Renumbering; 7] {
        [
            &mut self.strings,
            &mut self.attributes,
            &mut self.mappings,
            &mut self.functions,
            &mut self.locations,
            &mut self.stacks,
            &mut self.links,
        ]
    }

    pub(super) fn mark(&mut self) -> Mark {
        let bytes = self.bytes;
        Mark {
            copied: self.tables().map(|t| t.copied.len()),
            bytes,
        }
    }

    pub(super) fn rollback(&mut self, mark: Mark) {
        for (table, copied) in self.tables().into_iter().zip(mark.copied) {
            table.rollback(copied);
        }
        let [strings, attributes, mappings, functions, locations, stacks, links] = mark.copied;
        let t = &mut self.target;
        t.string_table.truncate(strings + 1);
        t.attribute_table.truncate(attributes + 1);
        t.mapping_table.truncate(mappings + 1);
        t.function_table.truncate(functions + 1);
        t.location_table.truncate(locations + 1);
        t.stack_table.truncate(stacks + 1);
        t.link_table.truncate(links + 1);
        self.bytes = mark.bytes;
    }

    /// The dictionary built so far; the pruner starts over, empty.
    pub(super) fn finish(&mut self) -> ProfilesDictionary {
        for table in self.tables() {
            table.rollback(0);
        }
        let dictionary = std::mem::replace(&mut self.target, zero_dictionary());
        self.bytes = self.target.encoded_len();
        dictionary
    }

    fn string(&mut self, old: i32) -> i32 {
        match self.strings.lookup(old) {
            Lookup::Zero => 0,
            Lookup::Copied(new) => new,
            Lookup::Missing(index) => {
                let text = self
                    .source
                    .string_table
                    .get(index)
                    .cloned()
                    .unwrap_or_default();
                self.bytes += framed(text.len());
                self.target.string_table.push(text);
                self.strings.record(index)
            }
        }
    }

    fn attribute(&mut self, old: i32) -> i32 {
        let index = match self.attributes.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let source = self.source;
        let mut entry = source
            .attribute_table
            .get(index)
            .cloned()
            .unwrap_or_default();
        entry.key_strindex = self.string(entry.key_strindex);
        entry.unit_strindex = self.string(entry.unit_strindex);
        if let Some(value) = &mut entry.value {
            self.any_value(value);
        }
        self.bytes += framed(entry.encoded_len());
        self.target.attribute_table.push(entry);
        self.attributes.record(index)
    }

    fn attribute_indices(&mut self, indices: &mut [i32]) {
        for index in indices {
            *index = self.attribute(*index);
        }
    }

    fn mapping(&mut self, old: i32) -> i32 {
        let index = match self.mappings.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let source = self.source;
        let mut entry = source.mapping_table.get(index).cloned().unwrap_or_default();
        entry.filename_strindex = self.string(entry.filename_strindex);
        self.attribute_indices(&mut entry.attribute_indices);
        self.bytes += framed(entry.encoded_len());
        self.target.mapping_table.push(entry);
        self.mappings.record(index)
    }

    fn function(&mut self, old: i32) -> i32 {
        let index = match self.functions.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let source = self.source;
        let mut entry = source
            .function_table
            .get(index)
            .cloned()
            .unwrap_or_default();
        entry.name_strindex = self.string(entry.name_strindex);
        entry.system_name_strindex = self.string(entry.system_name_strindex);
        entry.filename_strindex = self.string(entry.filename_strindex);
        self.bytes += framed(entry.encoded_len());
        self.target.function_table.push(entry);
        self.functions.record(index)
    }

    fn location(&mut self, old: i32) -> i32 {
        let index = match self.locations.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let source = self.source;
        let mut entry = source
            .location_table
            .get(index)
            .cloned()
            .unwrap_or_default();
        entry.mapping_index = self.mapping(entry.mapping_index);
        for line in &mut entry.lines {
            line.function_index = self.function(line.function_index);
        }
        self.attribute_indices(&mut entry.attribute_indices);
        self.bytes += framed(entry.encoded_len());
        self.target.location_table.push(entry);
        self.locations.record(index)
    }

    fn stack(&mut self, old: i32) -> i32 {
        let index = match self.stacks.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let source = self.source;
        let mut entry = source.stack_table.get(index).cloned().unwrap_or_default();
        for location in &mut entry.location_indices {
            *location = self.location(*location);
        }
        self.bytes += framed(entry.encoded_len());
        self.target.stack_table.push(entry);
        self.stacks.record(index)
    }

    fn link(&mut self, old: i32) -> i32 {
        let index = match self.links.lookup(old) {
            Lookup::Zero => return 0,
            Lookup::Copied(new) => return new,
            Lookup::Missing(index) => index,
        };
        let entry = self
            .source
            .link_table
            .get(index)
            .cloned()
            .unwrap_or_default();
        self.bytes += framed(entry.encoded_len());
        self.target.link_table.push(entry);
        self.links.record(index)
    }

    fn any_value(&mut self, value: &mut AnyValue) {
        match &mut value.value {
            Some(any_value::Value::StringValueStrindex(index)) => *index = self.string(*index),
            Some(any_value::Value::ArrayValue(array)) => {
                for item in &mut array.values {
                    self.any_value(item);
                }
            }
            Some(any_value::Value::KvlistValue(list)) => self.key_values(&mut list.values),
            _ => {}
        }
    }

    /// Renumbers resource or scope attributes (or a key-value list).
    pub(super) fn key_values(&mut self, key_values: &mut [KeyValue]) {
        for kv in key_values {
            kv.key_strindex = self.string(kv.key_strindex);
            if let Some(value) = &mut kv.value {
                self.any_value(value);
            }
        }
    }

    /// Renumbers a profile's own fields (not its samples).
    pub(super) fn profile_header(&mut self, profile: &mut Profile) {
        for value_type in [&mut profile.sample_type, &mut profile.period_type]
            .into_iter()
            .flatten()
        {
            self.value_type(value_type);
        }
        self.attribute_indices(&mut profile.attribute_indices);
    }

    fn value_type(&mut self, value_type: &mut ValueType) {
        value_type.type_strindex = self.string(value_type.type_strindex);
        value_type.unit_strindex = self.string(value_type.unit_strindex);
    }

    pub(super) fn sample(&mut self, sample: &mut Sample) {
        sample.stack_index = self.stack(sample.stack_index);
        sample.link_index = self.link(sample.link_index);
        self.attribute_indices(&mut sample.attribute_indices);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_translate::otlp::{Function, Line, Location, Stack};

    fn source() -> ProfilesDictionary {
        ProfilesDictionary {
            string_table: ["", "a", "b", "c"].map(String::from).to_vec(),
            function_table: vec![
                Function::default(),
                Function {
                    name_strindex: 3,
                    ..Function::default()
                },
                Function {
                    name_strindex: 2,
                    ..Function::default()
                },
            ],
            location_table: vec![
                Location::default(),
                Location {
                    lines: vec![Line {
                        function_index: 2,
                        ..Line::default()
                    }],
                    ..Location::default()
                },
            ],
            stack_table: vec![
                Stack::default(),
                Stack {
                    location_indices: vec![1, 1],
                },
            ],
            ..zero_dictionary()
        }
    }

    #[test]
    fn copies_only_what_is_used_and_counts_its_bytes() {
        let source = source();
        let mut pruner = Pruner::new(&source);
        let mut sample = Sample {
            stack_index: 1,
            ..Sample::default()
        };
        pruner.sample(&mut sample);
        assert_eq!(sample.stack_index, 1);
        assert_eq!(pruner.bytes(), pruner.target.encoded_len());
        let dictionary = pruner.finish();
        assert_eq!(dictionary.string_table, ["", "b"]);
        assert_eq!(dictionary.function_table.len(), 2);
        assert_eq!(dictionary.function_table[1].name_strindex, 1);
        assert_eq!(dictionary.stack_table[1].location_indices, [1, 1]);
    }

    #[test]
    fn a_rollback_forgets_what_was_copied_after_the_mark() {
        let source = source();
        let mut pruner = Pruner::new(&source);
        let mut value_type = ValueType {
            type_strindex: 1,
            unit_strindex: 3,
        };
        pruner.value_type(&mut value_type);
        let mark = pruner.mark();
        let bytes = pruner.bytes();
        let mut sample = Sample {
            stack_index: 1,
            ..Sample::default()
        };
        pruner.sample(&mut sample);
        pruner.rollback(mark);
        assert_eq!(pruner.bytes(), bytes);
        assert_eq!(pruner.target.string_table, ["", "a", "c"]);
        assert_eq!(pruner.target.stack_table.len(), 1);
        let mut again = Sample {
            stack_index: 1,
            ..Sample::default()
        };
        pruner.sample(&mut again);
        assert_eq!(pruner.target.string_table, ["", "a", "c", "b"]);
        assert_eq!(pruner.bytes(), pruner.target.encoded_len());
    }
}
