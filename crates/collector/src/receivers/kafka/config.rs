use serde::Deserialize;

use crate::settings::kafka::{signal_choice, KafkaClientSettings, MessageEncoding, ProfilesSignal};
use crate::settings::units::Duration;
use crate::settings::{EmbeddedPart, Options, Problem};

/// `receivers: kafka:`: one `ExportProfilesServiceRequest` per message,
/// read in a consumer group.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaReceiverConfig {
    pub profiles: ProfilesSignal,
    /// The topic when `profiles.topic` is not written (default `otlp_profiles`).
    pub topic: Option<String>,
    /// The encoding when `profiles.encoding` is not written.
    pub encoding: Option<MessageEncoding>,
    pub group_id: String,
    /// A static group member id (librdkafka's `group.instance.id`).
    pub group_instance_id: String,
    /// Where a group without committed offsets starts.
    pub initial_offset: InitialOffset,
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub group_rebalance_strategy: RebalanceStrategy,
    pub autocommit: AutoCommit,
    /// librdkafka's `fetch.min.bytes`.
    pub min_fetch_size: u32,
    /// Accepted for the Collector's configurations; librdkafka sizes its
    /// fetches itself.
    pub default_fetch_size: u32,
    /// librdkafka's `fetch.max.bytes`; 0: 50 MiB.
    pub max_fetch_size: u32,
    /// librdkafka's `fetch.wait.max.ms`.
    pub max_fetch_wait: Duration,
    /// librdkafka's `max.partition.fetch.bytes`.
    pub max_partition_fetch_size: u32,
    /// Where messages that cannot be decoded or validated are written,
    /// one file each, before their offsets are committed.
    pub dead_letter: Option<String>,
    /// `brokers`, `client_id`, `tls`, `auth` and `metadata`, whose keys
    /// sit beside the others.
    #[serde(skip)]
    pub client: KafkaClientSettings,
}

impl Default for KafkaReceiverConfig {
    fn default() -> Self {
        Self {
            profiles: ProfilesSignal::default(),
            topic: None,
            encoding: None,
            group_id: "otel-collector".to_owned(),
            group_instance_id: String::new(),
            initial_offset: InitialOffset::Latest,
            session_timeout: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(3),
            group_rebalance_strategy: RebalanceStrategy::Range,
            autocommit: AutoCommit::default(),
            min_fetch_size: 1,
            default_fetch_size: 1_048_576,
            max_fetch_size: 0,
            max_fetch_wait: Duration(std::time::Duration::from_millis(250)),
            max_partition_fetch_size: 1_048_576,
            dead_letter: None,
            client: KafkaClientSettings::default(),
        }
    }
}

impl KafkaReceiverConfig {
    /// The topic and encoding, from `profiles` or the top-level keys.
    pub fn signal(&self) -> (String, MessageEncoding) {
        signal_choice(&self.profiles, self.topic.as_ref(), self.encoding)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialOffset {
    #[default]
    Latest,
    Earliest,
}

impl InitialOffset {
    /// librdkafka's `auto.offset.reset`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Latest => "latest",
            Self::Earliest => "earliest",
        }
    }
}

/// How partitions are spread over the group's members.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RebalanceStrategy {
    #[default]
    Range,
    Roundrobin,
}

impl RebalanceStrategy {
    /// librdkafka's `partition.assignment.strategy`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Range => "range",
            Self::Roundrobin => "roundrobin",
        }
    }
}

/// `autocommit:`. Offsets are committed only for messages the pipelines
/// accepted, in the background every `interval` when `enable`, else
/// after each such message.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoCommit {
    pub enable: bool,
    pub interval: Duration,
}

impl Default for AutoCommit {
    fn default() -> Self {
        Self {
            enable: true,
            interval: Duration::from_secs(1),
        }
    }
}

impl Options for KafkaReceiverConfig {
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client]
    }

    fn problems(&self) -> Vec<Problem> {
        let mut problems = self.client.problems();
        if self.signal().0.trim().is_empty() {
            problems.push(Problem::new("profiles.topic", "is empty; name a topic"));
        }
        if self.group_id.trim().is_empty() {
            problems.push(Problem::new(
                "group_id",
                "is empty; name the consumer group",
            ));
        }
        if self.heartbeat_interval.0 >= self.session_timeout.0 {
            problems.push(Problem::new(
                "heartbeat_interval",
                "must be shorter than session_timeout",
            ));
        }
        if self
            .dead_letter
            .as_deref()
            .is_some_and(|dir| dir.trim().is_empty())
        {
            problems.push(Problem::new("dead_letter", "is empty; name a directory"));
        }
        problems
    }
}
