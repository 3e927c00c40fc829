use serde::Deserialize;

use crate::exporters::helper::config::{
    ExporterHelperConfig, RetryConfig, SendingQueueConfig, DEFAULT_TIMEOUT,
};
use crate::settings::units::Duration;
use crate::settings::Options;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// One line per request.
    #[default]
    Basic,
    /// Also one line per profile.
    Normal,
    /// Also every sample.
    Detailed,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugExporterConfig {
    pub verbosity: Verbosity,
    pub sending_queue: SendingQueueConfig,
    pub retry_on_failure: RetryConfig,
    /// How long logging one request may take; 0 means no limit.
    pub timeout: Duration,
    pub dead_letter: Option<String>,
}

impl Default for DebugExporterConfig {
    fn default() -> Self {
        Self {
            verbosity: Verbosity::default(),
            sending_queue: SendingQueueConfig::default(),
            retry_on_failure: RetryConfig::default(),
            timeout: DEFAULT_TIMEOUT,
            dead_letter: None,
        }
    }
}

impl DebugExporterConfig {
    pub fn helper(&self) -> ExporterHelperConfig {
        ExporterHelperConfig {
            sending_queue: self.sending_queue.clone(),
            retry_on_failure: self.retry_on_failure.clone(),
            timeout: self.timeout,
            dead_letter: self.dead_letter.clone(),
        }
    }
}

impl Options for DebugExporterConfig {}
