use serde::Deserialize;

use super::units::ByteSize;

/// Default bytes a pipeline may hold, queued or being exported.
pub const DEFAULT_QUEUE_BYTES: usize = 256 << 20;
/// Default number of requests a pipeline may hold.
pub const DEFAULT_QUEUE_REQUESTS: usize = 1024;

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
            max_bytes: ByteSize(DEFAULT_QUEUE_BYTES as u64),
            max_requests: DEFAULT_QUEUE_REQUESTS,
        }
    }
}
