#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The pprof receiver's `remote` source in a running collector, against
//! targets served on loopback by this test: a healthy one keeps its
//! schedule next to one that hangs, one that answers 500, one that streams
//! 1 GB and one that sends a gzip bomb, and it gets the configured headers
//! and the authenticator's token; errors are counted per target and
//! reason; file_sd targets start and stop being scraped as their file
//! changes.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use prost::Message;

use profbridge_collector::config::parse_yaml;
use profbridge_collector::service::{self, Running};
use profbridge_collector::telemetry::Registry;
use profbridge_testkit::{corpus_file, files_under, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;

const MAX_PROFILE: usize = 1 << 20;
const HUGE: u64 = 1 << 30;

/// What the test's targets serve, and how often each was asked.
struct Targets {
    profile: Bytes,
    bomb: Bytes,
    hits: Mutex<HashMap<String, u64>>,
    /// The headers of the last request, by target.
    headers: Mutex<HashMap<String, HeaderMap>>,
}

impl Targets {
    fn hits(&self, name: &str) -> u64 {
        self.hits.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

/// Each target is the first segment of the path: `/NAME/debug/pprof/...`.
async fn answer(State(targets): State<Arc<Targets>>, uri: Uri, headers: HeaderMap) -> Response {
    let name = uri
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_owned();
    *targets
        .hits
        .lock()
        .unwrap()
        .entry(name.clone())
        .or_default() += 1;
    targets
        .headers
        .lock()
        .unwrap()
        .insert(name.clone(), headers);
    match name.as_str() {
        "hang" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
        "fail" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        "huge" => Body::new(Endless { left: HUGE }).into_response(),
        "trickle" | "trickle-too" => Body::new(Trickle {
            left: HUGE,
            pause: None,
        })
        .into_response(),
        "bomb" => targets.bomb.clone().into_response(),
        _ => targets.profile.clone().into_response(),
    }
}

/// A body of `left` zero bytes, sent as fast as the client reads, with no
/// declared length.
struct Endless {
    left: u64,
}

impl http_body::Body for Endless {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        const CHUNK: usize = 64 << 10;
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let size = CHUNK.min(usize::try_from(self.left).unwrap());
        self.left -= size as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![0; size])))))
    }
}

/// A body of `left` zero bytes, 64 KiB every 5 ms (about 13 MB/s), with
/// no declared length: slow enough that two scrapes of it overlap.
struct Trickle {
    left: u64,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Trickle {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        const CHUNK: usize = 64 << 10;
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let pause = self
            .pause
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(5))));
        if pause.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.pause = None;
        let size = CHUNK.min(usize::try_from(self.left).unwrap());
        self.left -= size as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![0; size])))))
    }
}

fn gzip_bomb() -> Bytes {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        encoder.write_all(&zeros).unwrap();
    }
    Bytes::from(encoder.finish().unwrap())
}

async fn serve_targets() -> Option<(SocketAddr, Arc<Targets>)> {
    let profile = corpus_file("go.crc32.cpu")?;
    let targets = Arc::new(Targets {
        profile: Bytes::from(profile.bytes),
        bomb: gzip_bomb(),
        hits: Mutex::new(HashMap::new()),
        headers: Mutex::new(HashMap::new()),
    });
    let router = axum::Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&targets));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Some((address, targets))
}

async fn start(dir: &Path, remote: &str) -> Running {
    let yaml = format!(
        "extensions:\n  bearertokenauth/out:\n    token: s3cret\n\
         receivers:\n  pprof:\n    remote:\n{remote}\
         exporters:\n  file:\n    path: {}\n    format: otlp\n\
         service:\n  extensions: [bearertokenauth/out]\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        dir.display()
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    service::start(&config).await.unwrap()
}

/// The value of `name` for the series whose labels include `pairs`.
fn value(registry: &Registry, name: &str, pairs: &[(&str, &str)]) -> Option<f64> {
    registry
        .series(name)
        .into_iter()
        .find(|(labels, _)| {
            pairs
                .iter()
                .all(|(k, v)| labels.iter().any(|(key, val)| key == k && val == v))
        })
        .map(|(_, value)| value)
}

fn count(registry: &Registry, name: &str, pairs: &[(&str, &str)]) -> u64 {
    value(registry, name, pairs).unwrap_or(0.0) as u64
}

/// Polls every 50 ms, at most 60 s, until `done`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}

fn written(dir: &Path) -> Vec<ExportProfilesServiceRequest> {
    files_under(dir, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect()
}

fn attribute(request: &ExportProfilesServiceRequest, key: &str) -> Option<String> {
    let resource = request.resource_profiles.first()?.resource.as_ref()?;
    let kv = resource.attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        profbridge_translate::otlp::any_value::Value::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_target_keeps_its_schedule_beside_hostile_ones() {
    let Some((address, targets)) = serve_targets().await else {
        return;
    };
    let dir = TempDir::new("pprof-remote");
    let base = |name: &str| format!("http://{address}/{name}");
    let remote = format!(
        "      collection_interval: 400ms\n      initial_delay: 0s\n      timeout: 2s\n\
         \x20     max_concurrent_scrapes: 3\n      max_profile_size: {MAX_PROFILE}\n      profiles: [goroutine]\n\
         \x20     headers: {{x-scraped-by: test}}\n      auth: {{authenticator: bearertokenauth/out}}\n\
         \x20     targets:\n        - targets: [{healthy}]\n          labels: {{job: checkout, zone: a}}\n\
         \x20       - targets: [{hang}, {fail}, {huge}, {bomb}]\n          labels: {{service_name: hostile}}\n",
        healthy = base("healthy"),
        hang = base("hang"),
        fail = base("fail"),
        huge = base("huge"),
        bomb = base("bomb"),
    );
    let running = start(dir.path(), &remote).await;
    let registry = Arc::clone(&running.metrics);
    let healthy = base("healthy");
    let hang = base("hang");
    let target = |name: &str| base(name);
    let errors = |name: &str, reason: &str| {
        count(
            &registry,
            "profbridge_scraper_errors_total",
            &[("target", &target(name)), ("reason", reason)],
        )
    };
    let scrapes = |name: &str| {
        count(
            &registry,
            "profbridge_scraper_scrapes_total",
            &[("target", &target(name))],
        )
    };
    until(
        "each hostile target failed three times and the hanging one timed out three times",
        || {
            errors("hang", "timeout") >= 3
                && errors("fail", "http_status") >= 3
                && errors("huge", "too_large") >= 3
                && errors("bomb", "too_large") >= 3
        },
    )
    .await;
    let hang_scrapes = scrapes("hang");
    let healthy_scrapes = scrapes("healthy");
    // The hanging target's scrapes each take the 2 s timeout: it gets a
    // turn in six; the healthy one gets every turn.
    assert!(
        healthy_scrapes >= 2 * hang_scrapes,
        "healthy {healthy_scrapes} scrapes, hanging {hang_scrapes}"
    );
    assert!(
        count(
            &registry,
            "profbridge_scraper_skipped_scrapes_total",
            &[("target", &hang)]
        ) >= 2
    );
    assert_eq!(
        count(
            &registry,
            "profbridge_scraper_skipped_scrapes_total",
            &[("target", &healthy)]
        ),
        0
    );
    for reason in [
        "timeout",
        "connect",
        "http_status",
        "too_large",
        "decode",
        "delta",
        "refused",
    ] {
        assert_eq!(errors("healthy", reason), 0, "{reason}");
    }
    assert_eq!(
        value(&registry, "profbridge_scraper_up", &[("target", &healthy)]),
        Some(1.0)
    );
    for name in ["fail", "huge", "bomb"] {
        assert_eq!(
            value(
                &registry,
                "profbridge_scraper_up",
                &[("target", &target(name))]
            ),
            Some(0.0),
            "{name}"
        );
    }
    // The 1 GB body was cut off at the cap: at most the cap and one
    // read's worth per scrape were read.
    let huge_bytes = count(
        &registry,
        "profbridge_scraper_scraped_bytes_total",
        &[("target", &target("huge"))],
    );
    assert!(
        huge_bytes <= scrapes("huge") * (MAX_PROFILE as u64 + (1 << 20)),
        "{huge_bytes} bytes read in {} scrapes",
        scrapes("huge")
    );

    let scraped = written(dir.path());
    assert!(scraped.len() >= 3, "{} files", scraped.len());
    for request in &scraped {
        assert_eq!(
            attribute(request, "service.name").as_deref(),
            Some("checkout")
        );
        assert_eq!(
            attribute(request, "service.instance.id"),
            Some(healthy.clone())
        );
        assert_eq!(attribute(request, "job").as_deref(), Some("checkout"));
        assert_eq!(attribute(request, "zone").as_deref(), Some("a"));
        assert_eq!(
            attribute(request, "profbridge.profile.name").as_deref(),
            Some("goroutine")
        );
    }
    let sent = count(
        &registry,
        "otelcol_receiver_accepted_profile_samples",
        &[("receiver", "pprof"), ("transport", "remote")],
    );
    assert!(sent > 0);
    assert!(targets.hits("healthy") >= 3);
    let headers = targets.headers.lock().unwrap()["healthy"].clone();
    assert_eq!(headers["x-scraped-by"], "test");
    assert_eq!(headers["authorization"], "Bearer s3cret");
    assert!(running.shutdown(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sd_targets_start_and_stop_as_their_file_changes() {
    let Some((address, targets)) = serve_targets().await else {
        return;
    };
    let dir = TempDir::new("pprof-remote-sd");
    let file = dir.path().join("targets.json");
    let base = |name: &str| format!("http://{address}/{name}");
    std::fs::write(
        &file,
        format!(
            r#"[{{"targets": ["{}"], "labels": {{"job": "first"}}}}]"#,
            base("a")
        ),
    )
    .unwrap();
    let remote = format!(
        "      collection_interval: 200ms\n      initial_delay: 0s\n      profiles: [goroutine]\n\
         \x20     file_sd_configs:\n        - files: [{}]\n",
        dir.path().join("*.json").display()
    );
    let running = start(&dir.path().join("out"), &remote).await;
    let registry = Arc::clone(&running.metrics);
    let scrapes = |name: &str| {
        count(
            &registry,
            "profbridge_scraper_scrapes_total",
            &[("target", &base(name))],
        )
    };
    until("a is scraped", || targets.hits("a") >= 2).await;

    std::fs::write(
        &file,
        format!(
            "- targets: [\"{}\"]\n  labels: {{job: second}}\n",
            base("b")
        ),
    )
    .unwrap();
    until("b is scraped and a's series are gone", || {
        scrapes("b") >= 1
            && value(
                &registry,
                "profbridge_scraper_up",
                &[("target", &base("a"))],
            )
            .is_none()
    })
    .await;
    let a_hits = targets.hits("a");
    let b_now = targets.hits("b");
    until("b is scraped three more times", || {
        targets.hits("b") >= b_now + 3
    })
    .await;
    assert_eq!(targets.hits("a"), a_hits, "a is no longer scraped");

    // A file that does not parse keeps the targets it gave last.
    std::fs::write(&file, "[{\"targets\": [unclosed").unwrap();
    until("the bad file is counted", || {
        count(
            &registry,
            "profbridge_scraper_file_sd_errors_total",
            &[("receiver", "pprof")],
        ) >= 1
    })
    .await;
    let b_now = targets.hits("b");
    until("b is still scraped", || targets.hits("b") >= b_now + 2).await;
    assert_eq!(targets.hits("a"), a_hits);
    assert!(running.shutdown(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_the_pipeline_has_no_room_for_are_dropped_and_counted() {
    let Some((address, targets)) = serve_targets().await else {
        return;
    };
    // The only exporter sends to a destination that never answers, and
    // its queue holds one request: from the second profile on, it is full.
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      collection_interval: 300ms\n      initial_delay: 0s\n      profiles: [goroutine]\n\
         \x20     targets:\n        - targets: [http://{address}/healthy]\n\
         exporters:\n  otlphttp:\n    endpoint: http://{address}/hang\n    timeout: 1h\n    sending_queue:\n      queue_size: 1\n      num_consumers: 1\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [otlphttp]\n  telemetry:\n    metrics:\n      address: \"\"\n"
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let registry = Arc::clone(&running.metrics);
    let healthy = format!("http://{address}/healthy");
    until("three scrapes were dropped for want of room", || {
        count(
            &registry,
            "profbridge_scraper_errors_total",
            &[("target", &healthy), ("reason", "refused")],
        ) >= 3
    })
    .await;
    assert!(
        count(
            &registry,
            "profbridge_receiver_refused_requests_total",
            &[
                ("receiver", "pprof"),
                ("transport", "remote"),
                ("reason", "unavailable")
            ],
        ) >= 3
    );
    assert!(targets.hits("hang") >= 1, "the exporter is stuck sending");
    running.shutdown(Duration::from_secs(1)).await;
}

/// A scraped body is held in the pipelines' budget while it arrives, as
/// the receivers hold the bodies sent to them: with a 4 MiB budget, two
/// endless bodies scraped at the same time (each trickling at about 13
/// MB/s) cannot both grow past it; one is cut off as refused (no room)
/// long before `max_profile_size` (64 MiB). (A body alone may pass the
/// budget, as a lone request may.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scraped_body_is_held_in_the_budget_while_it_arrives() {
    let Some((address, _targets)) = serve_targets().await else {
        return;
    };
    let port = address.port();
    let yaml = format!(
        "receivers:\n  pprof:\n    remote:\n      collection_interval: 1s\n      timeout: 20s\n      initial_delay: 0s\n      max_profile_size: 64MiB\n      profiles: [goroutine]\n\
         \x20     targets:\n        - targets: ['http://127.0.0.1:{port}/trickle', 'http://127.0.0.1:{port}/trickle-too']\n\
         exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [pprof]\n      exporters: [nop]\n      queue:\n        max_bytes: 4MiB\n  telemetry:\n    metrics:\n      address: \"\"\n"
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    let registry = Arc::clone(&running.metrics);
    // Either target may be the one cut off.
    let refused = || -> f64 {
        registry
            .series("profbridge_scraper_errors_total")
            .into_iter()
            .filter(|(labels, _)| labels.iter().any(|(k, v)| k == "reason" && v == "refused"))
            .map(|(_, value)| value)
            .sum()
    };
    until("a scrape was cut off for want of room", || refused() >= 1.0).await;
    running.shutdown(Duration::from_secs(1)).await;
}
