//! What can be wrong with a recording's bytes.

use thiserror::Error;

/// A fault at one byte of the recording, before the reader says which
/// chunk and which table it was reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadError {
    pub(crate) offset: u64,
    pub(crate) problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    #[error("the data ends in the middle of a value")]
    UnexpectedEnd,
    #[error("a compressed int or short has more bits than its type")]
    IntegerTooWide,
    #[error("a count is negative ({0})")]
    NegativeCount(i64),
    #[error("a count of {count} is more than the {remaining} bytes left")]
    CountPastEnd { count: u64, remaining: u64 },
    #[error("string encoding {0} is not one JFR defines")]
    UnknownStringEncoding(u8),
    #[error("the chunk magic is not \"FLR\\0\"")]
    BadMagic,
    #[error("format version {major}.{minor} is not 2.x")]
    UnsupportedVersion { major: u16, minor: u16 },
    #[error("the chunk says it has {size} bytes, but {available} are left in the input")]
    ChunkSizePastInput { size: u64, available: u64 },
    #[error("offset {offset} is outside the chunk of {chunk_size} bytes")]
    OffsetOutOfChunk { offset: u64, chunk_size: u64 },
    #[error("an event's size ({size}) is not positive or passes the chunk's end")]
    BadEventSize { size: i64 },
    #[error("expected event type {expected}, found {found}")]
    WrongEventType { expected: i64, found: i64 },
    #[error("string index {index} is outside the metadata's {len} strings")]
    BadStringIndex { index: i64, len: usize },
    #[error("expected element <{expected}>, found <{found}>")]
    UnexpectedElement {
        expected: &'static str,
        found: String,
    },
    #[error("attribute {attribute}={value:?} is not valid")]
    BadAttribute {
        attribute: &'static str,
        value: String,
    },
    #[error("a required attribute {0} is missing")]
    MissingAttribute(&'static str),
    #[error("type id {0} is not described by the metadata")]
    UnknownType(i64),
    #[error("the metadata does not describe {0}")]
    MissingType(&'static str),
    #[error("more than {limit} {what}")]
    LimitExceeded { what: &'static str, limit: usize },
    #[error("the constant pool chain loops back to offset {0}")]
    PoolChainLoop(u64),
    #[error("more than {per_byte} values for each byte they are read from")]
    TooManyValues { per_byte: usize },
    #[error("the value nests deeper than {0} levels")]
    TooDeep(usize),
    #[error("the event ends before its fields do")]
    EventPastItsSize,
}
