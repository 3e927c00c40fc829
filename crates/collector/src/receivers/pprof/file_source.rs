//! `file:` — the file receiver's engine (receivers/watched_files/) run on
//! the source's settings: each file the glob matches delivered once per
//! change, with a checkpoint.

use super::config::FileSource;
use crate::component::{ReceiverContext, StartError, StartedReceiver};
use crate::receivers::watched_files;
use crate::telemetry::ReceiverMetrics;

/// Starts watching; its task and start-up line go to `started`.
pub(super) fn start(
    source: &FileSource,
    context: &ReceiverContext<'_>,
    started: &mut StartedReceiver,
) -> Result<(), StartError> {
    let id = context.id;
    let settings = source.watch_settings(id);
    let metrics = ReceiverMetrics::new(context.metrics, id, "file");
    let watcher = watched_files::start(
        &settings,
        context.pipelines.clone(),
        metrics,
        context.stopped.clone(),
    )
    .map_err(|reason| StartError::receiver(id, reason))?;
    started.tasks.push(watcher);
    started
        .watching
        .push(watched_files::describe(id, "pprof file source", &settings));
    Ok(())
}
