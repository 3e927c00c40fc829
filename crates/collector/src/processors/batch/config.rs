use serde::Deserialize;

use crate::settings::units::{ByteSize, Duration};
use crate::settings::Options;
use crate::settings::Problem;

/// Samples a batch collects before it is sent, as in the OpenTelemetry
/// Collector's batch processor.
pub const DEFAULT_SEND_BATCH_SIZE: usize = 8192;
/// How long the first request of a batch waits for others.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

/// `processors.batch`. Sizes count samples (`Sample` messages, across every
/// profile of a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BatchProcessorConfig {
    /// A batch is sent once it holds this many samples; 0 sends every
    /// request as it comes (still split by the limits below).
    pub send_batch_size: usize,
    /// The most samples one batch may hold; 0 is no limit. Larger
    /// requests are split.
    pub send_batch_max_size: usize,
    /// The most encoded bytes one batch may hold; 0 is no limit. Larger
    /// requests are split; a single sample larger than this goes alone.
    pub send_batch_max_bytes: ByteSize,
    /// How long a batch waits for more requests before it is sent anyway;
    /// 0 sends every request as it comes.
    pub timeout: Duration,
}

impl Default for BatchProcessorConfig {
    fn default() -> Self {
        Self {
            send_batch_size: DEFAULT_SEND_BATCH_SIZE,
            send_batch_max_size: 0,
            send_batch_max_bytes: ByteSize(0),
            timeout: Duration(DEFAULT_TIMEOUT),
        }
    }
}

impl BatchProcessorConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.send_batch_max_size != 0 && self.send_batch_max_size < self.send_batch_size {
            problems.push(Problem::new(
                "send_batch_max_size",
                format!(
                    "{} is less than send_batch_size ({}); use 0 (no limit) or at least send_batch_size",
                    self.send_batch_max_size, self.send_batch_size
                ),
            ));
        }
        if usize::try_from(self.send_batch_max_bytes.0).is_err() {
            problems.push(Problem::new(
                "send_batch_max_bytes",
                format!(
                    "{} bytes is more than this machine can address",
                    self.send_batch_max_bytes.0
                ),
            ));
        }
        problems
    }
}

impl Options for BatchProcessorConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_units() {
        let config: BatchProcessorConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, BatchProcessorConfig::default());
        assert_eq!(config.send_batch_size, 8192);
        assert_eq!(config.timeout.0, std::time::Duration::from_millis(200));
        let config: BatchProcessorConfig = serde_json::from_str(
            r#"{"send_batch_size": 10, "send_batch_max_size": 20, "send_batch_max_bytes": "4MiB", "timeout": "1s"}"#,
        )
        .unwrap();
        assert_eq!(config.send_batch_max_bytes, ByteSize(4 << 20));
        assert_eq!(config.timeout, Duration::from_secs(1));
        assert!(config.problems().is_empty());
        assert!(serde_json::from_str::<BatchProcessorConfig>(r#"{"send_batch_sise": 1}"#).is_err());
    }

    #[test]
    fn the_max_size_is_at_least_the_size() {
        let config = BatchProcessorConfig {
            send_batch_size: 100,
            send_batch_max_size: 50,
            ..BatchProcessorConfig::default()
        };
        assert_eq!(
            config.problems()[0].to_string(),
            "send_batch_max_size: 50 is less than send_batch_size (100); use 0 (no limit) or at least send_batch_size"
        );
        let unlimited = BatchProcessorConfig {
            send_batch_max_size: 0,
            ..config
        };
        assert!(unlimited.problems().is_empty());
    }
}
