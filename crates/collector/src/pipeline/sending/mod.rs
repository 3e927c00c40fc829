//! The exporter helper every exporter runs behind, in the shape of the
//! OpenTelemetry Collector's exporterhelper:
//!
//! - a sending queue per exporter ([`QueuedExporter`]), bounded in
//!   requests and bytes, drained by `num_consumers` tasks; a full queue
//!   drops the newest request (counted in
//!   `profbridge_exporter_enqueue_failed_profiles_total`) or makes the
//!   caller wait, as `on_overflow` says;
//! - optionally persistent (`storage`): requests are appended to
//!   checksummed segment files and fsynced before `offer` returns, and
//!   replayed at the next start until exported (`persistent/`);
//! - retries of retryable failures with exponential backoff and jitter,
//!   at least as long as the destination's Retry-After, until
//!   `max_elapsed_time` (`backoff.rs`, `retry.rs`); each attempt limited by
//!   `timeout`;
//! - requests that fail for good written to `dead_letter` as OTLP
//!   protobuf files (`dead_letter.rs`).

mod backoff;
mod bounded;
mod consumers;
/// The sending queue, retry, timeout and dead letter options every
/// exporter embeds, parsed with the rest of the configuration.
pub use crate::settings::exporter_helper as config;
mod dead_letter;
mod error;
mod persistent;
mod queue;
mod queued;
mod retry;
mod settle;
mod shared;

pub use config::{ExporterHelperConfig, OnOverflow, QueueStorage, RetryConfig, SendingQueueConfig};
pub use error::{EnqueueError, HelperError};
pub use queued::QueuedExporter;
