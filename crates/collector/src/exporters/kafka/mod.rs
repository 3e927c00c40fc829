//! The Kafka exporter: each batch as `ExportProfilesServiceRequest`
//! messages (OTLP protobuf or OTLP/JSON) on a topic, as the OpenTelemetry
//! Collector's `kafka` exporter writes them, through librdkafka. An export
//! succeeds when the brokers acknowledged every message of the batch (as
//! `required_acks` asks); a failed one is retried whole, so a retry may
//! write some messages twice (at least once).

pub mod config;
mod factory;
mod messages;

pub use factory::KafkaExporterFactory;

use std::sync::Arc;
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};

use super::{ExportCause, ExportError};
use crate::client::kafka::{client_config, millis, LoggingContext};
use crate::pipeline::{Profiles, Sent};
use config::KafkaExporterConfig;
use messages::{plan, Layout, Planned};

/// librdkafka's own queue of messages not yet acknowledged, in KiB. The
/// sending queue bounds what is handed to it; this only caps the worst case.
const PRODUCER_QUEUE_KIB: usize = 256 * 1024;

/// How long to wait before offering a message again to librdkafka's full
/// queue.
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(10);

/// Why the exporter cannot start.
#[derive(Debug, thiserror::Error)]
#[error("cannot create the Kafka producer: {0}")]
pub struct ProducerError(KafkaError);

/// Why a message was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("topic {topic}: {error}{}", client_error.as_ref().map(|e| format!("; the client's last error: {e}")).unwrap_or_default())]
    Failed {
        topic: String,
        error: KafkaError,
        /// What the client last reported (a refused login, say).
        client_error: Option<String>,
    },
    #[error("topic {topic}: the producer dropped the message")]
    Dropped { topic: String },
    #[error("{profiles} profiles are each larger than producer.max_message_bytes ({limit} bytes) on their own")]
    TooLarge { profiles: usize, limit: usize },
}

/// Produces batches to Kafka. Safe to share between tasks.
pub struct KafkaExporter {
    producer: FutureProducer<LoggingContext>,
    /// The producer's context, for its last client error.
    client: LoggingContext,
    layout: Arc<Layout>,
    brokers: String,
}

impl std::fmt::Debug for KafkaExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaExporter")
            .field("brokers", &self.brokers)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl KafkaExporter {
    /// Creates the producer; librdkafka connects in the background.
    pub fn new(id: &str, config: &KafkaExporterConfig) -> Result<Self, ProducerError> {
        let producer_settings = &config.producer;
        let context = LoggingContext::new(id);
        let mut properties = client_config(id, &config.client);
        // librdkafka's limit covers the record's framing as well as the value.
        let record_limit = producer_settings.max_message_bytes.saturating_add(1024);
        properties
            .set("message.max.bytes", record_limit.to_string())
            .set("acks", producer_settings.required_acks.value())
            .set("compression.type", producer_settings.compression.name())
            .set("linger.ms", millis(producer_settings.linger.0).to_string())
            .set(
                "allow.auto.create.topics",
                producer_settings.allow_auto_topic_creation.to_string(),
            )
            .set("queue.buffering.max.kbytes", PRODUCER_QUEUE_KIB.to_string())
            .set(
                "message.timeout.ms",
                delivery_timeout(config.helper.timeout.0)
                    .as_millis()
                    .to_string(),
            );
        if let Some(level) = producer_settings.compression_params.level {
            properties.set("compression.level", level.to_string());
        }
        if producer_settings.flush_max_messages > 0 {
            properties.set(
                "batch.num.messages",
                producer_settings.flush_max_messages.to_string(),
            );
        }
        let producer = properties
            .create_with_context(context.clone())
            .map_err(ProducerError)?;
        let (topic, encoding) = config.signal();
        Ok(Self {
            producer,
            client: context,
            layout: Arc::new(Layout {
                topic,
                topic_from_attribute: Some(config.topic_from_attribute.clone())
                    .filter(|name| !name.is_empty()),
                by_resource: config.partition_profiles_by_resource_attributes,
                encoding,
                max_message_bytes: producer_settings.max_message_bytes,
            }),
            brokers: config.client.brokers.join(","),
        })
    }

    /// Where it writes, for the start-up message.
    pub fn describe(&self) -> String {
        format!(
            "topic {} ({}) on {}",
            self.layout.topic,
            self.layout.encoding.name(),
            self.brokers
        )
    }

    /// One export attempt: every message produced, then every delivery
    /// report awaited.
    pub async fn export(&self, batch: Arc<Profiles>) -> Result<Sent, ExportError> {
        let layout = Arc::clone(&self.layout);
        let planned = {
            let batch = Arc::clone(&batch);
            tokio::task::spawn_blocking(move || plan(&batch, &layout))
                .await
                .map_err(|error| {
                    ExportError::retryable(ExportCause::TaskFailed {
                        task: "splitting the batch into messages",
                        error,
                    })
                })?
        };
        let Planned {
            messages,
            too_large,
            sent,
        } = planned;
        let mut deliveries = Vec::with_capacity(messages.len());
        for message in &messages {
            deliveries.push((&message.topic, self.produce(message).await?));
        }
        let mut failure = None;
        for (topic, delivery) in deliveries {
            let error = match delivery.await {
                Ok(Ok(_)) => continue,
                Ok(Err((error, _))) => DeliveryError::Failed {
                    topic: topic.clone(),
                    error,
                    client_error: self.client.last_error(),
                },
                Err(_) => DeliveryError::Dropped {
                    topic: topic.clone(),
                },
            };
            failure.get_or_insert(error);
        }
        if let Some(error) = failure {
            return Err(classify(error));
        }
        self.client.forget_last_error();
        match too_large {
            None => Ok(sent),
            Some(request) => {
                let unsent = Profiles::new(request, 0);
                let cause = DeliveryError::TooLarge {
                    profiles: unsent.profile_count(),
                    limit: self.layout.max_message_bytes,
                };
                Err(ExportError::PartlyUndeliverable {
                    unsent: Arc::new(unsent),
                    cause: ExportCause::exporter("kafka", cause),
                })
            }
        }
    }

    /// Hands one message to librdkafka, waiting while its queue is full.
    async fn produce(&self, message: &messages::Message) -> Result<DeliveryFuture, ExportError> {
        loop {
            let mut record = FutureRecord::to(&message.topic).payload(&message.value[..]);
            if let Some(key) = &message.key {
                record = record.key(&key[..]);
            }
            match self.producer.send_result(record) {
                Ok(delivery) => return Ok(delivery),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    tokio::time::sleep(QUEUE_FULL_PAUSE).await;
                }
                Err((error, _)) => {
                    return Err(classify(DeliveryError::Failed {
                        topic: message.topic.clone(),
                        error,
                        client_error: self.client.last_error(),
                    }))
                }
            }
        }
    }
}

/// How long librdkafka may hold a message: three quarters of an
/// attempt's `timeout` (librdkafka looks for expired messages about once
/// a second), so that the attempt ends with librdkafka's report (and the
/// client's last error) rather than a bare timeout. 0: no limit.
fn delivery_timeout(attempt: Duration) -> Duration {
    attempt.saturating_sub(attempt / 4)
}

/// Errors that a retry cannot mend are permanent; the rest (brokers down,
/// leaders moving, timeouts) are retryable.
fn classify(error: DeliveryError) -> ExportError {
    let permanent = match &error {
        DeliveryError::Failed { error, .. } => matches!(
            error.rdkafka_error_code(),
            Some(
                RDKafkaErrorCode::MessageSizeTooLarge
                    | RDKafkaErrorCode::InvalidMessageSize
                    | RDKafkaErrorCode::InvalidTopic
                    | RDKafkaErrorCode::TopicAuthorizationFailed
                    | RDKafkaErrorCode::ClusterAuthorizationFailed
            )
        ),
        DeliveryError::Dropped { .. } => false,
        DeliveryError::TooLarge { .. } => true,
    };
    let cause = ExportCause::exporter("kafka", error);
    if permanent {
        ExportError::Permanent(cause)
    } else {
        ExportError::retryable(cause)
    }
}
