//! The seam to profbridge-pprof's delta module: one tracker per job of a
//! cumulative profile.

pub use profbridge_pprof::delta::{DeltaOutcome, DeltaTracker, ResetReason};
