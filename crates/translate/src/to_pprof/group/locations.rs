//! The pprof's location table, written as protobuf as it is built: pprof
//! locations by their content, so that OTLP locations that differ only in
//! what pprof does not keep (their frame type) become one. Two locations
//! have the same content exactly when their encoded fields are the same
//! bytes.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHasher};

use profbridge_pprof::wire::{put_location, write_location_content};
use profbridge_pprof::Line;

use super::super::rows::{index32, Span};

/// What a pprof location holds besides its id.
pub(super) struct LocationContent<Lines> {
    pub mapping_id: u64,
    pub address: u64,
    pub lines: Lines,
    pub is_folded: bool,
    /// The number of its list of attributes pprof does not carry
    /// ([`ExtraAttributes`]), 0 for none.
    pub extras: u32,
}

impl<Lines: Iterator<Item = Line> + Clone> LocationContent<Lines> {
    /// Of its values rather than its encoding, which is read back too soon
    /// after it is written byte by byte.
    fn hash(&self) -> u64 {
        let mut hasher = FxHasher::default();
        (self.mapping_id, self.address, self.is_folded, self.extras).hash(&mut hasher);
        for line in self.lines.clone() {
            line.hash(&mut hasher);
        }
        hasher.finish()
    }
}

/// Where the locations of a table are, and which has which content; kept
/// between pprofs for its memory.
#[derive(Default)]
pub(in crate::to_pprof) struct LocationsByContent {
    /// By id - 1: where in the table a location's content (its fields
    /// after the id) is, its hash and its extra attributes' number.
    contents: Vec<(Span, u64, u32)>,
    /// Ids - 1 by the hash of their content.
    by_content: HashTable<u32>,
    /// The content of the location being added.
    content: Vec<u8>,
}

impl LocationsByContent {
    /// Empty, with room for `locations`.
    pub fn reset(&mut self, locations: usize) {
        self.contents.clear();
        self.contents.reserve(locations);
        self.by_content.clear();
        // Empty, so nothing is rehashed.
        self.by_content.reserve(locations, |_| 0);
    }

    pub fn capacity_bytes(&self) -> usize {
        self.contents.capacity() * size_of::<(Span, u64, u32)>()
            + self.by_content.capacity() * (size_of::<u32>() + 1)
            + self.content.capacity()
    }

    /// How many locations there are.
    pub fn len(&self) -> usize {
        self.contents.len()
    }

    /// The id of the location in `table` (`Profile.location` fields, all
    /// added here) with `location`'s content; when there is none, adds it
    /// with the next id.
    pub fn id_of(
        &mut self,
        location: LocationContent<impl Iterator<Item = Line> + Clone>,
        table: &mut Vec<u8>,
    ) -> u64 {
        let Self {
            contents,
            by_content,
            content,
        } = self;
        let hash = location.hash();
        let extras = location.extras;
        content.clear();
        write_location_content(
            location.mapping_id,
            location.address,
            location.lines,
            location.is_folded,
            content,
        );
        let found = by_content.find(hash, |&i| {
            content_at(contents, table, i) == content.as_slice()
                && contents.get(i as usize).is_some_and(|c| c.2 == extras)
        });
        if let Some(&known) = found {
            return u64::from(known) + 1;
        }
        let id = contents.len() as u64 + 1;
        put_location(table, id, content);
        contents.push((
            Span::new(table.len() - content.len()..table.len()),
            hash,
            extras,
        ));
        by_content.insert_unique(hash, index32(contents.len() - 1), |&i| {
            contents.get(i as usize).map_or(0, |&(_, hash, _)| hash)
        });
        id
    }
}

/// The content of the location with id `index` + 1.
fn content_at<'t>(contents: &[(Span, u64, u32)], table: &'t [u8], index: u32) -> &'t [u8] {
    contents
        .get(index as usize)
        .and_then(|(span, _, _)| table.get(span.range()))
        .unwrap_or_default()
}

/// Lists of location attribute indexes that pprof does not carry,
/// numbered from 1 in first-seen order; kept between pprofs for its memory.
#[derive(Default)]
pub(in crate::to_pprof) struct ExtraAttributes {
    numbers: FxHashMap<Vec<i32>, u32>,
}

impl ExtraAttributes {
    pub fn reset(&mut self) {
        self.numbers.clear();
    }

    pub fn capacity_bytes(&self) -> usize {
        self.numbers.capacity() * size_of::<(Vec<i32>, u32)>()
    }

    /// The number of `list`: 0 when it is empty.
    pub fn id_of(&mut self, list: &[i32]) -> u32 {
        if list.is_empty() {
            return 0;
        }
        if let Some(&known) = self.numbers.get(list) {
            return known;
        }
        let number = u32::try_from(self.numbers.len() + 1).unwrap_or(u32::MAX);
        self.numbers.insert(list.to_vec(), number);
        number
    }
}
