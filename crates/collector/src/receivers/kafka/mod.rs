//! The Kafka receiver: reads `ExportProfilesServiceRequest` messages (OTLP
//! protobuf or OTLP/JSON), as the OpenTelemetry Collector's `kafka`
//! exporter writes them, in a consumer group through librdkafka. At least
//! once: an offset is committed only after every pipeline took its
//! message (consume.rs).

pub mod config;
mod consume;
mod factory;

pub use factory::KafkaReceiverFactory;
