//! `receivers: file:` in the registry.

use super::config::FileReceiverConfig;
use crate::component::{
    ReceiverContext, ReceiverFactory, StartError, StartFuture, StartedReceiver,
};
use crate::receivers::watched_files;
use crate::telemetry::ReceiverMetrics;

pub struct FileReceiverFactory;

impl ReceiverFactory for FileReceiverFactory {
    const KIND: &'static str = "file";
    type Options = FileReceiverConfig;

    fn start<'a>(
        &'a self,
        options: &'a FileReceiverConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        Box::pin(async move {
            let name = context.id;
            let metrics = ReceiverMetrics::new(context.metrics, name, "file");
            let settings = options.watch_settings(name);
            let watcher =
                watched_files::start(&settings, context.pipelines, metrics, context.stopped)
                    .map_err(|reason| StartError::receiver(name, reason))?;
            Ok(StartedReceiver {
                tasks: vec![watcher],
                listening: Vec::new(),
                watching: vec![watched_files::describe(name, "file receiver", &settings)],
            })
        })
    }
}
