//! The profbridge collector: receives OTLP profiles, runs them through
//! pipelines, and writes or forwards them.

mod client;
pub mod component;
pub mod components;
pub mod config;
pub mod descriptors;
pub mod exporters;
pub mod extensions;
mod net;
pub mod pipeline;
pub mod processors;
pub mod protocol;
pub mod receivers;
mod sampler;
pub mod service;
pub mod settings;
pub mod shared;
mod split;
pub mod telemetry;
pub mod tls;
