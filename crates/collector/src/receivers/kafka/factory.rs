//! `receivers: kafka:` in the registry.

use std::path::PathBuf;
use std::sync::Arc;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;

use super::config::KafkaReceiverConfig;
use super::consume::{ConsumerLoop, GroupContext, Revoked};
use crate::client::kafka::{client_config, millis, LoggingContext};
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::pipeline::wanted;
use crate::telemetry::ReceiverMetrics;

/// librdkafka's queue of fetched messages not yet consumed, in KiB: what
/// a paused consumer may still hold.
const FETCHED_QUEUE_KIB: u32 = 16 * 1024;

pub struct KafkaReceiverFactory;

/// Why the consumer cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    #[error("cannot create the Kafka consumer: {0}")]
    Create(KafkaError),
    #[error("cannot subscribe to topic {topic}: {error}")]
    Subscribe { topic: String, error: KafkaError },
}

impl ReceiverFactory for KafkaReceiverFactory {
    const KIND: &'static str = "kafka";
    type Options = KafkaReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a KafkaReceiverConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        Box::pin(async move {
            let name = context.id;
            let (topic, encoding) = options.signal();
            let revoked = Arc::new(Revoked::default());
            let consumer = consumer(name, options, Arc::clone(&revoked))
                .map_err(|error| StartError::receiver(name, error))?;
            consumer.subscribe(&[topic.as_str()]).map_err(|error| {
                StartError::receiver(
                    name,
                    ConsumerError::Subscribe {
                        topic: topic.clone(),
                        error,
                    },
                )
            })?;
            let consuming = ConsumerLoop {
                consumer,
                revoked,
                encoding,
                wanted: wanted(&context.pipelines),
                pipelines: context.pipelines,
                metrics: ReceiverMetrics::new(context.metrics, name, "kafka"),
                dead_letter: options.dead_letter.as_ref().map(PathBuf::from),
                commit_each: !options.autocommit.enable,
                runtime: tokio::runtime::Handle::current(),
                stopped: context.stopped,
            };
            let task = tokio::task::spawn_blocking(move || consuming.run());
            Ok(StartedReceiver {
                tasks: vec![task],
                listening: Vec::new(),
                watching: vec![format!(
                    "{name} kafka receiver consuming topic {topic} ({}) in group {} from {}",
                    encoding.name(),
                    options.group_id,
                    options.client.brokers.join(",")
                )],
            })
        })
    }
}

fn consumer(
    id: &str,
    options: &KafkaReceiverConfig,
    revoked: Arc<Revoked>,
) -> Result<BaseConsumer<GroupContext>, ConsumerError> {
    let mut properties = client_config(id, &options.client);
    properties
        .set("group.id", &options.group_id)
        .set("enable.auto.commit", options.autocommit.enable.to_string())
        .set(
            "auto.commit.interval.ms",
            millis(options.autocommit.interval.0).to_string(),
        )
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", options.initial_offset.name())
        .set(
            "session.timeout.ms",
            millis(options.session_timeout.0).to_string(),
        )
        .set(
            "heartbeat.interval.ms",
            millis(options.heartbeat_interval.0).to_string(),
        )
        .set(
            "partition.assignment.strategy",
            options.group_rebalance_strategy.name(),
        )
        .set("fetch.min.bytes", options.min_fetch_size.max(1).to_string())
        .set(
            "fetch.wait.max.ms",
            millis(options.max_fetch_wait.0).to_string(),
        )
        .set(
            "max.partition.fetch.bytes",
            options.max_partition_fetch_size.max(1).to_string(),
        )
        .set("queued.max.messages.kbytes", FETCHED_QUEUE_KIB.to_string());
    if options.max_fetch_size > 0 {
        properties
            .set("fetch.max.bytes", options.max_fetch_size.to_string())
            .set(
                "receive.message.max.bytes",
                options.max_fetch_size.saturating_add(512).to_string(),
            );
    }
    if !options.group_instance_id.is_empty() {
        properties.set("group.instance.id", &options.group_instance_id);
    }
    properties
        .create_with_context(GroupContext {
            logging: LoggingContext::new(id),
            revoked,
        })
        .map_err(ConsumerError::Create)
}
