//! Watched files, the engine of the file receiver and of the pprof
//! receiver's `file` source: polls include globs for profile files in any
//! format profbridge reads, and delivers each new or changed file once,
//! when its size and modification time held still across one poll. A
//! checkpoint written after the pipelines confirmed a file keeps a restart
//! from sending it again; a file that cannot be read is logged, moved to
//! the failed folder and never read again unless it changes.

mod checkpoint;
mod dispose;
mod load;
mod scan;
pub mod settings;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use glob::Pattern;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use profbridge_pprof::DEFAULT_MAX_INPUT_BYTES;
use profbridge_translate::otlp::KeyValue;

use self::checkpoint::{Checkpoint, CheckpointError, Disposition, FileIdentity};
use self::settings::{AfterSuccess, StartAt, WatchSettings};
use super::from_pprof::{hand_over, parse_estimate, string_attributes};
use super::intake::{admit, settle, Outcome};
use crate::pipeline::PipelineHandle;
use crate::telemetry::{ReceiverMetrics, RefusedReason};

/// The start-up line: what `what` of receiver `name` watches.
pub fn describe(name: &str, what: &str, settings: &WatchSettings) -> String {
    format!(
        "{name} {what} watching {} (checkpoint {})",
        settings.include.join(", "),
        settings.checkpoint.display()
    )
}

/// Why watching cannot start, or keep its checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("exclude {pattern:?}: {error}")]
    Exclude {
        pattern: String,
        error: glob::PatternError,
    },
    #[error("cannot write checkpoint {}: {error}", path.display())]
    SaveCheckpoint {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Loads the checkpoint and starts polling until `stopped` turns true.
pub fn start(
    settings: &WatchSettings,
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
    stopped: watch::Receiver<bool>,
) -> Result<JoinHandle<()>, WatchError> {
    let (checkpoint, existed) = Checkpoint::load(&settings.checkpoint)?;
    let exclude = settings
        .exclude
        .iter()
        .map(|pattern| {
            Pattern::new(pattern).map_err(|error| WatchError::Exclude {
                pattern: pattern.clone(),
                error,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut skip: Vec<PathBuf> = [&settings.failed_dir, &settings.move_to]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    skip.push(checkpoint.path().to_path_buf());
    skip.push(checkpoint::temporary_path(checkpoint.path()));
    let mut watcher = Watcher {
        settings: settings.clone(),
        exclude,
        skip,
        checkpoint,
        pending: HashMap::new(),
        pipelines,
        metrics,
        runtime: tokio::runtime::Handle::current(),
        stopped,
    };
    if !existed && settings.start_at == StartAt::End {
        watcher.skip_existing()?;
    }
    Ok(tokio::spawn(watcher.run()))
}

struct Watcher {
    settings: WatchSettings,
    exclude: Vec<Pattern>,
    /// The receiver's own files and folders, never read.
    skip: Vec<PathBuf>,
    checkpoint: Checkpoint,
    /// Files seen at the last poll, not yet read: read when unchanged.
    pending: HashMap<PathBuf, FileIdentity>,
    pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `file`.
    metrics: ReceiverMetrics,
    runtime: tokio::runtime::Handle,
    stopped: watch::Receiver<bool>,
}

impl Watcher {
    async fn run(mut self) {
        let interval = self.settings.poll_interval;
        let receiver = Arc::clone(&self.metrics.receiver);
        let mut stopped = self.stopped.clone();
        tokio::select! {
            () = tokio::time::sleep(self.settings.initial_delay) => {}
            () = crate::component::listen::wait_for(stopped.clone()) => return,
        }
        loop {
            self = match tokio::task::spawn_blocking(move || {
                self.poll();
                self
            })
            .await
            {
                Ok(watcher) => watcher,
                Err(error) => {
                    tracing::error!(receiver = %receiver, %error, "stopped watching files");
                    return;
                }
            };
            if *stopped.borrow() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                changed = stopped.changed() => if changed.is_err() || *stopped.borrow() {
                    return;
                },
            }
        }
    }

    fn stopping(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Records every file there now as seen, for `start_at: end`.
    fn skip_existing(&mut self) -> Result<(), WatchError> {
        let (found, _) = scan::scan(&self.settings.include, &self.exclude, &self.skip);
        for (path, identity) in &found {
            self.checkpoint
                .record(&scan::key(path), *identity, Disposition::Skipped);
        }
        self.save_checkpoint()
    }

    fn poll(&mut self) {
        let (found, problems) = scan::scan(&self.settings.include, &self.exclude, &self.skip);
        for problem in problems {
            tracing::warn!(receiver = %self.metrics.receiver, problem, "cannot look at a watched path");
        }
        self.checkpoint
            .retain(|key| found.contains_key(Path::new(key)));
        self.pending.retain(|path, _| found.contains_key(path));
        for (path, identity) in found {
            if self.stopping() {
                break;
            }
            match self.checkpoint.get(&scan::key(&path)) {
                Some((done, state)) if done == identity => {
                    // A crash may have come between the checkpoint and this.
                    if state == Disposition::Sent {
                        self.after_success(&path);
                    }
                    continue;
                }
                _ => {}
            }
            if self.pending.get(&path) == Some(&identity) {
                self.pending.remove(&path);
                self.deliver(&path, identity);
            } else {
                self.pending.insert(path, identity);
            }
        }
        if let Err(reason) = self.save_checkpoint() {
            tracing::error!(receiver = %self.metrics.receiver, %reason, "cannot save the checkpoint");
        }
    }

    fn deliver(&mut self, path: &Path, identity: FileIdentity) {
        let bytes = match load::read_limited(path, DEFAULT_MAX_INPUT_BYTES) {
            Ok(bytes) => bytes,
            Err(reason) => return self.fail(path, identity, &reason.to_string()),
        };
        if u64::try_from(bytes.len()).ok() != Some(identity.size) {
            // Written to since the last poll: wait for it to settle again.
            return;
        }
        let Some(admission) = admit(&self.pipelines, parse_estimate(bytes.len()), &self.metrics)
        else {
            self.pending.insert(path.to_path_buf(), identity);
            return;
        };
        let request = match load::file_request(
            &bytes,
            self.settings.format,
            &self.resource_attributes(path),
            identity.mtime_ns,
            &self.metrics,
        ) {
            Ok(request) => request,
            Err(reason) => {
                self.metrics.refused_request(RefusedReason::Invalid);
                return self.fail(path, identity, &reason.to_string());
            }
        };
        drop(bytes);
        let decision = hand_over(request, &self.pipelines, &self.metrics, admission);
        match self.runtime.block_on(settle(decision, &self.metrics)) {
            Outcome::Accepted { .. } => {
                self.checkpoint
                    .record(&scan::key(path), identity, Disposition::Sent);
                if let Err(reason) = self.save_checkpoint() {
                    tracing::error!(receiver = %self.metrics.receiver, %reason, "cannot save the checkpoint; the file may be sent again after a restart");
                }
                tracing::info!(receiver = %self.metrics.receiver, path = %path.display(), "delivered a profile file");
                self.after_success(path);
            }
            Outcome::Invalid(reason) => self.fail(path, identity, &reason),
            Outcome::Unavailable => {
                self.pending.insert(path.to_path_buf(), identity);
            }
        }
    }

    fn resource_attributes(&self, path: &Path) -> Vec<KeyValue> {
        let configured = self
            .settings
            .resource_attributes
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()));
        let service = load::service_name(path, self.settings.service_name_from)
            .map(|name| ("service.name".to_owned(), name));
        string_attributes(configured.chain(service))
    }

    /// Deletes or moves a delivered file, as `after_success` says; it is
    /// then forgotten.
    fn after_success(&mut self, path: &Path) {
        let done = match (self.settings.after_success, &self.settings.move_to) {
            (AfterSuccess::Delete, _) => std::fs::remove_file(path).map(|()| None),
            (AfterSuccess::Move, Some(dir)) => dispose::move_into(path, dir).map(Some),
            _ => return,
        };
        match done {
            Ok(_) => self.checkpoint.forget(&scan::key(path)),
            Err(error) => tracing::warn!(
                receiver = %self.metrics.receiver,
                path = %path.display(),
                %error,
                "delivered a file but cannot delete or move it; trying again at the next poll"
            ),
        }
    }

    /// Logs why, moves the file to the failed folder, and records it so
    /// that it is not read again.
    fn fail(&mut self, path: &Path, identity: FileIdentity, reason: &str) {
        self.metrics
            .note_error(&format!("cannot deliver {}: {reason}", path.display()));
        let dir = match &self.settings.failed_dir {
            Some(dir) => dir.clone(),
            None => path
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join(".failed"),
        };
        match dispose::move_into(path, &dir) {
            Ok(moved_to) => tracing::error!(
                receiver = %self.metrics.receiver,
                path = %path.display(),
                reason,
                moved_to = %moved_to.display(),
                "cannot deliver a profile file; moved it aside"
            ),
            Err(error) => tracing::error!(
                receiver = %self.metrics.receiver,
                path = %path.display(),
                reason,
                %error,
                "cannot deliver a profile file, nor move it aside; it is not read again unless it changes"
            ),
        }
        self.checkpoint
            .record(&scan::key(path), identity, Disposition::Failed);
    }

    fn save_checkpoint(&mut self) -> Result<(), WatchError> {
        self.checkpoint
            .save()
            .map_err(|error| WatchError::SaveCheckpoint {
                path: self.checkpoint.path().to_path_buf(),
                error,
            })
    }
}
