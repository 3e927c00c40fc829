//! `self:` — profbridge's own CPU profile, recorded one
//! `collection_interval` after another by the sampler the pprof extension
//! uses, and sent through the pipelines as `service.name: profbridge`.
//! The sampler records once per process: while the pprof extension
//! records (a `/debug/pprof/profile` request, `save_to_file`), an interval
//! is skipped, logged and noted in the receiver's recent errors.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use tokio::sync::watch;

use profbridge_translate::otlp::{int_value, key_value, string_value, KeyValue};

use super::config::SelfSource;
use crate::component::{ReceiverContext, StartedReceiver};
use crate::pipeline::PipelineHandle;
use crate::receivers::from_pprof::{hand_over, parse_estimate, profile_request};
use crate::receivers::intake::{admit, settle, Decision, Outcome};
use crate::sampler::{Recorded, Recording, SamplerError};
use crate::telemetry::ReceiverMetrics;

/// The `service.name` profbridge's own profiles carry.
pub const SERVICE_NAME: &str = "profbridge";

/// Starts recording; its task and start-up line go to `started`.
pub(super) fn start(
    source: &SelfSource,
    context: &ReceiverContext<'_>,
    started: &mut StartedReceiver,
) {
    let own = Own {
        interval: source.collection_interval.0,
        initial_delay: source.initial_delay.0,
        pipelines: context.pipelines.clone(),
        metrics: ReceiverMetrics::new(context.metrics, context.id, "self"),
        resource: Arc::new(resource_attributes()),
        stopped: context.stopped.clone(),
    };
    started.watching.push(format!(
        "{} pprof self source: profbridge's own CPU profile every {:?}",
        context.id, own.interval
    ));
    started.tasks.push(tokio::spawn(own.run()));
}

/// `service.name`, `service.version`, `process.pid` and, when the kernel
/// tells it, `host.name`.
fn resource_attributes() -> Vec<KeyValue> {
    let mut attributes = vec![
        key_value("service.name", string_value(SERVICE_NAME)),
        key_value("service.version", string_value(env!("CARGO_PKG_VERSION"))),
        key_value("process.pid", int_value(i64::from(std::process::id()))),
    ];
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    if !host.trim().is_empty() {
        attributes.push(key_value("host.name", string_value(host.trim())));
    }
    attributes
}

struct Own {
    interval: Duration,
    initial_delay: Duration,
    pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `self`.
    metrics: ReceiverMetrics,
    resource: Arc<Vec<KeyValue>>,
    stopped: watch::Receiver<bool>,
}

impl Own {
    async fn run(self) {
        if !self.wait(self.initial_delay).await {
            return;
        }
        let mut recording = self.record();
        loop {
            if !self.wait(self.interval).await {
                return;
            }
            // Stopped before the next starts: the sampler records once per process.
            let recorded = recording.take().map(Recording::stop);
            recording = self.record();
            match recorded {
                Some(Ok(recorded)) => self.send(recorded).await,
                Some(Err(error)) => self.cannot_record(&error),
                None => {}
            }
        }
    }

    /// Sleeps for `duration`; false when the collector stops first.
    async fn wait(&self, duration: Duration) -> bool {
        let mut stopped = self.stopped.clone();
        if *stopped.borrow() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(duration) => true,
            changed = stopped.changed() => changed.is_ok() && !*stopped.borrow(),
        }
    }

    fn record(&self) -> Option<Recording> {
        Recording::start()
            .map_err(|error| self.cannot_record(&error))
            .ok()
    }

    fn cannot_record(&self, error: &SamplerError) {
        self.metrics
            .note_error(&format!("cannot record profbridge's CPU profile: {error}"));
        let hint = match error {
            SamplerError::InUse => "the pprof extension is recording (a /debug/pprof/profile request or save_to_file); this interval is skipped",
            SamplerError::Sampler(_) => "this interval is skipped",
        };
        tracing::warn!(receiver = %self.metrics.receiver, %error, hint, "cannot record profbridge's own CPU profile");
    }

    /// Resolves the recording off the async workers and hands its
    /// profile to the pipelines; one without samples is not sent.
    async fn send(&self, recorded: Recorded) {
        let pipelines = Arc::clone(&self.pipelines);
        let metrics = self.metrics.clone();
        let resource = Arc::clone(&self.resource);
        let handed = tokio::task::spawn_blocking(move || -> Option<Decision> {
            let profile = recorded.into_profile();
            if profile.sample.is_empty() {
                tracing::debug!(receiver = %metrics.receiver, "no CPU samples this interval; nothing sent");
                return None;
            }
            let request = match profile_request(&profile, &resource) {
                Ok(request) => request,
                Err(error) => {
                    metrics.note_error(&format!("profbridge's CPU profile does not translate: {error}"));
                    tracing::error!(receiver = %metrics.receiver, %error, "profbridge's CPU profile does not translate to OTLP");
                    return None;
                }
            };
            let admission = admit(&pipelines, parse_estimate(request.encoded_len()), &metrics)?;
            Some(hand_over(request, &pipelines, &metrics, admission))
        })
        .await;
        let Ok(Some(decision)) = handed else {
            return;
        };
        match settle(decision, &self.metrics).await {
            Outcome::Accepted { .. } => {
                tracing::debug!(receiver = %self.metrics.receiver, "sent profbridge's CPU profile");
            }
            Outcome::Invalid(reason) => {
                tracing::error!(receiver = %self.metrics.receiver, reason, "profbridge's CPU profile was refused as invalid");
            }
            // Counted and logged by the intake; the next interval brings another.
            Outcome::Unavailable => {}
        }
    }
}
