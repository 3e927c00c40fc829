//! The file receiver: polls include globs for profile files in any format
//! profbridge reads, and delivers each new or changed file once (the
//! engine in receivers/watched_files/, which the pprof receiver's `file`
//! source runs too).

pub mod config;
mod factory;

pub use factory::FileReceiverFactory;
