//! The endpoints, where Go's net/http/pprof has them: `/debug/pprof/`
//! (the index), `/debug/pprof/profile?seconds=N` (a CPU profile, gzipped
//! protobuf) and `/debug/pprof/cmdline`. What only a Go process has, or
//! what the allocator does not record, answers 404 and says why.

use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use profbridge_pprof::{encode, EncodeOptions};
use serde::Deserialize;
use tokio::sync::watch;

use crate::component::listen::wait_for;
use crate::sampler::{Recording, SamplerError};

/// How long a profile lasts when `seconds` is not given, as in Go.
pub const DEFAULT_SECONDS: u64 = 30;
/// The longest profile one request may ask for.
pub const MAX_SECONDS: u64 = 300;

/// What only Go programs, or allocators that sample, can serve.
const UNAVAILABLE: &[(&str, &str)] = &[
    (
        "heap",
        "profbridge's allocator (mimalloc) records no allocation sites, so there is no heap profile; \
         its memory shows on the telemetry endpoint's /metrics (profbridge_process_memory_rss_bytes)",
    ),
    (
        "allocs",
        "profbridge's allocator (mimalloc) records no allocation sites, so there is no allocation profile; \
         its memory shows on the telemetry endpoint's /metrics (profbridge_process_memory_rss_bytes)",
    ),
    ("block", "blocking profiles are the Go runtime's; profbridge is not a Go program"),
    ("mutex", "mutex contention profiles are the Go runtime's; profbridge is not a Go program"),
    ("goroutine", "goroutines are the Go runtime's; profbridge is not a Go program"),
    ("threadcreate", "thread creation profiles are the Go runtime's; profbridge is not a Go program"),
    ("trace", "execution traces are the Go runtime's; profbridge is not a Go program"),
    (
        "symbol",
        "the profiles served here name their functions already; there is nothing to look up",
    ),
];

#[derive(Clone)]
struct Served {
    stopped: watch::Receiver<bool>,
}

/// The routes, served until `stopped` turns true (a profile being
/// recorded then ends early).
pub fn router(stopped: watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/debug/pprof", get(moved_to_index))
        .route("/debug/pprof/", get(index))
        .route("/debug/pprof/profile", get(cpu_profile))
        .route("/debug/pprof/cmdline", get(cmdline))
        .route("/debug/pprof/{name}", get(unavailable))
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found\n") })
        .with_state(Served { stopped })
}

#[derive(Deserialize)]
struct ProfileQuery {
    seconds: Option<String>,
}

async fn cpu_profile(State(served): State<Served>, Query(query): Query<ProfileQuery>) -> Response {
    let seconds = match seconds(query.seconds.as_deref()) {
        Ok(seconds) => seconds,
        Err(bad) => return pprof_error(StatusCode::BAD_REQUEST, &bad.to_string()),
    };
    let recording = match Recording::start() {
        Ok(recording) => recording,
        Err(error) => {
            return pprof_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Could not enable CPU profiling: {error}"),
            )
        }
    };
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(seconds)) => {}
        () = wait_for(served.stopped.clone()) => {}
    }
    match encoded(recording).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"profile\"",
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        Err(error) => pprof_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Could not finish the CPU profile: {error}"),
        ),
    }
}

/// Stops `recording`; its profile, gzipped, resolved off the async threads.
pub async fn encoded(recording: Recording) -> Result<Vec<u8>, ProfileError> {
    let recorded = recording.stop()?;
    tokio::task::spawn_blocking(move || encode(&recorded.into_profile(), &EncodeOptions::default()))
        .await
        .map_err(|_| ProfileError::Interrupted)
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    #[error("building the profile was interrupted")]
    Interrupted,
}

/// Why `seconds` was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadSeconds {
    #[error("seconds={0:?} is not a whole number of seconds from 1 to {MAX_SECONDS}")]
    NotAWholeNumber(String),
    #[error("profile duration exceeds the {MAX_SECONDS} seconds profbridge allows")]
    TooLong,
}

/// `seconds`: absent or empty for the default; a whole number from 1 to
/// [`MAX_SECONDS`] otherwise.
fn seconds(given: Option<&str>) -> Result<u64, BadSeconds> {
    let Some(given) = given.filter(|given| !given.is_empty()) else {
        return Ok(DEFAULT_SECONDS);
    };
    match given.parse::<u64>() {
        Ok(0) | Err(_) => Err(BadSeconds::NotAWholeNumber(given.to_owned())),
        Ok(seconds) if seconds > MAX_SECONDS => Err(BadSeconds::TooLong),
        Ok(seconds) => Ok(seconds),
    }
}

/// An error as Go's net/http/pprof sends it.
fn pprof_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::HeaderName::from_static("x-go-pprof"), "1"),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

async fn unavailable(Path(name): Path<String>) -> Response {
    let message = UNAVAILABLE
        .iter()
        .find(|(unavailable, _)| *unavailable == name)
        .map_or_else(
            || "Unknown profile".to_owned(),
            |(_, why)| format!("{name}: not available: {why}"),
        );
    pprof_error(StatusCode::NOT_FOUND, &message)
}

/// The command line, its arguments separated by NUL bytes, as Go sends it.
async fn cmdline() -> Response {
    let arguments: Vec<String> = std::env::args().collect();
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        arguments.join("\0"),
    )
        .into_response()
}

/// As Go's mux answers a folder's path without its `/`.
async fn moved_to_index() -> Response {
    (
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, "/debug/pprof/")],
    )
        .into_response()
}

async fn index() -> Response {
    let mut unavailable = String::new();
    for (name, why) in UNAVAILABLE {
        unavailable.push_str(&format!(
            "<tr><td>{name}</td><td>{}</td></tr>\n",
            escape(why)
        ));
    }
    let page = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n\
         <h1>/debug/pprof/</h1>\n\
         <p>profbridge's own profiles, in pprof format: \
         <code>go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=30</code></p>\n\
         <table>\n<tr><th>Profile</th><th>What it is</th></tr>\n\
         <tr><td><a href=\"profile?seconds={DEFAULT_SECONDS}\">profile</a></td>\
         <td>CPU profile: where profbridge spends its CPU time, sampled {hz} times a CPU second. \
         <code>?seconds=N</code> sets how long it records (default {DEFAULT_SECONDS}, at most {MAX_SECONDS}); \
         one profile records at a time.</td></tr>\n\
         <tr><td><a href=\"cmdline\">cmdline</a></td>\
         <td>The command line of the running process, its arguments separated by NUL bytes.</td></tr>\n\
         </table>\n\
         <h2>Not available</h2>\n<table>\n{unavailable}</table>\n</body>\n</html>\n",
        hz = crate::sampler::FREQUENCY_HZ,
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_default_to_30_and_are_bounded() {
        assert_eq!(seconds(None), Ok(DEFAULT_SECONDS));
        assert_eq!(seconds(Some("")), Ok(DEFAULT_SECONDS));
        assert_eq!(seconds(Some("2")), Ok(2));
        assert_eq!(seconds(Some(&MAX_SECONDS.to_string())), Ok(MAX_SECONDS));
        for bad in ["0", "-1", "1.5", "ten", &(MAX_SECONDS + 1).to_string()] {
            assert!(seconds(Some(bad)).is_err(), "{bad} was accepted");
        }
    }
}
