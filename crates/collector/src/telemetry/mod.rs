//! Self-telemetry: Prometheus metrics, health, logs.

/// `service: telemetry:`, parsed with the rest of the configuration.
pub use crate::settings::telemetry as config;
pub mod exposition;
pub mod instruments;
pub mod metrics;
pub mod process;
pub mod recent_errors;
pub mod server;

pub use instruments::{
    ExporterMetrics, ProcessorMetrics, QueueLevel, ReceiverMetrics, RefusedReason,
};
pub use metrics::{Counter, Registry};
pub use recent_errors::{ErrorHistory, ErrorLog, RecentError, Source};
pub use server::{Phase, Readiness};
