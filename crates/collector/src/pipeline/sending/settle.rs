//! How a delivery ends: counted, logged, and a failed request written to
//! the dead-letter directory.

use std::sync::Arc;
use std::time::Duration;

use super::dead_letter::DeadLetter;
use super::retry::{stopped, Delivery};
use super::shared::Shared;
use crate::pipeline::{ExportError, Profiles};
use crate::telemetry::recent_errors::profiles_phrase;

impl Shared {
    /// Counts and logs how a delivery ended, writing failures to the
    /// dead-letter directory. Returns whether the request is finished
    /// with; with `keep` (a persistent queue) a request stopped by
    /// shutdown, or that failed and could not be dead-lettered, is not,
    /// and stays queued.
    pub(super) async fn settle(
        self: &Arc<Self>,
        batch: &Arc<Profiles>,
        delivery: Delivery,
        keep: bool,
    ) -> bool {
        let profiles = batch.profile_count();
        let samples = batch.sample_count();
        let reason = match delivery {
            Delivery::Failed {
                error: ExportError::PartlyUndeliverable { unsent, cause },
                ..
            } => {
                let (unsent_profiles, unsent_samples) =
                    (unsent.profile_count(), unsent.sample_count());
                self.metrics.exported(
                    profiles.saturating_sub(unsent_profiles),
                    samples.saturating_sub(unsent_samples),
                    true,
                );
                self.metrics
                    .exported(unsent_profiles, unsent_samples, false);
                return self
                    .fail(&unsent, unsent_profiles, &cause.to_string(), keep)
                    .await;
            }
            Delivery::Sent(sent) => {
                self.metrics.exported(profiles, samples, true);
                if let Some(body) = sent.body() {
                    self.metrics.sent_body(body);
                }
                return true;
            }
            Delivery::Stopped if keep => return false,
            Delivery::Stopped => "shutdown stopped its export".to_owned(),
            Delivery::Failed { error, attempts } if error.is_retryable() => {
                format!("{error}; gave up after {attempts} attempts")
            }
            Delivery::Failed { error, .. } => error.to_string(),
        };
        self.metrics.exported(profiles, samples, false);
        self.fail(batch, profiles, &reason, keep).await
    }

    /// Notes and logs that `failed` could not be exported, and writes it
    /// to the dead-letter directory if there is one.
    async fn fail(
        self: &Arc<Self>,
        failed: &Arc<Profiles>,
        profiles: usize,
        reason: &str,
        keep: bool,
    ) -> bool {
        self.metrics.note_error(&format!(
            "export of {} failed: {reason}",
            profiles_phrase(profiles)
        ));
        let Some(dead_letter) = &self.dead_letter else {
            tracing::error!(exporter = self.name(), profiles, %reason, "export failed; request dropped");
            return true;
        };
        self.save_dead_letter(dead_letter, failed, reason, keep)
            .await
    }

    /// Writes a failed request to the dead-letter directory, trying again
    /// with backoff while that fails (a full disk), until it is written or
    /// the exporter stops. Then a persistent queue (`keep`) keeps the
    /// request for the next start, and a memory queue loses it (logged).
    /// Returns whether the request is finished with.
    async fn save_dead_letter(
        &self,
        dead_letter: &Arc<DeadLetter>,
        batch: &Arc<Profiles>,
        reason: &str,
        keep: bool,
    ) -> bool {
        let profiles = batch.profile_count();
        let mut stop = self.stop.subscribe();
        let mut pause = DEAD_LETTER_FIRST_PAUSE;
        loop {
            let (writer, request) = (Arc::clone(dead_letter), Arc::clone(batch));
            let written = tokio::task::spawn_blocking(move || writer.write(&request))
                .await
                .map_err(std::io::Error::other)
                .and_then(|written| written);
            let error = match written {
                Ok(path) => {
                    tracing::error!(
                        exporter = self.name(),
                        profiles,
                        %reason,
                        dead_letter = %path.display(),
                        "export failed; request saved to the dead-letter directory"
                    );
                    return true;
                }
                Err(error) => error,
            };
            self.metrics.dead_letter_write_failed();
            self.metrics.note_error(&format!(
                "cannot write a failed request to the dead-letter directory {}: {error}",
                dead_letter.dir().display()
            ));
            let stopping = *stop.borrow();
            tracing::error!(
                exporter = self.name(),
                profiles,
                %reason,
                dead_letter = %dead_letter.dir().display(),
                %error,
                retry_in = ?(!stopping).then_some(pause),
                kept_in_queue = keep,
                "export failed, and the request could not be saved to the dead-letter directory"
            );
            if stopping {
                return !keep;
            }
            tokio::select! {
                biased;
                () = stopped(&mut stop) => return !keep,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(DEAD_LETTER_MAX_PAUSE);
        }
    }
}

/// How long to wait before writing a dead letter again, at first and at
/// most.
const DEAD_LETTER_FIRST_PAUSE: Duration = Duration::from_secs(1);
const DEAD_LETTER_MAX_PAUSE: Duration = Duration::from_secs(30);
