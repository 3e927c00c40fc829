//! A real Kafka-protocol broker for tests, and an independent Kafka client
//! on the other side of it.
//!
//! The broker is tansu 0.6.0 (Apache-2.0, a Kafka-compatible broker in one
//! binary), run on a loopback port with in-memory storage. The client is
//! Python's `confluent-kafka` (which bundles librdkafka 2.x, the library
//! the OpenTelemetry Collector's peers and most Kafka users run), with
//! `opentelemetry-proto` decoding what it reads as the Collector's
//! `kafka` exporter and receiver carry it: one `ExportProfilesServiceRequest`
//! per message, as protobuf or OTLP/JSON.
//!
//! tansu 0.6.0 behaves like Kafka for producing (`acks=all`, idempotence,
//! gzip, snappy, lz4 and zstd), reading, and consumer groups (joins,
//! rebalances, commits), with these differences:
//! - its memory storage keeps record batches whole and cannot fetch from
//!   an offset inside one: a consumer starting (or resuming from a
//!   committed offset) in the middle of a batch gets nothing until a later
//!   batch arrives, then skips the rest of the batch and may read the later
//!   one twice. Producers in tests should send one record per batch
//!   (librdkafka's `batch.num.messages=1`, as [`produce`] does), so that
//!   every offset a consumer commits starts a batch;
//! - for the same reason the high watermark (the `latest` offset of
//!   ListOffsets) is the last batch's base offset + 1, wrong for batches of
//!   several records;
//! - no automatic topic creation: producing to a topic that does not exist
//!   waits (and fails after librdkafka's `message.timeout.ms`), so create
//!   topics first with [`Broker::create_topic`];
//! - no limit on a message's size (Kafka's default is about 1 MB);
//! - a stopped memory broker loses its topics, messages and committed
//!   offsets (see [`Broker::restart`]).

mod broker;
mod client;

pub use broker::Broker;
pub use broker::TANSU_VAR;
pub use client::{
    consume, decode, produce, ConsumedMessage, DecodedRequest, Delivered, Encoding, Record,
};
