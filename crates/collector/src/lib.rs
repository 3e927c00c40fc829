//! The profbridge collector: receives OTLP profiles, runs them through
//! pipelines, and writes or forwards them.

pub mod config;
pub mod exporters;
mod kept;
mod net;
pub mod pipeline;
pub mod processors;
pub mod push_v1;
pub mod receivers;
pub mod service;
pub mod telemetry;
pub mod tls;
