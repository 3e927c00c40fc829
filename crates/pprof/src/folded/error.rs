use std::num::ParseIntError;

use thiserror::Error;

use crate::ValidationError;

/// Why folded text could not be read, or a profile could not be written as
/// folded text. Lines are numbered from 1, frames within a line from 1.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FoldedError {
    #[error("line {line}: not valid UTF-8")]
    InvalidUtf8 { line: usize },
    #[error("line {line}: no value; expected `frame;frame;frame value`")]
    MissingValue { line: usize },
    #[error("line {line}: value {value:?} is not a 64-bit integer: {source}")]
    InvalidValue {
        line: usize,
        value: String,
        source: ParseIntError,
    },
    #[error("line {line}: no frames before the value")]
    NoFrames { line: usize },
    #[error("line {line}: frame {frame} is empty")]
    EmptyFrame { line: usize, frame: usize },
    #[error("line {line}: the total of this stack overflows a 64-bit integer")]
    TotalOverflow { line: usize },
    #[error("sample type {index} does not exist (the profile has {count} sample types)")]
    SampleTypeOutOfRange { index: usize, count: usize },
    #[error("stack {stack:?}: its total overflows a 64-bit integer")]
    StackTotalOverflow { stack: String },
    #[error("invalid profile: {0}")]
    InvalidProfile(ValidationError),
}

/// By hand rather than `#[from]`, which would also make the error the
/// `source()` of a text that already shows it (docs/architecture.md).
impl From<ValidationError> for FoldedError {
    fn from(error: ValidationError) -> Self {
        Self::InvalidProfile(error)
    }
}
