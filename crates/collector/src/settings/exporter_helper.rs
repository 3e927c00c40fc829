//! The exporter helper's options, in the OpenTelemetry Collector's
//! exporterhelper shape. Every exporter's options embed one
//! [`ExporterHelperConfig`] ([`super::Options::embedded`]): its keys
//! (`sending_queue`, `retry_on_failure`, `timeout`, `dead_letter`) sit
//! beside the exporter's own.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use std::path::PathBuf;

use super::component_id::ComponentId;
use super::parts::{Embedded, Written};
use super::refs::{ExtensionRef, ExtensionRole};
use super::units::{ByteSize, Duration};
use crate::keep_unwritten;

/// How long one export attempt may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Everything the helper needs to know about one exporter.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExporterHelperConfig {
    pub sending_queue: SendingQueueConfig,
    pub retry_on_failure: RetryConfig,
    /// How long one attempt may take; 0 means no limit.
    pub timeout: Duration,
    /// A directory that requests which could not be exported are written
    /// to, one OTLP protobuf file each.
    pub dead_letter: Option<String>,
}

impl Default for ExporterHelperConfig {
    fn default() -> Self {
        Self {
            sending_queue: SendingQueueConfig::default(),
            retry_on_failure: RetryConfig::default(),
            timeout: DEFAULT_TIMEOUT,
            dead_letter: None,
        }
    }
}

/// What `offer` does when the sending queue is full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnOverflow {
    /// Drop the request being offered, counting and logging it.
    #[default]
    DropNewest,
    /// Wait for room: the pipeline stops draining, and its receivers
    /// answer "retry later" once its own queue is full.
    Block,
}

/// `sending_queue`: requests waiting for the exporter, in memory or on
/// disk, and the tasks that export them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SendingQueueKeys")]
pub struct SendingQueueConfig {
    /// Without a queue, the pipeline exports (with retries) itself, one
    /// request at a time.
    pub enabled: bool,
    /// Tasks exporting at once.
    pub num_consumers: usize,
    /// Requests held, waiting or being exported.
    pub queue_size: usize,
    /// Bytes held: decoded memory in memory, stored bytes on disk.
    pub max_bytes: ByteSize,
    pub on_overflow: OnOverflow,
    /// Where the persistent queue is kept; in memory without it.
    pub storage: Option<QueueStorage>,
}

/// `sending_queue.storage`: a directory, or a storage extension's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueStorage {
    /// `storage: DIR`: the queue is kept in DIR/EXPORTER_ID.
    Directory(String),
    /// `storage: file_storage/NAME`: the extension's; the service replaces
    /// it with [`Self::Exact`] before the queue opens.
    Extension(ComponentId),
    /// The queue's own directory, as a storage extension gave it.
    Exact(PathBuf),
}

impl QueueStorage {
    /// A component id whose type ends in `storage` (`file_storage`,
    /// `file_storage/NAME`) names an extension; anything else is a
    /// directory.
    fn parse(text: String) -> Self {
        match text.parse::<ComponentId>() {
            Ok(id) if id.kind.ends_with("storage") => Self::Extension(id),
            _ => Self::Directory(text),
        }
    }
}

impl Embedded for ExporterHelperConfig {
    fn keep_unwritten(&mut self, defaults: Self, written: &Written) {
        keep_unwritten!(self, defaults, written;
            sending_queue, retry_on_failure, timeout, dead_letter);
    }
}

/// Options that embed the exporter helper's: every exporter's.
pub trait EmbedsHelper: super::Options + serde::de::DeserializeOwned + Default {
    fn helper(&self) -> &ExporterHelperConfig;
}

impl ExporterHelperConfig {
    /// The helper's options with a different default `timeout`.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            timeout,
            ..Self::default()
        }
    }

    /// The extensions the helper's options name.
    pub fn extension_refs(&self) -> Vec<ExtensionRef> {
        match &self.sending_queue.storage {
            Some(QueueStorage::Extension(id)) => vec![ExtensionRef {
                key: "sending_queue.storage".to_owned(),
                id: id.clone(),
                role: ExtensionRole::Storage,
            }],
            _ => Vec::new(),
        }
    }
}

impl Default for SendingQueueConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            num_consumers: 10,
            queue_size: 1000,
            max_bytes: ByteSize(64 << 20),
            on_overflow: OnOverflow::DropNewest,
            storage: None,
        }
    }
}

/// The keys as written; `block_on_overflow` is the Collector's older
/// spelling of `on_overflow: block`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SendingQueueKeys {
    enabled: bool,
    #[serde(deserialize_with = "at_least_one")]
    num_consumers: usize,
    #[serde(deserialize_with = "at_least_one")]
    queue_size: usize,
    max_bytes: ByteSize,
    on_overflow: Option<OnOverflow>,
    block_on_overflow: Option<bool>,
    #[serde(deserialize_with = "directory")]
    storage: Option<QueueStorage>,
}

impl Default for SendingQueueKeys {
    fn default() -> Self {
        let defaults = SendingQueueConfig::default();
        Self {
            enabled: defaults.enabled,
            num_consumers: defaults.num_consumers,
            queue_size: defaults.queue_size,
            max_bytes: defaults.max_bytes,
            on_overflow: None,
            block_on_overflow: None,
            storage: None,
        }
    }
}

/// `on_overflow` and the older `block_on_overflow` both set, differently.
#[derive(Debug, thiserror::Error)]
#[error("on_overflow and block_on_overflow disagree; write on_overflow only")]
pub struct OverflowConflict;

impl TryFrom<SendingQueueKeys> for SendingQueueConfig {
    type Error = OverflowConflict;

    fn try_from(keys: SendingQueueKeys) -> Result<Self, OverflowConflict> {
        let from_bool = keys.block_on_overflow.map(|block| {
            if block {
                OnOverflow::Block
            } else {
                OnOverflow::DropNewest
            }
        });
        let on_overflow = match (keys.on_overflow, from_bool) {
            (Some(a), Some(b)) if a != b => return Err(OverflowConflict),
            (Some(chosen), _) | (None, Some(chosen)) => chosen,
            (None, None) => OnOverflow::default(),
        };
        Ok(Self {
            enabled: keys.enabled,
            num_consumers: keys.num_consumers,
            queue_size: keys.queue_size,
            max_bytes: keys.max_bytes,
            on_overflow,
            storage: keys.storage,
        })
    }
}

/// `retry_on_failure`: exponential backoff with jitter for retryable
/// failures.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    pub enabled: bool,
    /// The wait after the first failure.
    #[serde(deserialize_with = "positive_duration")]
    pub initial_interval: Duration,
    /// The longest wait between attempts (before jitter).
    #[serde(deserialize_with = "positive_duration")]
    pub max_interval: Duration,
    /// Give up once this much time has passed since the first attempt;
    /// 0 retries forever.
    pub max_elapsed_time: Duration,
    /// Each wait is the previous one times this.
    #[serde(deserialize_with = "multiplier")]
    pub multiplier: f64,
    /// Each wait is drawn from `wait × (1 ± randomization_factor)`;
    /// `jitter` is accepted as its name too.
    #[serde(alias = "jitter", deserialize_with = "fraction")]
    pub randomization_factor: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            initial_interval: Duration::from_secs(5),
            max_interval: Duration::from_secs(30),
            max_elapsed_time: Duration::from_secs(300),
            multiplier: 1.5,
            randomization_factor: 0.5,
        }
    }
}

fn at_least_one<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    match usize::deserialize(deserializer)? {
        0 => Err(D::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

fn positive_duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let duration = Duration::deserialize(deserializer)?;
    if duration.0.is_zero() {
        Err(D::Error::custom("must be longer than 0"))
    } else {
        Ok(duration)
    }
}

fn multiplier<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.is_finite() && value >= 1.0 {
        Ok(value)
    } else {
        Err(D::Error::custom(format!("{value} is below 1")))
    }
}

fn fraction<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(D::Error::custom(format!("{value} is not between 0 and 1")))
    }
}

fn directory<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<QueueStorage>, D::Error> {
    let path = String::deserialize(deserializer)?;
    if path.trim().is_empty() {
        Err(D::Error::custom(
            "is empty; name a directory or a storage extension, or leave the key out",
        ))
    } else {
        Ok(Some(QueueStorage::parse(path)))
    }
}
