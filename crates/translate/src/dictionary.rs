//! Builds an OTLP `ProfilesDictionary`: every table starts with its zero
//! entry, and equal entries share one index.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use prost::Message;
use rustc_hash::{FxHashMap, FxHasher};

use crate::otlp::{
    AnyValue, Function, KeyValueAndUnit, Link, Location, Mapping, ProfilesDictionary, Stack,
};

/// Interns dictionary entries; the zero entry of every table is index 0.
/// Strings, stacks, mappings, locations, functions and links are found by a
/// hash of their fields and compared in place, so each is stored once;
/// attributes (whose values nest and hold floats) are keyed by their
/// protobuf encoding, which prost writes deterministically.
#[derive(Default)]
pub struct DictionaryBuilder {
    dictionary: ProfilesDictionary,
    strings: HashTable<i32>,
    mappings: HashTable<i32>,
    locations: HashTable<i32>,
    functions: HashTable<i32>,
    links: HashTable<i32>,
    stacks: HashTable<i32>,
    attributes: FxHashMap<Vec<u8>, i32>,
}

impl std::fmt::Debug for DictionaryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DictionaryBuilder")
            .field("dictionary", &self.dictionary)
            .finish_non_exhaustive()
    }
}

trait ContentHash {
    fn content_hash(&self, hasher: &mut FxHasher);
}

impl ContentHash for String {
    fn content_hash(&self, h: &mut FxHasher) {
        self.as_str().hash(h);
    }
}

impl ContentHash for Stack {
    fn content_hash(&self, h: &mut FxHasher) {
        self.location_indices.hash(h);
    }
}

impl ContentHash for Mapping {
    fn content_hash(&self, h: &mut FxHasher) {
        (
            self.memory_start,
            self.memory_limit,
            self.file_offset,
            self.filename_strindex,
        )
            .hash(h);
        self.attribute_indices.hash(h);
    }
}

impl ContentHash for Location {
    fn content_hash(&self, h: &mut FxHasher) {
        (self.mapping_index, self.address).hash(h);
        for line in &self.lines {
            (line.function_index, line.line, line.column).hash(h);
        }
        self.lines.len().hash(h);
        self.attribute_indices.hash(h);
    }
}

impl ContentHash for Function {
    fn content_hash(&self, h: &mut FxHasher) {
        (
            self.name_strindex,
            self.system_name_strindex,
            self.filename_strindex,
            self.start_line,
        )
            .hash(h);
    }
}

impl ContentHash for Link {
    fn content_hash(&self, h: &mut FxHasher) {
        (&self.trace_id, &self.span_id).hash(h);
    }
}

fn hash_of<T: ContentHash + ?Sized>(entry: &T) -> u64 {
    let mut hasher = FxHasher::default();
    entry.content_hash(&mut hasher);
    hasher.finish()
}

fn entry_at<T>(table: &[T], index: i32) -> Option<&T> {
    usize::try_from(index).ok().and_then(|i| table.get(i))
}

/// The index of the entry equal to `probe` (by `same`), or of `make()`,
/// added at the end of `table`.
fn intern_by<T: ContentHash>(
    table: &mut Vec<T>,
    index: &mut HashTable<i32>,
    hash: u64,
    same: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
) -> i32 {
    if let Some(&i) = index.find(hash, |&i| entry_at(table, i).is_some_and(&same)) {
        return i;
    }
    let i = position(table.len());
    table.push(make());
    index.insert_unique(hash, i, |&i| entry_at(table, i).map_or(0, hash_of));
    i
}

fn intern_hashed<T: ContentHash + PartialEq + Default>(
    table: &mut Vec<T>,
    index: &mut HashTable<i32>,
    entry: T,
) -> i32 {
    if table.is_empty() {
        let zero = T::default();
        intern_by(table, index, hash_of(&zero), |_| false, || zero);
    }
    let hash = hash_of(&entry);
    let probe = &entry;
    let found = index
        .find(hash, |&i| entry_at(table, i) == Some(probe))
        .copied();
    found.unwrap_or_else(|| intern_by(table, index, hash, |_| false, || entry))
}

fn intern<T: Message + Default>(
    table: &mut Vec<T>,
    index: &mut FxHashMap<Vec<u8>, i32>,
    entry: T,
) -> i32 {
    if table.is_empty() {
        table.push(T::default());
        index.insert(Vec::new(), 0);
    }
    let key = entry.encode_to_vec();
    if let Some(&i) = index.get(&key) {
        return i;
    }
    let i = position(table.len());
    table.push(entry);
    index.insert(key, i);
    i
}

/// How many entries [`DictionaryBuilder::reserve`] makes room for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Room {
    pub strings: usize,
    pub mappings: usize,
    pub functions: usize,
    pub locations: usize,
    pub stacks: usize,
}

fn reserve_table<T: ContentHash>(
    table: &mut Vec<T>,
    index: &mut HashTable<i32>,
    additional: usize,
) {
    // An empty table gets its zero entry before the first: room for it
    // too, or the table is copied whole to grow by that one entry.
    let additional = additional + usize::from(table.is_empty());
    table.reserve(additional);
    index.reserve(additional, |&i| entry_at(table, i).map_or(0, hash_of));
}

/// Table positions are i32 in OTLP; a request large enough to overflow
/// that is rejected by size limits long before.
fn position(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

impl DictionaryBuilder {
    pub fn new() -> Self {
        let mut builder = Self::default();
        builder.string("");
        builder.stack(&[]);
        builder
    }

    /// Room for `additional` more entries of each table, so that a large
    /// profile's are not copied at every doubling.
    pub fn reserve(&mut self, additional: &Room) {
        let d = &mut self.dictionary;
        reserve_table(&mut d.string_table, &mut self.strings, additional.strings);
        reserve_table(
            &mut d.mapping_table,
            &mut self.mappings,
            additional.mappings,
        );
        reserve_table(
            &mut d.function_table,
            &mut self.functions,
            additional.functions,
        );
        reserve_table(
            &mut d.location_table,
            &mut self.locations,
            additional.locations,
        );
        reserve_table(&mut d.stack_table, &mut self.stacks, additional.stacks);
    }

    pub fn string(&mut self, s: &str) -> i32 {
        let mut hasher = FxHasher::default();
        s.hash(&mut hasher);
        intern_by(
            &mut self.dictionary.string_table,
            &mut self.strings,
            hasher.finish(),
            |t| t == s,
            || s.to_owned(),
        )
    }

    pub fn attribute(&mut self, key: &str, value: AnyValue, unit: &str) -> i32 {
        let entry = KeyValueAndUnit {
            key_strindex: self.string(key),
            value: Some(value),
            unit_strindex: self.string(unit),
        };
        self.attribute_entry(entry)
    }

    /// An attribute whose string indexes are already this dictionary's.
    pub fn attribute_entry(&mut self, entry: KeyValueAndUnit) -> i32 {
        intern(
            &mut self.dictionary.attribute_table,
            &mut self.attributes,
            entry,
        )
    }

    pub fn mapping(&mut self, mapping: Mapping) -> i32 {
        intern_hashed(
            &mut self.dictionary.mapping_table,
            &mut self.mappings,
            mapping,
        )
    }

    pub fn function(&mut self, function: Function) -> i32 {
        intern_hashed(
            &mut self.dictionary.function_table,
            &mut self.functions,
            function,
        )
    }

    pub fn location(&mut self, location: Location) -> i32 {
        intern_hashed(
            &mut self.dictionary.location_table,
            &mut self.locations,
            location,
        )
    }

    pub fn link(&mut self, link: Link) -> i32 {
        intern_hashed(&mut self.dictionary.link_table, &mut self.links, link)
    }

    pub fn stack(&mut self, location_indices: &[i32]) -> i32 {
        let mut hasher = FxHasher::default();
        location_indices.hash(&mut hasher);
        intern_by(
            &mut self.dictionary.stack_table,
            &mut self.stacks,
            hasher.finish(),
            |s| s.location_indices == location_indices,
            || Stack {
                location_indices: location_indices.to_vec(),
            },
        )
    }

    /// The dictionary, with every table's zero entry present.
    pub fn finish(mut self) -> ProfilesDictionary {
        let d = &mut self.dictionary;
        if d.mapping_table.is_empty() {
            d.mapping_table.push(Mapping::default());
        }
        if d.location_table.is_empty() {
            d.location_table.push(Location::default());
        }
        if d.function_table.is_empty() {
            d.function_table.push(Function::default());
        }
        if d.link_table.is_empty() {
            d.link_table.push(Link::default());
        }
        if d.attribute_table.is_empty() {
            d.attribute_table.push(KeyValueAndUnit::default());
        }
        self.dictionary
    }
}
