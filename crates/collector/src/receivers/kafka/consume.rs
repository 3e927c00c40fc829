//! The consumer loop, on a thread of its own: each message is decoded,
//! validated and queued on every pipeline, and only then is its offset
//! stored for commit. While the pipelines have no room, the assigned
//! partitions are paused and the message is offered again with backoff;
//! polling goes on, so the consumer stays in its group. A message that
//! can never be used is logged, counted, written to the dead-letter
//! folder when there is one, and its offset committed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::message::Message as _;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tokio::sync::watch;

use profbridge_translate::decode_request_reusing;
use profbridge_translate::json::request_from_json;

use crate::client::kafka::LoggingContext;
use crate::pipeline::{pooled_request, PipelineHandle, Received, Wanted};
use crate::protocol::compression::Compression;
use crate::receivers::intake::{
    admit, any_full, intake, settle, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
use crate::settings::kafka::MessageEncoding;
use crate::telemetry::{ReceiverMetrics, RefusedReason};

/// How long one poll waits for a message.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How long to wait before offering a message again to full pipelines,
/// at first and at most.
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Partitions taken from this consumer by a rebalance, which its loop has
/// not seen yet: messages of theirs that it holds are not its to deliver.
#[derive(Debug, Default)]
pub(super) struct Revoked(Mutex<Vec<(String, i32)>>);

impl Revoked {
    fn take(&self) -> Vec<(String, i32)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The consumer's context: librdkafka's log, and rebalances.
pub(super) struct GroupContext {
    pub logging: LoggingContext,
    pub revoked: Arc<Revoked>,
}

impl ClientContext for GroupContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, facility: &str, message: &str) {
        self.logging.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.logging.error(error, reason);
    }
}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let receiver = self.logging.component.as_str();
        match rebalance {
            Rebalance::Revoke(partitions) => {
                let taken = partitions
                    .elements()
                    .iter()
                    .map(|p| (p.topic().to_owned(), p.partition()))
                    .collect::<Vec<_>>();
                tracing::info!(receiver, partitions = ?taken, "kafka partitions revoked");
                self.revoked
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend(taken);
            }
            Rebalance::Assign(partitions) => {
                let given = partitions
                    .elements()
                    .iter()
                    .map(|p| p.partition())
                    .collect::<Vec<_>>();
                tracing::info!(receiver, partitions = ?given, "kafka partitions assigned");
            }
            Rebalance::Error(error) => {
                tracing::warn!(receiver, %error, "kafka rebalance failed");
            }
        }
    }

    fn commit_callback(&self, result: rdkafka::error::KafkaResult<()>, _: &TopicPartitionList) {
        if let Err(error) = result {
            if !matches!(
                error.rdkafka_error_code(),
                Some(rdkafka::types::RDKafkaErrorCode::NoOffset)
            ) {
                tracing::warn!(receiver = %self.logging.component, %error, "kafka offset commit failed");
            }
        }
    }
}

/// One message taken from the topic, not yet delivered.
#[derive(Debug)]
struct Held {
    topic: String,
    partition: i32,
    offset: i64,
    value: Bytes,
}

/// How offering a message went.
enum Offered {
    /// Queued on every pipeline, or never usable (and dealt with).
    Done,
    /// The pipelines have no room now; offer it again later.
    Again,
}

/// The consumer and where its messages go.
pub(super) struct ConsumerLoop {
    pub consumer: BaseConsumer<GroupContext>,
    pub revoked: Arc<Revoked>,
    pub encoding: MessageEncoding,
    pub pipelines: Arc<[PipelineHandle]>,
    pub wanted: Wanted,
    pub metrics: ReceiverMetrics,
    pub dead_letter: Option<PathBuf>,
    /// Commit after each message, rather than in the background.
    pub commit_each: bool,
    pub runtime: tokio::runtime::Handle,
    pub stopped: watch::Receiver<bool>,
}

impl ConsumerLoop {
    /// Consumes until the collector stops; then commits what was
    /// delivered and leaves the group.
    pub fn run(self) {
        let mut backlog: VecDeque<Held> = VecDeque::new();
        let mut paused = false;
        let mut pause = FIRST_PAUSE;
        while !*self.stopped.borrow() {
            let Some(front) = backlog.front() else {
                self.poll_into(&mut backlog, POLL_TIMEOUT);
                continue;
            };
            match self.offer(front) {
                Offered::Done => {
                    if let Some(done) = backlog.pop_front() {
                        self.store(&done);
                    }
                    pause = FIRST_PAUSE;
                    if paused && backlog.is_empty() {
                        paused = false;
                        self.set_paused(false);
                    }
                }
                Offered::Again => {
                    if !paused {
                        paused = true;
                        tracing::warn!(
                            receiver = %self.metrics.receiver,
                            "kafka consumption paused: a message waits for room in the pipelines (or for its dead-letter file)"
                        );
                    }
                    // A rebalance may have assigned partitions since.
                    self.set_paused(true);
                    self.poll_into(&mut backlog, pause);
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        }
        if let Err(error) = self.consumer.commit_consumer_state(CommitMode::Sync) {
            if !matches!(
                error.rdkafka_error_code(),
                Some(rdkafka::types::RDKafkaErrorCode::NoOffset)
            ) {
                tracing::warn!(receiver = %self.metrics.receiver, %error, "cannot commit kafka offsets at shutdown");
            }
        }
    }

    /// Polls once, adding what arrives to `backlog`, and drops held
    /// messages of partitions a rebalance took away.
    fn poll_into(&self, backlog: &mut VecDeque<Held>, timeout: Duration) {
        match self.consumer.poll(timeout) {
            None => {}
            Some(Ok(message)) => backlog.push_back(Held {
                topic: message.topic().to_owned(),
                partition: message.partition(),
                offset: message.offset(),
                value: Bytes::copy_from_slice(message.payload().unwrap_or_default()),
            }),
            Some(Err(error)) => {
                tracing::warn!(receiver = %self.metrics.receiver, %error, "kafka consumer error");
                self.metrics
                    .note_error(&format!("kafka consumer error: {error}"));
            }
        }
        let revoked = self.revoked.take();
        if !revoked.is_empty() {
            backlog.retain(|held| {
                !revoked
                    .iter()
                    .any(|(topic, partition)| *topic == held.topic && *partition == held.partition)
            });
        }
    }

    fn set_paused(&self, pause: bool) {
        let Ok(assignment) = self.consumer.assignment() else {
            return;
        };
        let done = if pause {
            self.consumer.pause(&assignment)
        } else {
            self.consumer.resume(&assignment)
        };
        if let Err(error) = done {
            tracing::warn!(receiver = %self.metrics.receiver, %error, pause, "cannot pause or resume kafka partitions");
        } else if !pause {
            tracing::info!(receiver = %self.metrics.receiver, "kafka consumption resumed");
        }
    }

    /// Stores the offset after `done` for commit, committing it now when
    /// commits are not automatic. A partition revoked meanwhile refuses.
    fn store(&self, done: &Held) {
        let stored = if self.commit_each {
            let mut next = TopicPartitionList::new();
            next.add_partition_offset(&done.topic, done.partition, Offset::Offset(done.offset + 1))
                .and_then(|()| self.consumer.commit(&next, CommitMode::Async))
        } else {
            self.consumer
                .store_offset(&done.topic, done.partition, done.offset)
        };
        if let Err(error) = stored {
            tracing::warn!(
                receiver = %self.metrics.receiver,
                topic = done.topic,
                partition = done.partition,
                offset = done.offset,
                %error,
                "cannot store a kafka offset; the message may be consumed again"
            );
        }
    }

    fn offer(&self, held: &Held) -> Offered {
        let per_byte = match self.encoding {
            MessageEncoding::OtlpProto => DECODED_BYTES_PER_PROTOBUF_BYTE,
            MessageEncoding::OtlpJson => 1,
        };
        // Not counted as a refusal: the message waits, nothing is refused.
        if any_full(&self.pipelines) {
            return Offered::Again;
        }
        let Some(admission) = admit(
            &self.pipelines,
            held.value.len().saturating_mul(per_byte),
            &self.metrics,
        ) else {
            return Offered::Again;
        };
        let decoded = match self.encoding {
            MessageEncoding::OtlpProto => decode_request_reusing(
                &held.value,
                pooled_request(&self.pipelines, held.value.len()),
            )
            .map_err(|error| format!("protobuf: {error}")),
            MessageEncoding::OtlpJson => {
                request_from_json(&held.value).map_err(|error| format!("json: {error}"))
            }
        };
        let request = match decoded {
            Ok(request) => request,
            Err(reason) => {
                drop(admission);
                self.metrics.refused_request(RefusedReason::Invalid);
                return self.unusable(held, &reason);
            }
        };
        let received = (self.encoding == MessageEncoding::OtlpProto
            && self.wanted.keeps(Compression::Identity).protobuf)
            .then(|| Received::protobuf(held.value.clone()));
        let decision = intake(
            request,
            held.value.len(),
            received,
            &self.pipelines,
            &self.metrics,
            admission,
        );
        match self.runtime.block_on(settle(decision, &self.metrics)) {
            Outcome::Accepted { .. } => Offered::Done,
            Outcome::Invalid(reason) => self.unusable(held, &reason),
            Outcome::Unavailable => Offered::Again,
        }
    }

    /// Logs a message that can never be used and writes it to the
    /// dead-letter folder; it is done with once written (or when there is
    /// no folder).
    fn unusable(&self, held: &Held, reason: &str) -> Offered {
        let receiver = &self.metrics.receiver;
        self.metrics.note_error(&format!(
            "{} partition {} offset {}: {reason}",
            held.topic, held.partition, held.offset
        ));
        let Some(dir) = &self.dead_letter else {
            tracing::error!(%receiver, topic = held.topic, partition = held.partition, offset = held.offset, reason, "cannot use a kafka message; skipped");
            return Offered::Done;
        };
        let extension = match self.encoding {
            MessageEncoding::OtlpProto => "pb",
            MessageEncoding::OtlpJson => "json",
        };
        let name = format!(
            "{}-{}-{}.{extension}",
            held.topic, held.partition, held.offset
        );
        match write_atomically(dir, &name, &held.value) {
            Ok(path) => {
                tracing::error!(%receiver, topic = held.topic, partition = held.partition, offset = held.offset, reason, dead_letter = %path.display(), "cannot use a kafka message; saved to the dead-letter folder");
                Offered::Done
            }
            Err(error) => {
                tracing::error!(%receiver, topic = held.topic, partition = held.partition, offset = held.offset, reason, %error, "cannot use a kafka message, nor save it to the dead-letter folder; trying again");
                Offered::Again
            }
        }
    }
}

/// Writes `bytes` to `dir/name` through a temporary file, so that the
/// folder never holds a partial message.
fn write_atomically(dir: &std::path::Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(name);
    let temporary = dir.join(format!(".{name}.tmp"));
    std::fs::write(&temporary, bytes)?;
    std::fs::File::open(&temporary)?.sync_all()?;
    std::fs::rename(&temporary, &path)?;
    Ok(path)
}
