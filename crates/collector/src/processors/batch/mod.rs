//! The `batch` processor: collects requests until a batch holds
//! `send_batch_size` samples (or `send_batch_max_bytes` encoded bytes, or
//! its timeout passes), merges them into one request with one dictionary
//! (`profbridge_translate::merge_requests`), and splits what passes
//! `send_batch_max_size` or `send_batch_max_bytes` (split.rs).
//!
//! [`Batcher`] is the synchronous, deterministic core; the caller owns the
//! timer: after each call it arms one for [`Batcher::deadline`] and calls
//! [`Batcher::flush`] when it fires, and at shutdown.
//!
//! A batch within the limits keeps the merged dictionary as it is (entries
//! of every part, even those no sample uses); the pieces of a split batch
//! each carry a pruned dictionary with only what they reference.
//!
//! As in the OpenTelemetry Collector, a batch sent because it reached
//! `send_batch_size` is cut into pieces of at most `send_batch_max_size`,
//! and a last piece below `send_batch_size` stays to collect more, its wait
//! starting over.

pub mod config;
mod factory;

use std::time::{Duration, Instant, SystemTime};

use prost::Message;

use profbridge_translate::merge_requests;
use profbridge_translate::otlp::ExportProfilesServiceRequest;

pub use config::{BatchProcessorConfig, DEFAULT_SEND_BATCH_SIZE, DEFAULT_TIMEOUT};
pub use factory::BatchProcessorFactory;

use super::InvalidOptions;
use crate::pipeline::{Processed, Processor, Profiles};
use crate::split::{split, Limits};

#[derive(Debug)]
pub struct Batcher {
    send_batch_size: usize,
    limits: Limits,
    timeout: Duration,
    pending: Vec<Profiles>,
    pending_samples: usize,
    /// The sum of the pending requests' encoded sizes (their merge may be
    /// smaller, as parts share dictionary entries).
    pending_bytes: usize,
    pending_since: Option<Instant>,
}

impl Batcher {
    /// Fails with every problem of the options, one per line.
    pub fn new(config: &BatchProcessorConfig) -> Result<Self, InvalidOptions> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(InvalidOptions(problems));
        }
        let max_bytes = usize::try_from(config.send_batch_max_bytes.0).unwrap_or(usize::MAX);
        Ok(Self {
            send_batch_size: config.send_batch_size,
            limits: Limits {
                samples: Some(config.send_batch_max_size).filter(|&max| max > 0),
                bytes: Some(max_bytes).filter(|&max| max > 0),
                whole_profiles: false,
            },
            timeout: config.timeout.0,
            pending: Vec::new(),
            pending_samples: 0,
            pending_bytes: 0,
            pending_since: None,
        })
    }

    /// Takes `batch` in; returns the batches that are ready, in order. A
    /// request with no resources carries nothing and is dropped.
    pub fn push(&mut self, batch: Profiles) -> Vec<Profiles> {
        self.push_at(batch, Instant::now())
    }

    /// [`Batcher::push`] at time `now`, which starts the wait of a batch.
    pub fn push_at(&mut self, batch: Profiles, now: Instant) -> Vec<Profiles> {
        if batch.request().resource_profiles.is_empty() {
            return Vec::new();
        }
        self.pending_samples += batch.sample_count();
        self.pending_bytes += batch.encoded_size;
        self.pending.push(batch);
        self.pending_since.get_or_insert(now);
        if !self.is_ready() {
            return Vec::new();
        }
        let mut ready = self.take_all();
        let keep_last = ready.len() > 1
            && !self.timeout.is_zero()
            && ready
                .last()
                .is_some_and(|last| last.sample_count() < self.send_batch_size);
        if keep_last {
            if let Some(rest) = ready.pop() {
                self.pending_samples = rest.sample_count();
                self.pending_bytes = rest.encoded_size;
                self.pending.push(rest);
                self.pending_since = Some(now);
            }
        }
        ready
    }

    /// Everything pending, merged and split within the limits: for the
    /// timeout and for shutdown. Empty when nothing is pending.
    pub fn flush(&mut self) -> Vec<Profiles> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        self.take_all()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Samples pending.
    pub fn pending_samples(&self) -> usize {
        self.pending_samples
    }

    /// Encoded bytes pending, as the sum of the pending requests' sizes.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// When the oldest pending data started waiting; `None` when nothing
    /// is pending.
    pub fn pending_since(&self) -> Option<Instant> {
        self.pending_since
    }

    /// When [`Batcher::flush`] should be called; `None` when nothing is
    /// pending.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending_since
            .map(|since| since.checked_add(self.timeout).unwrap_or(since))
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn is_ready(&self) -> bool {
        self.timeout.is_zero()
            || self.pending_samples >= self.send_batch_size
            || self
                .limits
                .bytes
                .is_some_and(|max| self.pending_bytes >= max)
    }

    /// Merges every pending request and splits the result.
    fn take_all(&mut self) -> Vec<Profiles> {
        let parts = std::mem::take(&mut self.pending);
        self.pending_samples = 0;
        self.pending_bytes = 0;
        self.pending_since = None;
        let merged = merge(parts);
        if !self
            .limits
            .exceeded_by(merged.sample_count(), merged.encoded_size)
        {
            return vec![merged];
        }
        split(merged.request(), self.limits)
            .into_iter()
            .map(|piece| {
                batch_received_at(piece, merged.received_at).returning_to(merged.request_pool())
            })
            .collect()
    }
}

/// One batch of every part, received when the earliest part was.
fn merge(mut parts: Vec<Profiles>) -> Profiles {
    if parts.len() == 1 {
        if let Some(only) = parts.pop() {
            return only;
        }
    }
    let received_at = parts
        .iter()
        .map(|part| part.received_at)
        .min()
        .unwrap_or_else(SystemTime::now);
    let pool = parts.first().and_then(Profiles::request_pool).cloned();
    let merged = merge_requests(parts.into_iter().map(Profiles::into_request).collect());
    batch_received_at(merged, received_at).returning_to(pool.as_ref())
}

fn batch_received_at(request: ExportProfilesServiceRequest, received_at: SystemTime) -> Profiles {
    let encoded_size = request.encoded_len();
    let mut batch = Profiles::new(request, encoded_size);
    batch.received_at = received_at;
    batch
}

impl Processor for Batcher {
    fn process(&mut self, batch: Profiles) -> Processed {
        Processed::Held(self.push(batch))
    }

    fn flush(&mut self) -> Vec<Profiles> {
        Batcher::flush(self)
    }

    fn deadline(&self) -> Option<Instant> {
        Batcher::deadline(self)
    }

    fn is_empty(&self) -> bool {
        Batcher::is_empty(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::units::ByteSize;

    fn batcher(size: usize, max_size: usize, timeout: Duration) -> Batcher {
        Batcher::new(&BatchProcessorConfig {
            send_batch_size: size,
            send_batch_max_size: max_size,
            send_batch_max_bytes: ByteSize(0),
            timeout: crate::settings::units::Duration(timeout),
        })
        .unwrap()
    }

    fn request(samples: usize) -> Profiles {
        let request = profbridge_testkit::ebpf_like_request(samples, 5);
        let size = request.encoded_len();
        Profiles::new(request, size)
    }

    #[test]
    fn the_deadline_follows_the_oldest_pending_request() {
        let mut batcher = batcher(100, 0, Duration::from_secs(2));
        let start = Instant::now();
        let later = start + Duration::from_secs(1);
        assert!(batcher.push_at(request(10), start).is_empty());
        assert!(batcher.push_at(request(10), later).is_empty());
        assert_eq!(batcher.pending_since(), Some(start));
        assert_eq!(batcher.deadline(), Some(start + Duration::from_secs(2)));
        assert_eq!(batcher.flush().len(), 1);
        assert_eq!(batcher.deadline(), None);
    }

    #[test]
    fn a_last_piece_below_the_size_waits_with_a_new_deadline() {
        let mut batcher = batcher(30, 40, Duration::from_secs(2));
        let start = Instant::now();
        let later = start + Duration::from_secs(1);
        assert!(batcher.push_at(request(20), start).is_empty());
        let sent = batcher.push_at(request(30), later);
        assert_eq!(
            sent.iter().map(Profiles::sample_count).collect::<Vec<_>>(),
            [40]
        );
        assert_eq!(batcher.pending_samples(), 10);
        assert_eq!(batcher.pending_since(), Some(later));
        let rest = batcher.flush();
        assert_eq!(
            rest.iter().map(Profiles::sample_count).collect::<Vec<_>>(),
            [10]
        );
    }

    fn validated(samples: usize, seed: u64) -> Profiles {
        let request = profbridge_testkit::ebpf_like_request(samples, seed);
        let validation = profbridge_translate::validate_request(&request).unwrap();
        Profiles::validated(request, 100, validation)
    }

    /// Exporters skip validating a batch only while it holds exactly the
    /// request that was validated.
    #[test]
    fn merged_and_split_batches_are_not_known_valid_and_one_passed_on_whole_is() {
        let mut whole = batcher(10, 0, Duration::from_secs(2));
        let sent = whole.push(validated(20, 1));
        assert_eq!(sent.len(), 1);
        assert!(sent.iter().all(|batch| batch.validation().is_some()));

        let mut merging = batcher(30, 0, Duration::from_secs(2));
        assert!(merging.push(validated(20, 1)).is_empty());
        let merged = merging.push(validated(20, 2));
        assert_eq!(merged.len(), 1);
        assert!(merged.iter().all(|batch| batch.validation().is_none()));

        let mut splitting = batcher(10, 10, Duration::from_secs(2));
        let pieces = splitting.push(validated(25, 3));
        assert!(pieces.len() > 1);
        assert!(pieces.iter().all(|batch| batch.validation().is_none()));
    }

    #[test]
    fn invalid_options_are_refused() {
        let config = BatchProcessorConfig {
            send_batch_size: 10,
            send_batch_max_size: 5,
            ..BatchProcessorConfig::default()
        };
        assert!(Batcher::new(&config)
            .unwrap_err()
            .to_string()
            .starts_with("send_batch_max_size: 5 is less than send_batch_size (10)"));
    }
}
