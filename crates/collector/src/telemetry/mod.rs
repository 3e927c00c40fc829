//! Self-telemetry: Prometheus metrics, health, logs.

pub mod config;
