//! The profbridge collector: receives OTLP profiles, runs them through
//! pipelines, and writes or forwards them.

pub mod component;
pub mod components;
pub mod config;
pub mod exporters;
pub mod extensions;
mod net;
pub mod pipeline;
pub mod processors;
pub mod push_v1;
pub mod pyroscope_attributes;
pub mod receivers;
pub mod retry_info;
mod reuse;
pub mod service;
pub mod settings;
pub mod telemetry;
pub mod timestamp;
pub mod tls;
