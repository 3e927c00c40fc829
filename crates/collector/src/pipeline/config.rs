use serde::Deserialize;

use crate::config::units::ByteSize;

/// `service.pipelines.NAME.queue`: how much a pipeline holds before its
/// receivers answer "retry later".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Encoded bytes of the requests queued or being exported.
    pub max_bytes: ByteSize,
    /// Requests queued.
    pub max_requests: usize,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_bytes: ByteSize(super::DEFAULT_QUEUE_BYTES as u64),
            max_requests: super::DEFAULT_QUEUE_REQUESTS,
        }
    }
}
