//! Processors: what a pipeline does to requests between its receivers and
//! its exporters. Each is synchronous library code; the pipeline drives
//! it (and, for `batch`, owns the timer).
//!
//! - `resource` inserts, updates, upserts or deletes resource attributes.
//! - `batch` merges small requests into bigger ones and splits requests
//!   that pass a sample or byte limit.

pub mod batch;
pub mod resource;

use std::fmt;

pub use batch::{BatchProcessorConfig, Batcher};
pub use resource::{ResourceProcessor, ResourceProcessorConfig};

/// A problem in a processor's options: the key path below the processor's
/// own section (`attributes[1].value`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionProblem {
    pub path: String,
    pub message: String,
}

impl OptionProblem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for OptionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem of a processor's options, shown one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(OptionProblem::to_string).collect::<Vec<_>>().join("\n"))]
pub struct InvalidOptions(pub Vec<OptionProblem>);
