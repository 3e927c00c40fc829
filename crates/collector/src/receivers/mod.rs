//! Receivers: where profiles enter.

pub mod file;
mod handoff;
mod intake;
mod legacy_http;
pub mod nop;
pub mod otlp;
pub mod pprof;
pub mod pyroscope;
