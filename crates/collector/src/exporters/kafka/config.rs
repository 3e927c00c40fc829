use serde::{Deserialize, Deserializer};

use crate::exporters::helper::config::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::kafka::{signal_choice, KafkaClientSettings, MessageEncoding, ProfilesSignal};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, Problem};

/// `exporters: kafka:`: one `ExportProfilesServiceRequest` per message.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaExporterConfig {
    pub profiles: ProfilesSignal,
    /// The topic when `profiles.topic` is not written (default `otlp_profiles`).
    pub topic: Option<String>,
    /// The encoding when `profiles.encoding` is not written.
    pub encoding: Option<MessageEncoding>,
    /// A resource attribute whose value names the topic of that
    /// resource's profiles; resources without it go to the topic.
    pub topic_from_attribute: String,
    /// One message per resource, keyed by a hash of its attributes, so
    /// that a service's profiles stay on one partition, in order.
    pub partition_profiles_by_resource_attributes: bool,
    pub producer: ProducerSettings,
    /// `brokers`, `client_id`, `tls`, `auth` and `metadata`, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub client: KafkaClientSettings,
    /// The sending queue, retries, timeout and dead letters.
    #[serde(skip)]
    pub helper: ExporterHelperConfig,
}

impl KafkaExporterConfig {
    /// The topic and encoding, from `profiles` or the top-level keys.
    pub fn signal(&self) -> (String, MessageEncoding) {
        signal_choice(&self.profiles, self.topic.as_ref(), self.encoding)
    }
}

/// `producer:`, with the Collector's names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProducerSettings {
    /// The largest message value; larger requests are split.
    pub max_message_bytes: usize,
    pub required_acks: RequiredAcks,
    pub compression: KafkaCompression,
    pub compression_params: CompressionParams,
    /// The most messages in one produce request; 0: librdkafka's default.
    pub flush_max_messages: usize,
    /// How long messages wait to be sent together (librdkafka's `linger.ms`).
    pub linger: Duration,
    pub allow_auto_topic_creation: bool,
}

impl Default for ProducerSettings {
    fn default() -> Self {
        Self {
            max_message_bytes: 1_000_000,
            required_acks: RequiredAcks::Leader,
            compression: KafkaCompression::None,
            compression_params: CompressionParams::default(),
            flush_max_messages: 0,
            linger: Duration(std::time::Duration::from_millis(5)),
            allow_auto_topic_creation: true,
        }
    }
}

/// `compression_params:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompressionParams {
    /// The codec's level; unset: the codec's default.
    pub level: Option<i32>,
}

/// Kafka's record batch compression.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KafkaCompression {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl KafkaCompression {
    /// librdkafka's `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }
}

/// `required_acks`: `0`, `1`, `-1` or `all`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequiredAcks {
    /// 0: no acknowledgement; a message counts as sent once written to the socket.
    None,
    /// 1: the partition leader wrote it.
    #[default]
    Leader,
    /// -1 or `all`: every in-sync replica has it.
    All,
}

impl RequiredAcks {
    /// librdkafka's `acks`.
    pub fn value(self) -> &'static str {
        match self {
            Self::None => "0",
            Self::Leader => "1",
            Self::All => "all",
        }
    }
}

impl<'de> Deserialize<'de> for RequiredAcks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(i64),
            Text(String),
        }
        let invalid = |shown: String| {
            serde::de::Error::custom(format!(
                "required_acks {shown} is not one of 0, 1, -1 or all"
            ))
        };
        match Written::deserialize(deserializer)? {
            Written::Number(0) => Ok(Self::None),
            Written::Number(1) => Ok(Self::Leader),
            Written::Number(-1) => Ok(Self::All),
            Written::Number(other) => Err(invalid(other.to_string())),
            Written::Text(text) => match text.trim() {
                "all" | "-1" => Ok(Self::All),
                "0" => Ok(Self::None),
                "1" => Ok(Self::Leader),
                _ => Err(invalid(format!("{text:?}"))),
            },
        }
    }
}

impl EmbedsHelper for KafkaExporterConfig {
    fn helper(&self) -> &ExporterHelperConfig {
        &self.helper
    }
}

/// Below this, a message cannot hold even a small profile.
const SMALLEST_MESSAGE: usize = 1024;

impl Options for KafkaExporterConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client, &mut self.helper]
    }

    fn problems(&self) -> Vec<Problem> {
        let mut problems = self.client.problems();
        if self.signal().0.trim().is_empty() {
            problems.push(Problem::new("profiles.topic", "is empty; name a topic"));
        }
        if self.producer.max_message_bytes < SMALLEST_MESSAGE {
            problems.push(Problem::new(
                "producer.max_message_bytes",
                format!("must be at least {SMALLEST_MESSAGE}"),
            ));
        }
        if let Some(level) = self.producer.compression_params.level {
            let range = match self.producer.compression {
                KafkaCompression::Gzip => Some(-1..=9),
                KafkaCompression::Lz4 => Some(0..=12),
                KafkaCompression::Zstd => Some(-131_072..=22),
                KafkaCompression::None | KafkaCompression::Snappy => None,
            };
            match range {
                Some(range) if !range.contains(&level) => problems.push(Problem::new(
                    "producer.compression_params.level",
                    format!(
                        "{level} is outside {}..={} for {}",
                        range.start(),
                        range.end(),
                        self.producer.compression.name()
                    ),
                )),
                None => problems.push(Problem::new(
                    "producer.compression_params.level",
                    format!("{} takes no level", self.producer.compression.name()),
                )),
                Some(_) => {}
            }
        }
        problems
    }
}
