//! Self-telemetry: Prometheus metrics, health, logs.

pub mod config;
pub mod exposition;
pub mod instruments;
pub mod metrics;
pub mod process;
pub mod server;

pub use instruments::{ExporterMetrics, QueueLevel, ReceiverMetrics, RefusedReason};
pub use metrics::{Counter, Registry};
pub use server::Readiness;
