//! `extensions: pprof:` serves profbridge's own CPU profile where Go's
//! net/http/pprof serves a Go program's, for `go tool pprof`, as the
//! Collector's pprofextension does; `save_to_file` writes one of the
//! whole run at shutdown.

mod config;
mod http;

use std::path::PathBuf;

pub use crate::sampler::{SamplerError, FREQUENCY_HZ};
pub use config::{PprofConfig, DEFAULT_ENDPOINT};
pub use http::{DEFAULT_SECONDS, MAX_SECONDS};

use super::http_endpoint;
use crate::component::listen::wait_for;
use crate::component::{
    ExtensionContext, ExtensionFactory, ExtensionStartFuture, StartError, StartedExtension,
};
use crate::sampler::Recording;
use profbridge_pprof::{encode, EncodeOptions};

pub struct PprofExtensionFactory;

/// Why `save_to_file` cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SaveToFileError {
    #[error("save_to_file: cannot create {path}: {error}")]
    Create {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("save_to_file: cannot profile the run: {0}")]
    Sampler(SamplerError),
    #[error("save_to_file: cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl ExtensionFactory for PprofExtensionFactory {
    const KIND: &'static str = "pprof";
    type Options = PprofConfig;

    fn start<'a>(
        &'a self,
        options: &'a PprofConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        Box::pin(async move {
            let listener = http_endpoint::bind(&context, &options.endpoint).await?;
            let go_only = options.go_only_options_set();
            if !go_only.is_empty() {
                tracing::warn!(
                    extension = context.id,
                    options = go_only.join(", "),
                    "set Go runtime profiling rates, which a Rust process does not have: no effect"
                );
            }
            let mut started = StartedExtension::default();
            if let Some(path) = options.save_to() {
                started.tasks.push(save_run_to(path, &context)?);
            }
            let what = format!("pprof extension ({})", context.id);
            let router = http::router(context.stopped.clone());
            http_endpoint::serve(
                &context,
                &mut started,
                listener,
                (what, &options.connection),
                router,
            );
            Ok(started)
        })
    }
}

/// Creates `path` and records from now until the extension stops, then
/// writes the profile there.
fn save_run_to(
    path: PathBuf,
    context: &ExtensionContext<'_>,
) -> Result<tokio::task::JoinHandle<()>, StartError> {
    let failed = |error| StartError::extension(context.id, error);
    std::fs::File::create(&path).map_err(|error| {
        failed(SaveToFileError::Create {
            path: path.clone(),
            error,
        })
    })?;
    let recording = Recording::start().map_err(|error| failed(SaveToFileError::Sampler(error)))?;
    let stopped = context.stopped.clone();
    let id = context.id.to_owned();
    Ok(tokio::spawn(async move {
        wait_for(stopped).await;
        let recorded = recording.stop();
        // Written by the blocking task itself: the service stops waiting
        // for an extension after a grace period, the runtime does not
        // stop before its blocking tasks end.
        let _ = tokio::task::spawn_blocking(move || {
            let written = recorded
                .map_err(SaveToFileError::Sampler)
                .and_then(|recorded| {
                    let bytes = encode(&recorded.into_profile(), &EncodeOptions::default());
                    std::fs::write(&path, bytes).map_err(|error| SaveToFileError::Write {
                        path: path.clone(),
                        error,
                    })
                });
            match written {
                Ok(()) => tracing::info!(extension = id, path = %path.display(), "CPU profile of the run written"),
                Err(error) => tracing::error!(extension = id, path = %path.display(), %error, "CPU profile of the run not written"),
            }
        })
        .await;
    }))
}
