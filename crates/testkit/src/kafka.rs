//! A real Kafka-protocol broker for tests, and an independent Kafka client
//! on the other side of it.
//!
//! The broker is tansu 0.6.0 (Apache-2.0, a Kafka-compatible broker in one
//! binary), run on a loopback port with memory or SQLite storage
//! ([`Storage`]). The client is Python's `confluent-kafka` (which bundles
//! librdkafka 2.x), with `opentelemetry-proto` decoding what it reads as
//! the OpenTelemetry Collector's `kafka` exporter and receiver carry it:
//! one `ExportProfilesServiceRequest` per message, as protobuf or
//! OTLP/JSON.
//!
//! tansu 0.6.0 behaves like Kafka for producing (`acks=all`, idempotence,
//! gzip, lz4 and zstd, and snappy with memory storage), reading, and
//! consumer groups (joins, clean leaves, rebalances, commits), with these
//! differences:
//! - memory storage keeps record batches whole and cannot fetch from an
//!   offset inside one: a consumer starting (or resuming from a committed
//!   offset) in the middle of a batch gets nothing until a later batch
//!   arrives, then skips the rest of the batch and may read the later one
//!   twice; and its high watermark (the `latest` offset) is the last
//!   batch's base offset + 1. With memory storage, producers should send
//!   one record per batch (librdkafka's `batch.num.messages=1`, as
//!   [`produce`] does), so that every offset a consumer commits starts a
//!   batch. SQLite storage has neither problem;
//! - SQLite storage accepts snappy-compressed batches but then fails every
//!   fetch of their partition;
//! - a member that dies without leaving its group (SIGKILL) is dropped
//!   after its session timeout and the group rebalances, but the
//!   survivors are not given its partitions: they stay unread until
//!   another member joins (a restarted consumer does) or one leaves
//!   cleanly;
//! - no automatic topic creation: producing to a topic that does not exist
//!   waits (and fails after librdkafka's `message.timeout.ms`), so create
//!   topics first with [`Broker::create_topic`];
//! - no limit on a message's size (Kafka's default is about 1 MB);
//! - a stopped memory broker loses its topics, messages, committed
//!   offsets and producer ids (see [`Broker::restart`]).
//!
//! For SASL and TLS, [`SecureBroker`] runs tansu on SQLite storage behind
//! a TLS terminator; its module says what tansu supports and why.

mod broker;
mod client;
mod secure;
mod tls_front;

pub use broker::{Broker, Storage, TANSU_VAR};
pub use client::{
    consume, consume_with, decode, produce, produce_with, ClientSecurity, ConsumedMessage,
    DecodedRequest, Delivered, Encoding, NotDecoded, Record, SaslLogin,
};
pub use secure::{BrokerSecurity, BrokerTls, SecureBroker};
