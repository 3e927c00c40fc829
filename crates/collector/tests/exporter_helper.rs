#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The exporter helper, driven through a channel exporter that the test
//! answers: retries, Retry-After, dead letters, drop_newest and block,
//! isolation of a stalled exporter, the persistent queue across restarts,
//! shutdown, and the configuration keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use tokio::sync::mpsc::UnboundedReceiver;

use profbridge_collector::config::units::{self, ByteSize};
use profbridge_collector::config::{parse_yaml, ExporterConfig};
use profbridge_collector::exporters::file::config::FileExporterConfig;
use profbridge_collector::exporters::helper::{
    EnqueueError, ExporterHelperConfig, OnOverflow, QueueStorage, QueuedExporter, RetryConfig,
    SendingQueueConfig,
};
use profbridge_collector::exporters::{ExportCause, ExportError};
use profbridge_collector::pipeline::{ChannelExport, Exporter, Pipeline, Profiles};
use profbridge_collector::telemetry::Registry;
use profbridge_testkit::{SmallDisk, TempDir};
use profbridge_translate::otlp::{
    ExportProfilesServiceRequest, Profile, ResourceProfiles, ScopeProfiles,
};

const PATIENCE: Duration = Duration::from_secs(20);

/// A request of `profiles` empty profiles, told apart by `seed`.
fn batch(seed: u64, profiles: usize) -> Arc<Profiles> {
    let profile = Profile {
        time_unix_nano: seed,
        ..Profile::default()
    };
    let request = ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            scope_profiles: vec![ScopeProfiles {
                profiles: vec![profile; profiles],
                ..ScopeProfiles::default()
            }],
            ..ResourceProfiles::default()
        }],
        dictionary: None,
    };
    let size = request.encoded_len();
    Arc::new(Profiles::new(request, size))
}

fn seed_of(batch: &Profiles) -> u64 {
    batch.request().resource_profiles[0].scope_profiles[0].profiles[0].time_unix_nano
}

fn quick_retries() -> RetryConfig {
    RetryConfig {
        initial_interval: millis(1),
        max_interval: millis(5),
        ..RetryConfig::default()
    }
}

fn millis(ms: u64) -> units::Duration {
    units::Duration(Duration::from_millis(ms))
}

fn helper(sending_queue: SendingQueueConfig) -> ExporterHelperConfig {
    ExporterHelperConfig {
        sending_queue,
        retry_on_failure: quick_retries(),
        timeout: units::Duration(Duration::ZERO),
        dead_letter: None,
    }
}

fn queue(num_consumers: usize, queue_size: usize) -> SendingQueueConfig {
    SendingQueueConfig {
        num_consumers,
        queue_size,
        ..SendingQueueConfig::default()
    }
}

struct Harness {
    exporter: Arc<QueuedExporter>,
    exports: UnboundedReceiver<ChannelExport>,
    registry: Arc<Registry>,
}

async fn start(name: &str, config: &ExporterHelperConfig) -> Harness {
    let (exporter, exports) = Exporter::channel(name);
    let registry = Registry::new();
    let exporter = QueuedExporter::start(Arc::new(exporter), config, &registry)
        .await
        .unwrap();
    Harness {
        exporter,
        exports,
        registry,
    }
}

impl Harness {
    async fn next_export(&mut self) -> ChannelExport {
        tokio::time::timeout(PATIENCE, self.exports.recv())
            .await
            .expect("an export within the patience")
            .expect("the exporter is running")
    }

    fn metric(&self, series: &str) -> Option<f64> {
        metric(&self.registry, series)
    }
}

/// The value of `series` (name and labels as printed) in the registry.
fn metric(registry: &Registry, series: &str) -> Option<f64> {
    registry.render().lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().unwrap())
    })
}

fn retryable(after: Option<Duration>) -> ExportError {
    ExportError::Retryable {
        cause: ExportCause::Other("the destination is busy".into()),
        retry_after: after,
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|entry| entry.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[tokio::test]
async fn retryable_failures_are_retried_until_the_export_succeeds() {
    let mut harness = start("channel", &helper(queue(1, 10))).await;
    let sent = batch(1, 3);
    harness.exporter.offer(Arc::clone(&sent)).await.unwrap();
    for _ in 0..2 {
        let export = harness.next_export().await;
        assert_eq!(seed_of(&export.batch), 1);
        export.reply.send(Err(retryable(None))).unwrap();
    }
    harness.next_export().await.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    let sent_series = "profbridge_exporter_sent_profiles_total{exporter=\"channel\"}";
    assert_eq!(harness.metric(sent_series), Some(3.0));
    assert_eq!(
        harness.metric("profbridge_exporter_send_failed_profiles_total{exporter=\"channel\"}"),
        Some(0.0)
    );
    assert!(
        harness.exports.try_recv().is_err(),
        "no attempt after success"
    );
}

// Paused time: the wait is on tokio's clock, which jumps ahead once every
// task is idle, so the test checks the 300 ms without spending them.
#[tokio::test(start_paused = true)]
async fn retry_after_is_waited_for_even_when_the_backoff_is_shorter() {
    let mut harness = start("channel", &helper(queue(1, 10))).await;
    harness.exporter.offer(batch(1, 1)).await.unwrap();
    let first = harness.next_export().await;
    let failed_at = tokio::time::Instant::now();
    first
        .reply
        .send(Err(retryable(Some(Duration::from_millis(300)))))
        .unwrap();
    let second = harness.next_export().await;
    assert!(failed_at.elapsed() >= Duration::from_millis(300));
    second.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
}

#[tokio::test]
async fn a_permanent_failure_is_written_to_the_dead_letter_directory() {
    let dir = TempDir::new("helper-dead-letter");
    let dead = dir.path().join("dead");
    let config = ExporterHelperConfig {
        dead_letter: Some(dead.to_string_lossy().into_owned()),
        ..helper(queue(2, 10))
    };
    let mut harness = start("otlp/x", &config).await;
    let failing = batch(42, 2);
    harness.exporter.offer(Arc::clone(&failing)).await.unwrap();
    harness
        .next_export()
        .await
        .reply
        .send(Err(ExportError::Permanent(ExportCause::Other(
            "400 Bad Request".into(),
        ))))
        .unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    assert!(harness.exports.try_recv().is_err(), "permanent: no retry");
    assert_eq!(
        harness.metric("profbridge_exporter_send_failed_profiles_total{exporter=\"otlp/x\"}"),
        Some(2.0)
    );
    let files = files_under(&dead);
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("otlp%2Fx-") && name.ends_with(".otlp.pb"),
        "{name}"
    );
    let saved = ExportProfilesServiceRequest::decode(std::fs::read(&files[0]).unwrap().as_slice());
    assert_eq!(saved.unwrap(), *failing.request());
}

#[tokio::test]
async fn retries_end_at_max_elapsed_time_and_the_request_is_dead_lettered() {
    let dir = TempDir::new("helper-give-up");
    let config = ExporterHelperConfig {
        retry_on_failure: RetryConfig {
            initial_interval: millis(10),
            max_interval: millis(20),
            max_elapsed_time: millis(100),
            ..RetryConfig::default()
        },
        dead_letter: Some(dir.path().to_string_lossy().into_owned()),
        ..helper(queue(1, 10))
    };
    let Harness {
        exporter,
        mut exports,
        registry,
    } = start("channel", &config).await;
    let refuser = tokio::spawn(async move {
        let mut attempts = 0;
        while let Some(export) = exports.recv().await {
            attempts += 1;
            let _ = export.reply.send(Err(retryable(None)));
        }
        attempts
    });
    exporter.offer(batch(7, 1)).await.unwrap();
    assert!(
        exporter.shutdown(PATIENCE).await,
        "giving up finishes the request"
    );
    drop(exporter);
    let attempts = refuser.await.unwrap();
    assert!(attempts >= 2, "{attempts} attempts");
    assert_eq!(files_under(dir.path()).len(), 1);
    assert_eq!(
        metric(
            &registry,
            "profbridge_exporter_send_failed_profiles_total{exporter=\"channel\"}"
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn with_retries_off_a_retryable_failure_fails_at_once() {
    let config = ExporterHelperConfig {
        retry_on_failure: RetryConfig {
            enabled: false,
            ..quick_retries()
        },
        ..helper(queue(1, 10))
    };
    let mut harness = start("channel", &config).await;
    harness.exporter.offer(batch(1, 1)).await.unwrap();
    harness
        .next_export()
        .await
        .reply
        .send(Err(retryable(None)))
        .unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    assert!(harness.exports.try_recv().is_err());
    assert_eq!(
        harness.metric("profbridge_exporter_send_failed_profiles_total{exporter=\"channel\"}"),
        Some(1.0)
    );
}

#[tokio::test]
async fn drop_newest_counts_what_a_full_queue_drops() {
    let mut harness = start("channel", &helper(queue(1, 2))).await;
    assert_eq!(
        harness.metric("profbridge_exporter_queue_capacity{exporter=\"channel\"}"),
        Some(2.0)
    );
    harness.exporter.offer(batch(1, 1)).await.unwrap();
    harness.exporter.offer(batch(2, 1)).await.unwrap();
    let held = harness.next_export().await;
    assert_eq!(
        harness.exporter.offer(batch(3, 5)).await,
        Err(EnqueueError::Full),
        "one being exported and one waiting fill a queue of 2"
    );
    assert_eq!(
        harness.metric("profbridge_exporter_enqueue_failed_profiles_total{exporter=\"channel\"}"),
        Some(5.0)
    );
    assert_eq!(
        harness.metric("profbridge_exporter_queue_size{exporter=\"channel\"}"),
        Some(2.0)
    );
    held.reply.send(Ok(())).unwrap();
    harness.next_export().await.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    assert_eq!(
        harness.metric("profbridge_exporter_sent_profiles_total{exporter=\"channel\"}"),
        Some(2.0)
    );
}

#[tokio::test]
async fn drop_newest_bounds_bytes_too() {
    let one = batch(1, 1);
    let config = helper(SendingQueueConfig {
        max_bytes: ByteSize(one.memory_size as u64 + 1),
        ..queue(1, 100)
    });
    let mut harness = start("channel", &config).await;
    harness.exporter.offer(one).await.unwrap();
    let held = harness.next_export().await;
    assert_eq!(
        harness.exporter.offer(batch(2, 1)).await,
        Err(EnqueueError::Full)
    );
    held.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    let big = batch(3, 50);
    let mut harness = start("channel", &config).await;
    harness.exporter.offer(big).await.unwrap();
    harness.next_export().await.reply.send(Ok(())).unwrap();
    assert!(
        harness.exporter.shutdown(PATIENCE).await,
        "a request larger than max_bytes still goes through an empty queue"
    );
}

/// Receivers ask a pipeline whether any exporter would take a request
/// before they decompress it: when every exporter would drop it, it is
/// refused cheaply instead of decoded for nothing.
#[tokio::test]
async fn a_pipeline_says_whether_any_exporter_has_room() {
    let mut dropping = start("dropping", &helper(queue(1, 2))).await;
    let blocking = start(
        "blocking",
        &helper(SendingQueueConfig {
            on_overflow: OnOverflow::Block,
            ..queue(1, 1)
        }),
    )
    .await;
    let only_dropping = Pipeline::start(
        "profiles",
        Vec::new(),
        vec![Arc::clone(&dropping.exporter)],
        1 << 30,
        1024,
    );
    let with_blocking = Pipeline::start(
        "profiles/2",
        Vec::new(),
        vec![
            Arc::clone(&dropping.exporter),
            Arc::clone(&blocking.exporter),
        ],
        1 << 30,
        1024,
    );
    let (only_dropping, with_blocking) = (only_dropping.handle(), with_blocking.handle());
    assert!(only_dropping.exporters_have_room_for(0));
    dropping.exporter.offer(batch(1, 1)).await.unwrap();
    let held = dropping.next_export().await;
    dropping.exporter.offer(batch(2, 1)).await.unwrap();
    assert!(
        !only_dropping.exporters_have_room_for(0),
        "one being exported and one waiting fill a queue of 2"
    );
    assert!(
        with_blocking.exporters_have_room_for(0),
        "an exporter whose queue blocks takes every request"
    );
    held.reply.send(Ok(())).unwrap();
    dropping.next_export().await.reply.send(Ok(())).unwrap();
    let mut room = false;
    for _ in 0..200 {
        room = only_dropping.exporters_have_room_for(0);
        if room {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(room, "the queue has room again once its exports are done");
}

#[tokio::test(start_paused = true)]
async fn block_waits_for_room_instead_of_dropping() {
    let config = helper(SendingQueueConfig {
        on_overflow: OnOverflow::Block,
        ..queue(1, 1)
    });
    let mut harness = start("channel", &config).await;
    harness.exporter.offer(batch(1, 1)).await.unwrap();
    let first = harness.next_export().await;
    let second = {
        let exporter = Arc::clone(&harness.exporter);
        tokio::spawn(async move { exporter.offer(batch(2, 1)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!second.is_finished(), "the queue is full: the offer waits");
    first.reply.send(Ok(())).unwrap();
    assert_eq!(second.await.unwrap(), Ok(()));
    let next = harness.next_export().await;
    assert_eq!(seed_of(&next.batch), 2);
    next.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
    assert_eq!(
        harness.metric("profbridge_exporter_enqueue_failed_profiles_total{exporter=\"channel\"}"),
        Some(0.0)
    );
}

#[tokio::test]
async fn without_a_queue_offer_exports_before_returning() {
    let config = helper(SendingQueueConfig {
        enabled: false,
        ..SendingQueueConfig::default()
    });
    let mut harness = start("channel", &config).await;
    let offer = {
        let exporter = Arc::clone(&harness.exporter);
        tokio::spawn(async move { exporter.offer(batch(1, 1)).await })
    };
    let export = harness.next_export().await;
    assert!(!offer.is_finished());
    export.reply.send(Ok(())).unwrap();
    assert_eq!(offer.await.unwrap(), Ok(()));
    let failing = {
        let exporter = Arc::clone(&harness.exporter);
        tokio::spawn(async move { exporter.offer(batch(2, 1)).await })
    };
    harness
        .next_export()
        .await
        .reply
        .send(Err(ExportError::Permanent(ExportCause::Other("no".into()))))
        .unwrap();
    assert_eq!(failing.await.unwrap(), Err(EnqueueError::NotSent));
    assert!(harness.exporter.shutdown(PATIENCE).await);
}

#[tokio::test]
async fn a_stalled_exporter_does_not_delay_a_healthy_one() {
    let mut healthy = start("healthy", &helper(queue(2, 1000))).await;
    let mut stalled = start("stalled", &helper(queue(1, 1000))).await;
    let pipeline = Pipeline::start(
        "profiles",
        Vec::new(),
        vec![Arc::clone(&stalled.exporter), Arc::clone(&healthy.exporter)],
        1 << 30,
        1024,
    );
    let handle = pipeline.handle();
    for seed in 0..20 {
        handle.try_submit(batch(seed, 1)).unwrap();
    }
    let mut seen = Vec::new();
    for _ in 0..20 {
        let export = healthy.next_export().await;
        seen.push(seed_of(&export.batch));
        export.reply.send(Ok(())).unwrap();
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..20).collect::<Vec<_>>());
    let held = stalled.next_export().await;
    assert_eq!(seed_of(&held.batch), 0);
    assert!(
        stalled.exports.try_recv().is_err(),
        "the stalled exporter still holds its first request"
    );
    assert_eq!(stalled.exporter.queued(), 20);

    drop(handle);
    assert!(pipeline.shutdown(PATIENCE).await);
    assert!(healthy.exporter.shutdown(PATIENCE).await);
    let stop = stalled.exporter.shutdown(Duration::from_millis(50)).await;
    assert!(!stop, "the stalled exporter could not drain");
    drop(held);
}

#[tokio::test]
async fn an_exporter_shared_by_two_pipelines_has_one_queue() {
    let mut shared = start("shared", &helper(queue(1, 10))).await;
    let first = Pipeline::start(
        "profiles",
        Vec::new(),
        vec![Arc::clone(&shared.exporter)],
        1 << 30,
        16,
    );
    let second = Pipeline::start(
        "profiles/2",
        Vec::new(),
        vec![Arc::clone(&shared.exporter)],
        1 << 30,
        16,
    );
    first.handle().try_submit(batch(1, 1)).unwrap();
    second.handle().try_submit(batch(2, 1)).unwrap();
    let held = shared.next_export().await;
    let confirmation = first.handle().try_submit_confirmed(batch(3, 1)).unwrap();
    assert!(confirmation.queued().await);
    assert_eq!(shared.exporter.queued(), 3, "both pipelines fill one queue");
    held.reply.send(Ok(())).unwrap();
    for _ in 0..2 {
        shared.next_export().await.reply.send(Ok(())).unwrap();
    }
    assert!(first.shutdown(PATIENCE).await && second.shutdown(PATIENCE).await);
    assert!(shared.exporter.shutdown(PATIENCE).await);
}

#[tokio::test]
async fn shutdown_stops_retrying_and_dead_letters_what_memory_holds() {
    let dir = TempDir::new("helper-shutdown");
    let config = ExporterHelperConfig {
        dead_letter: Some(dir.path().to_string_lossy().into_owned()),
        ..helper(queue(1, 10))
    };
    let mut harness = start("channel", &config).await;
    for seed in 0..3 {
        harness.exporter.offer(batch(seed, 1)).await.unwrap();
    }
    let held = harness.next_export().await;
    assert!(!harness.exporter.shutdown(Duration::from_millis(50)).await);
    drop(held);
    assert_eq!(files_under(dir.path()).len(), 3, "nothing is lost silently");
    assert_eq!(
        harness.metric("profbridge_exporter_send_failed_profiles_total{exporter=\"channel\"}"),
        Some(3.0)
    );
}

fn persistent(storage: &Path) -> ExporterHelperConfig {
    helper(SendingQueueConfig {
        storage: Some(QueueStorage::Directory(
            storage.to_string_lossy().into_owned(),
        )),
        ..queue(1, 100)
    })
}

fn segment_files(storage: &Path) -> Vec<PathBuf> {
    files_under(&storage.join("file%2Fq"))
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
        .collect()
}

#[tokio::test]
async fn the_persistent_queue_replays_what_was_never_acknowledged() {
    let dir = TempDir::new("helper-persistent");
    let storage = dir.path().join("queue");
    let offered: Vec<Arc<Profiles>> = (10..13).map(|seed| batch(seed, 2)).collect();
    {
        let mut crashed = start("file/q", &persistent(&storage)).await;
        for batch in &offered {
            crashed.exporter.offer(Arc::clone(batch)).await.unwrap();
        }
        let held = crashed.next_export().await;
        assert_eq!(seed_of(&held.batch), 10);
        assert!(!segment_files(&storage).is_empty());
        // Dropped without shutdown or acknowledgement, like a crash.
        drop(crashed);
        drop(held);
    }

    let mut restarted = start("file/q", &persistent(&storage)).await;
    assert_eq!(
        restarted.metric("profbridge_exporter_queue_size{exporter=\"file/q\"}"),
        Some(3.0)
    );
    for expected in &offered {
        let export = restarted.next_export().await;
        assert_eq!(export.batch.request(), expected.request());
        assert_eq!(export.batch.received_at, expected.received_at);
        export.reply.send(Ok(())).unwrap();
    }
    assert!(restarted.exporter.shutdown(PATIENCE).await);
    assert!(
        segment_files(&storage).is_empty(),
        "acknowledged segments are deleted: {:?}",
        files_under(&storage.join("file%2Fq"))
    );
}

#[tokio::test]
async fn the_persistent_queue_keeps_what_shutdown_could_not_export() {
    let dir = TempDir::new("helper-persistent-shutdown");
    let storage = dir.path().join("queue");
    let mut first = start("file/q", &persistent(&storage)).await;
    for seed in 0..4 {
        first.exporter.offer(batch(seed, 1)).await.unwrap();
    }
    let held = first.next_export().await;
    assert!(!first.exporter.shutdown(Duration::from_millis(50)).await);
    drop(held);
    assert_eq!(
        first.metric("profbridge_exporter_send_failed_profiles_total{exporter=\"file/q\"}"),
        Some(0.0),
        "kept on disk, not failed"
    );

    let mut second = start("file/q", &persistent(&storage)).await;
    let mut seeds = Vec::new();
    for _ in 0..4 {
        let export = second.next_export().await;
        seeds.push(seed_of(&export.batch));
        export.reply.send(Ok(())).unwrap();
    }
    assert_eq!(seeds, [0, 1, 2, 3]);
    let fresh = batch(9, 1);
    second.exporter.offer(Arc::clone(&fresh)).await.unwrap();
    second.next_export().await.reply.send(Ok(())).unwrap();
    assert!(second.exporter.shutdown(PATIENCE).await);
    assert!(segment_files(&storage).is_empty());
}

#[tokio::test]
async fn the_persistent_queue_bounds_what_is_on_disk() {
    let dir = TempDir::new("helper-persistent-bound");
    let storage = dir.path().join("queue");
    let config = helper(SendingQueueConfig {
        storage: Some(QueueStorage::Directory(
            storage.to_string_lossy().into_owned(),
        )),
        max_bytes: ByteSize(1),
        ..queue(1, 100)
    });
    let mut harness = start("file/q", &config).await;
    harness.exporter.offer(batch(1, 1)).await.unwrap();
    let held = harness.next_export().await;
    assert_eq!(
        harness.exporter.offer(batch(2, 1)).await,
        Err(EnqueueError::Full)
    );
    held.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
}

fn exporter_config(yaml_options: &str) -> Result<ExporterConfig, Vec<String>> {
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  file:\n{yaml_options}\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n"
    );
    parse_yaml(&yaml, &BTreeMap::new())
        .map(|config| config.exporters[0].1.clone())
        .map_err(|errors| errors.problems.iter().map(ToString::to_string).collect())
}

fn helper_of(yaml_options: &str) -> ExporterHelperConfig {
    let exporter = exporter_config(yaml_options).unwrap();
    match exporter.options::<FileExporterConfig>() {
        Some(file) => file.helper.clone(),
        None => panic!("{exporter:?}"),
    }
}

#[test]
fn the_options_read_from_yaml_with_collector_defaults() {
    // The file exporter's only difference: one consumer per CPU.
    let mut file = helper_of("    path: /data");
    assert_eq!(
        file.sending_queue.num_consumers,
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    );
    file.sending_queue.num_consumers = 10;
    assert_eq!(file, ExporterHelperConfig::default());
    let defaults = ExporterHelperConfig::default();
    assert!(defaults.sending_queue.enabled);
    assert_eq!(defaults.sending_queue.num_consumers, 10);
    assert_eq!(defaults.sending_queue.queue_size, 1000);
    assert_eq!(defaults.sending_queue.max_bytes, ByteSize(64 << 20));
    assert_eq!(defaults.sending_queue.on_overflow, OnOverflow::DropNewest);
    assert_eq!(
        defaults.retry_on_failure.initial_interval,
        units::Duration::from_secs(5)
    );
    assert_eq!(
        defaults.retry_on_failure.max_interval,
        units::Duration::from_secs(30)
    );
    assert_eq!(
        defaults.retry_on_failure.max_elapsed_time,
        units::Duration::from_secs(300)
    );
    assert_eq!(defaults.timeout, units::Duration::from_secs(5));

    let read = helper_of(
        "    sending_queue:\n      num_consumers: 2\n      queue_size: 50\n      max_bytes: 1MiB\n      \
         on_overflow: block\n      storage: /var/lib/q\n    \
         retry_on_failure:\n      initial_interval: 1s\n      max_interval: 10s\n      \
         max_elapsed_time: 0\n      multiplier: 2\n      jitter: 0.1\n    \
         timeout: 30s\n    dead_letter: /var/lib/dead",
    );
    assert_eq!(
        read.sending_queue,
        SendingQueueConfig {
            enabled: true,
            num_consumers: 2,
            queue_size: 50,
            max_bytes: ByteSize(1 << 20),
            on_overflow: OnOverflow::Block,
            storage: Some(QueueStorage::Directory("/var/lib/q".to_owned())),
        }
    );
    assert_eq!(
        read.retry_on_failure.max_elapsed_time,
        units::Duration::from_secs(0)
    );
    assert_eq!(read.retry_on_failure.multiplier, 2.0);
    assert_eq!(read.retry_on_failure.randomization_factor, 0.1);
    assert_eq!(read.timeout, units::Duration::from_secs(30));
    assert_eq!(read.dead_letter.as_deref(), Some("/var/lib/dead"));

    let older = helper_of("    sending_queue:\n      block_on_overflow: true");
    assert_eq!(older.sending_queue.on_overflow, OnOverflow::Block);
    let off = helper_of(
        "    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false",
    );
    assert!(!off.sending_queue.enabled && !off.retry_on_failure.enabled);
}

#[test]
fn bad_options_are_reported_at_their_keys() {
    let problems = |options: &str| exporter_config(options).unwrap_err();
    assert_eq!(
        problems("    sending_queue:\n      num_consumers: 0"),
        ["exporters.file.sending_queue.num_consumers: must be at least 1"]
    );
    assert_eq!(
        problems("    sending_queue:\n      on_overflow: wait"),
        ["exporters.file.sending_queue.on_overflow: unknown value \"wait\"; expected one of drop_newest, block"]
    );
    assert_eq!(
        problems("    sending_queue:\n      on_overflow: block\n      block_on_overflow: false"),
        ["exporters.file.sending_queue: on_overflow and block_on_overflow disagree; write on_overflow only"]
    );
    assert_eq!(
        problems("    retry_on_failure:\n      multiplier: 0.5"),
        ["exporters.file.retry_on_failure.multiplier: 0.5 is below 1"]
    );
    assert_eq!(
        problems("    retry_on_failure:\n      randomization_factor: 2"),
        ["exporters.file.retry_on_failure.randomization_factor: 2 is not between 0 and 1"]
    );
    assert_eq!(
        problems("    retry_on_failure:\n      initial_interval: 0"),
        ["exporters.file.retry_on_failure.initial_interval: must be longer than 0"]
    );
    assert_eq!(
        problems("    sending_queue:\n      sizer: requests"),
        ["exporters.file.sending_queue.sizer: unknown key; expected one of enabled, num_consumers, queue_size, max_bytes, on_overflow, block_on_overflow, storage"]
    );
}

/// The OTLP receivers' intake marks a request as validated only when it
/// queues exactly the request that passed: one whose invalid profiles it
/// removed is validated again by the exporters.
#[tokio::test]
async fn intake_marks_only_requests_it_queues_unchanged_as_validated() {
    use profbridge_collector::receivers::intake::{admit, intake, settle, Outcome};
    use profbridge_collector::telemetry::ReceiverMetrics;

    let mut harness = start("channel", &helper(queue(1, 4))).await;
    let pipeline = Pipeline::start(
        "profiles",
        Vec::new(),
        vec![Arc::clone(&harness.exporter)],
        1 << 30,
        16,
    );
    let pipelines = [pipeline.handle()];
    let metrics = ReceiverMetrics::new(&harness.registry, "otlp", "grpc");

    let valid = profbridge_testkit::ebpf_like_request(5, 1);
    let mut partly_invalid = valid.clone();
    let scope = &mut partly_invalid.resource_profiles[0].scope_profiles[0];
    let mut broken = scope.profiles[0].clone();
    broken.samples[0].stack_index = 1 << 30;
    scope.profiles.push(broken);

    for (request, rejected, validated) in [(valid, 0, true), (partly_invalid, 1, false)] {
        let size = request.encoded_len();
        let admission = admit(&pipelines, size, &metrics).unwrap();
        let decision = intake(request, size, None, &pipelines, &metrics, admission);
        let outcome = settle(decision, &metrics).await;
        assert!(
            matches!(outcome, Outcome::Accepted { rejected: r, .. } if r == rejected),
            "{outcome:?}"
        );
        let export = harness.next_export().await;
        assert_eq!(export.batch.validation().is_some(), validated);
        assert_eq!(export.batch.profile_count(), 1);
        export.reply.send(Ok(())).unwrap();
    }
}

// ---- full disks ----

/// A request of about `bytes` bytes (one profile carrying a payload).
fn padded_batch(seed: u64, bytes: usize) -> Arc<Profiles> {
    let profile = Profile {
        time_unix_nano: seed,
        original_payload: vec![u8::try_from(seed % 251).unwrap(); bytes],
        ..Profile::default()
    };
    let request = ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            scope_profiles: vec![ScopeProfiles {
                profiles: vec![profile],
                ..ScopeProfiles::default()
            }],
            ..ResourceProfiles::default()
        }],
        dictionary: None,
    };
    let size = request.encoded_len();
    Arc::new(Profiles::new(request, size))
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_persistent_queue_on_a_small_disk_never_fills_it_with_delivered_requests() {
    const DISK: u64 = 2 << 20;
    const REQUEST: usize = 10 << 10;
    let Some(disk) = SmallDisk::mount("helper-small-queue", DISK, "the small-disk queue test")
    else {
        return;
    };
    let config = helper(SendingQueueConfig {
        storage: Some(QueueStorage::Directory(
            disk.path().to_string_lossy().into_owned(),
        )),
        ..queue(1, 10)
    });
    let mut harness = start("small", &config).await;
    // Three times the disk, one request at a time, each delivered and
    // acknowledged before the next comes.
    let requests = 3 * DISK / REQUEST as u64;
    for seed in 0..requests {
        let offered = harness.exporter.offer(padded_batch(seed, REQUEST)).await;
        assert_eq!(offered, Ok(()), "request {seed} of {requests}");
        let export = harness.next_export().await;
        assert_eq!(seed_of(&export.batch), seed);
        export.reply.send(Ok(())).unwrap();
        until("the queue to be empty", || harness.exporter.queued() == 0).await;
    }

    // Filled by something else, the disk still takes a request in the
    // place of the delivered ones, which the queue gives up first.
    let first_filler = disk.fill();
    harness
        .exporter
        .offer(padded_batch(0, REQUEST))
        .await
        .unwrap();
    // Filled again, it refuses, retryably, and counts it; with room again
    // the queue takes requests by itself.
    let filler = disk.fill();
    let offered = harness.exporter.offer(padded_batch(1, REQUEST)).await;
    assert_eq!(offered, Err(EnqueueError::Storage));
    assert_eq!(
        harness.metric("profbridge_exporter_queue_storage_failures_total{exporter=\"small\"}"),
        Some(1.0)
    );
    harness.next_export().await.reply.send(Ok(())).unwrap();
    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(first_filler).unwrap();
    harness
        .exporter
        .offer(padded_batch(1, REQUEST))
        .await
        .unwrap();
    harness.next_export().await.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
}

#[tokio::test]
async fn a_dead_letter_that_cannot_be_written_is_tried_again_and_holds_no_slot_for_good() {
    const QUEUE: usize = 3;
    let Some(disk) = SmallDisk::mount("helper-full-dead", 1 << 20, "the full dead-letter test")
    else {
        return;
    };
    let dead = disk.path().join("dead");
    std::fs::create_dir_all(&dead).unwrap();
    let filler = disk.fill();
    let storage = TempDir::new("helper-full-dead-queue");
    let config = ExporterHelperConfig {
        dead_letter: Some(dead.to_string_lossy().into_owned()),
        ..helper(SendingQueueConfig {
            storage: Some(QueueStorage::Directory(
                storage.path().to_string_lossy().into_owned(),
            )),
            ..queue(1, QUEUE)
        })
    };
    let mut harness = start("refused", &config).await;
    for seed in 0..QUEUE as u64 {
        harness
            .exporter
            .offer(padded_batch(seed, 4096))
            .await
            .unwrap();
    }
    let refuse = |export: ChannelExport| {
        export
            .reply
            .send(Err(ExportError::Permanent(ExportCause::Other(
                "refused for good".into(),
            ))))
            .unwrap();
    };
    refuse(harness.next_export().await);
    let failures = "profbridge_exporter_dead_letter_write_failures_total{exporter=\"refused\"}";
    until("a failed dead-letter write", || {
        harness.metric(failures).unwrap_or(0.0) >= 1.0
    })
    .await;
    assert_eq!(
        harness.exporter.offer(padded_batch(9, 4096)).await,
        Err(EnqueueError::Full),
        "the queue is still full: the request waits for the dead-letter directory"
    );

    std::fs::remove_file(filler).unwrap();
    for _ in 1..QUEUE {
        refuse(harness.next_export().await);
    }
    until("every request to be a dead letter", || {
        files_under(&dead).len() == QUEUE
    })
    .await;
    until("the queue to be empty", || harness.exporter.queued() == 0).await;
    harness
        .exporter
        .offer(padded_batch(10, 4096))
        .await
        .unwrap();
    harness.next_export().await.reply.send(Ok(())).unwrap();
    assert!(harness.exporter.shutdown(PATIENCE).await);
}
