//! Receivers: where profiles enter.

pub mod otlp;
