//! Receivers: where profiles enter.

pub mod file;
mod from_pprof;
pub mod intake;
pub mod nop;
pub mod otlp;
pub mod pprof;
mod pprof_http;
pub mod pyroscope;
