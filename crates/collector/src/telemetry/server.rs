//! The self-telemetry HTTP endpoint: `GET /metrics` (Prometheus text),
//! `GET /health` (200 while the process runs) and `GET /ready` (200 once
//! the receivers listen, 503 once shutdown begins).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::exposition::CONTENT_TYPE;
use super::metrics::Registry;

/// Where the collector is in its life, for `/ready` and the
/// `health_check` extension.
#[derive(Debug, Default)]
pub struct Readiness {
    phase: AtomicU8,
    ready_since: OnceLock<SystemTime>,
}

/// A phase of the collector's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Starting,
    /// Every receiver listens.
    Ready,
    ShuttingDown,
}

const STARTING: u8 = 0;
const READY: u8 = 1;
const SHUTTING_DOWN: u8 = 2;

impl Readiness {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The receivers listen.
    pub fn set_ready(&self) {
        let _ = self.ready_since.set(SystemTime::now());
        let _ = self
            .phase
            .compare_exchange(STARTING, READY, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Shutdown began; this is final.
    pub fn set_shutting_down(&self) {
        self.phase.store(SHUTTING_DOWN, Ordering::Release);
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            READY => Phase::Ready,
            SHUTTING_DOWN => Phase::ShuttingDown,
            _ => Phase::Starting,
        }
    }

    /// When it became ready, if it did.
    pub fn ready_since(&self) -> Option<SystemTime> {
        self.ready_since.get().copied()
    }

    fn status(&self) -> (StatusCode, &'static str) {
        match self.phase() {
            Phase::Ready => (StatusCode::OK, "ready"),
            Phase::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting down"),
            Phase::Starting => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
        }
    }
}

#[derive(Clone)]
struct Telemetry {
    registry: Option<Arc<Registry>>,
    readiness: Arc<Readiness>,
}

/// The endpoint's routes; without a registry (metrics `level: none`),
/// `/metrics` answers 404 and the probes still answer.
pub fn router(registry: Option<Arc<Registry>>, readiness: Arc<Readiness>) -> Router {
    let router = Router::new();
    let router = if registry.is_some() {
        router.route("/metrics", get(metrics))
    } else {
        router
    };
    router
        .route("/health", get(health))
        .route("/ready", get(ready))
        .with_state(Telemetry {
            registry,
            readiness,
        })
}

async fn metrics(State(telemetry): State<Telemetry>) -> Response {
    let Some(registry) = telemetry.registry else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let body = tokio::task::spawn_blocking(move || registry.render()).await;
    match body {
        Ok(body) => (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

async fn health() -> &'static str {
    "ok"
}

async fn ready(State(telemetry): State<Telemetry>) -> (StatusCode, &'static str) {
    telemetry.readiness.status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_goes_from_starting_to_ready_to_shutting_down() {
        let readiness = Readiness::new();
        assert_eq!(readiness.status().0, StatusCode::SERVICE_UNAVAILABLE);
        readiness.set_ready();
        assert_eq!(readiness.status(), (StatusCode::OK, "ready"));
        readiness.set_shutting_down();
        readiness.set_ready();
        assert_eq!(
            readiness.status(),
            (StatusCode::SERVICE_UNAVAILABLE, "shutting down")
        );
    }
}
