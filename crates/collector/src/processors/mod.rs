//! Processors: what a pipeline does to requests between its receivers and
//! its exporters. Each is synchronous library code; the pipeline drives
//! it (and, for `batch`, owns the timer).
//!
//! - `resource` inserts, updates, upserts or deletes resource attributes.
//! - `batch` merges small requests into bigger ones and splits requests
//!   that pass a sample or byte limit.
//! - `symbolize` resolves native frames to functions, files and lines.
//! - `memory_limiter` refuses new data at the pipeline's intake while the
//!   process's memory is above its soft limit.

pub mod batch;
pub mod memory_limiter;
pub mod resource;
pub mod symbolize;

use crate::settings::Problem;

pub use batch::{BatchProcessorConfig, Batcher};
pub use resource::{ResourceProcessor, ResourceProcessorConfig};
pub use symbolize::{SymbolizeProcessor, SymbolizeProcessorConfig};

/// Every problem of a processor's options, shown one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(Problem::to_string).collect::<Vec<_>>().join("\n"))]
pub struct InvalidOptions(pub Vec<Problem>);
