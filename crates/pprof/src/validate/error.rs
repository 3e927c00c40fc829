use std::fmt;

use thiserror::Error;

/// The pprof tables whose entries carry ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Mapping,
    Location,
    Function,
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Mapping => "mapping",
            Self::Location => "location",
            Self::Function => "function",
        })
    }
}

/// A broken invariant of the pprof format. Entries with ids are named by id;
/// samples, lines, labels and list positions by their 0-based index.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    #[error("string_table is empty; its entry 0 must be \"\"")]
    EmptyStringTable,
    #[error("string_table[0] is {0:?}; it must be \"\"")]
    FirstStringNotEmpty(String),
    #[error("{place}: string index {index} is out of range (string_table has {len} entries)")]
    StringOutOfRange {
        place: String,
        index: i64,
        len: usize,
    },
    #[error("{table} at index {index} has id 0; ids must be non-zero")]
    ZeroId { table: Table, index: usize },
    #[error("{table} id {id} is used twice, at indexes {first} and {second}")]
    DuplicateId {
        table: Table,
        id: u64,
        first: usize,
        second: usize,
    },
    #[error("sample {sample}: location_id[{position}] references location {location}, which does not exist")]
    MissingLocation {
        sample: usize,
        position: usize,
        location: u64,
    },
    #[error("location {location} references mapping {mapping}, which does not exist")]
    MissingMapping { location: u64, mapping: u64 },
    #[error(
        "location {location}: line {line} references function {function}, which does not exist"
    )]
    MissingFunction {
        location: u64,
        line: usize,
        function: u64,
    },
    #[error("location {location}: line {line} has no function (function_id 0)")]
    LineWithoutFunction { location: u64, line: usize },
    #[error("sample {sample} has {values} values, but the profile has {types} sample types")]
    ValueCountMismatch {
        sample: usize,
        values: usize,
        types: usize,
    },
    #[error("sample {sample}: label {label} has both str and num")]
    LabelWithStrAndNum { sample: usize, label: usize },
    #[error("sample {sample}: label {label} has num_unit on a str label")]
    LabelUnitWithoutNum { sample: usize, label: usize },
    #[error("mapping {mapping}: memory_limit {limit:#x} is below memory_start {start:#x}")]
    MappingLimitBelowStart {
        mapping: u64,
        start: u64,
        limit: u64,
    },
}
