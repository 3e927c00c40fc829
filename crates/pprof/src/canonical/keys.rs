//! Content keys: two table entries with equal keys are the same entry.

use crate::{Label, Line, Mapping, StringInterner};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct FunctionKey<'a> {
    pub name: &'a str,
    pub system_name: &'a str,
    pub filename: &'a str,
    pub start_line: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct MappingKey<'a> {
    start: u64,
    limit: u64,
    offset: u64,
    filename: &'a str,
    build_id: &'a str,
    flags: [bool; 4],
}

impl<'a> MappingKey<'a> {
    pub fn of(mapping: &Mapping, text: impl Fn(i64) -> &'a str) -> Self {
        Self {
            start: mapping.memory_start,
            limit: mapping.memory_limit,
            offset: mapping.file_offset,
            filename: text(mapping.filename),
            build_id: text(mapping.build_id),
            flags: [
                mapping.has_functions,
                mapping.has_filenames,
                mapping.has_line_numbers,
                mapping.has_inline_frames,
            ],
        }
    }

    /// A mapping with nothing in it means the same as no mapping.
    pub fn is_all_zero(&self) -> bool {
        *self
            == Self {
                start: 0,
                limit: 0,
                offset: 0,
                filename: "",
                build_id: "",
                flags: [false; 4],
            }
    }

    pub fn to_mapping(self, id: u64, strings: &mut StringInterner) -> Mapping {
        let [has_functions, has_filenames, has_line_numbers, has_inline_frames] = self.flags;
        Mapping {
            id,
            memory_start: self.start,
            memory_limit: self.limit,
            file_offset: self.offset,
            filename: strings.intern(self.filename),
            build_id: strings.intern(self.build_id),
            has_functions,
            has_filenames,
            has_line_numbers,
            has_inline_frames,
        }
    }
}

/// Lines refer to canonical function ids; line order is part of the key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct LocationKey {
    pub mapping_id: u64,
    pub address: u64,
    pub lines: Vec<Line>,
    pub is_folded: bool,
}

/// A resolved label. Field order gives the canonical sort: key, kind
/// (str before num), value, unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct LabelKey<'a> {
    pub key: &'a str,
    pub is_num: bool,
    pub str_value: &'a str,
    pub num: i64,
    pub unit: &'a str,
}

impl<'a> LabelKey<'a> {
    /// `None` for a key-only label, which carries nothing.
    pub fn of(label: &Label, text: impl Fn(i64) -> &'a str) -> Option<Self> {
        let key = text(label.key);
        let str_value = text(label.str);
        let unit = text(label.num_unit);
        if !str_value.is_empty() {
            return Some(Self {
                key,
                is_num: false,
                str_value,
                num: 0,
                unit: "",
            });
        }
        if label.num != 0 || !unit.is_empty() {
            return Some(Self {
                key,
                is_num: true,
                str_value: "",
                num: label.num,
                unit,
            });
        }
        None
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct SampleKey<'a> {
    pub locations: Vec<u64>,
    pub labels: Vec<LabelKey<'a>>,
}
