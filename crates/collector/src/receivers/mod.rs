//! Receivers: where profiles enter.

mod admitted_body;
pub mod file;
mod from_pprof;
pub mod intake;
pub mod kafka;
pub mod nop;
pub mod otlp;
pub mod pprof;
mod pprof_http;
pub mod pyroscope;
mod watched_files;
