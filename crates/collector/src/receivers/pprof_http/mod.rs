//! The HTTP front end the pprof and Pyroscope receivers share: starting
//! their listener, the body limit while streaming and after
//! Content-Encoding, conversion on the blocking pool, the receivers'
//! intake (admission, validation, queueing, confirmation), and the
//! status codes.

mod body;
mod reply;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;

use profbridge_translate::otlp::ExportProfilesServiceRequest;

pub(crate) use reply::Failure;

use super::admitted_body::{drain, read_admitted, BodyBudget, BodyError};
use super::from_pprof::{hand_over, parse_estimate};
use super::intake::{settle, Decision, Outcome};
use crate::component::listen::Server;
use crate::component::{ReceiverContext, StartError, StartedReceiver};
use crate::net::{serve_router, ConnectionLimits, HttpLimits};
use crate::pipeline::PipelineHandle;
use crate::protocol::admission::declared_length;
use crate::settings::server::HttpListener;
use crate::telemetry::{ReceiverMetrics, RefusedReason};
use crate::tls::{protect_router, Security};

/// What one receiver hands its requests to.
#[derive(Clone)]
pub(crate) struct Intake {
    pub pipelines: Arc<[PipelineHandle]>,
    /// Labelled with the receiver id and transport `http`.
    pub metrics: ReceiverMetrics,
    pub max_body: usize,
    /// How long a body may take to arrive.
    pub read_timeout: std::time::Duration,
    /// The listener's connection and HTTP limits.
    pub limits: (ConnectionLimits, HttpLimits),
}

impl Intake {
    /// What a receiver listening with `listener` hands its requests to;
    /// `unwritten` is the listener's cap when it leaves `max_connections`
    /// out.
    pub fn new(
        listener: &HttpListener,
        unwritten: usize,
        pipelines: Arc<[PipelineHandle]>,
        metrics: ReceiverMetrics,
    ) -> Self {
        Self {
            pipelines,
            metrics,
            max_body: usize::try_from(listener.server.max_request_body_size.0)
                .unwrap_or(usize::MAX),
            read_timeout: listener.server.read_timeout.0,
            limits: crate::net::receiver_limits(&listener.connection, unwritten),
        }
    }

    /// Reads the body, undoes its Content-Encoding, converts it with
    /// `convert` and queues the result; answers `accepted` when every
    /// pipeline took it.
    pub async fn handle<F>(
        &self,
        headers: &HeaderMap,
        body: Body,
        accepted: StatusCode,
        convert: F,
    ) -> Response
    where
        F: FnOnce(Vec<u8>) -> Result<ExportProfilesServiceRequest, Failure> + Send + 'static,
    {
        let handled = self
            .handle_with(headers, body, move |raw| Ok((convert(raw)?, ())))
            .await;
        match handled {
            Handled::Reached(outcome, _) => reply::outcome_response(outcome, accepted),
            Handled::Refused(failure) => failure.response(),
            Handled::Broken(message) => reply::text(StatusCode::INTERNAL_SERVER_ERROR, &message),
        }
    }

    /// What [`Self::handle`] does, leaving the answer to the caller:
    /// `convert` also returns what the answer needs to know besides the
    /// request (`None` when the request was refused before `convert` ran,
    /// for a full pipeline). Refusals are counted and logged.
    pub async fn handle_with<F, T>(&self, headers: &HeaderMap, body: Body, convert: F) -> Handled<T>
    where
        F: FnOnce(Vec<u8>) -> Result<(ExportProfilesServiceRequest, T), Failure> + Send + 'static,
        T: Send + 'static,
    {
        let encoding = match body::content_encoding(headers) {
            Ok(encoding) => encoding,
            Err(failure) => return self.refused(failure),
        };
        // The limit holds while the body streams in: nothing past it is
        // buffered, and what is buffered is held in the pipelines' budgets.
        let mut body = body;
        let deadline = tokio::time::Instant::now() + self.read_timeout;
        let budget = BodyBudget {
            pipelines: &self.pipelines,
            metrics: &self.metrics,
            limit: self.max_body,
            deadline,
            timeout: self.read_timeout,
        };
        let (bytes, mut admission) =
            match read_admitted(&mut body, declared_length(headers), &budget).await {
                Ok(read) => read,
                Err(BodyError::TooLarge { .. }) => {
                    return self.refused(Failure::TooLarge(format!(
                        "the body is larger than max_request_body_size ({} bytes)",
                        self.max_body
                    )))
                }
                Err(BodyError::Unavailable) => {
                    // Counted by the admission; the rest is read and
                    // dropped so that the client gets the answer.
                    drain(&mut body, self.max_body, deadline).await;
                    return Handled::Reached(Outcome::Unavailable, None);
                }
                Err(error @ BodyError::TimedOut(_)) => {
                    return self.refused(Failure::TimedOut(format!("{error} (read_timeout)")))
                }
                Err(error @ BodyError::Failed(_)) => {
                    return self.refused(Failure::BadRequest(error.to_string()))
                }
            };
        let (pipelines, metrics, max_body) = (
            Arc::clone(&self.pipelines),
            self.metrics.clone(),
            self.max_body,
        );
        let handled = tokio::task::spawn_blocking(move || {
            let raw = body::decode_body(encoding, &bytes, max_body)?;
            drop(bytes);
            // The body's bytes are held already; this grows the hold to
            // what parsing needs.
            if !admission.cover_in(&pipelines, parse_estimate(raw.len()), &metrics) {
                return Ok((Decision::done(Outcome::Unavailable), None));
            }
            let (request, extra) = convert(raw)?;
            Ok((
                hand_over(request, &pipelines, &metrics, admission),
                Some(extra),
            ))
        })
        .await;
        match handled {
            Ok(Ok((decision, extra))) => {
                Handled::Reached(settle(decision, &self.metrics).await, extra)
            }
            Ok(Err(failure)) => self.refused(failure),
            Err(join) => Handled::Broken(join.to_string()),
        }
    }

    fn refused<T>(&self, failure: Failure) -> Handled<T> {
        self.note_refusal(&failure);
        Handled::Refused(failure)
    }

    /// Counts and logs a request refused before its profiles could be
    /// counted, and answers it.
    pub fn refuse(&self, failure: &Failure) -> Response {
        self.note_refusal(failure);
        failure.response()
    }

    /// Counts and logs a request refused before its profiles could be
    /// counted.
    pub fn note_refusal(&self, failure: &Failure) {
        self.metrics.refused_request(RefusedReason::Invalid);
        self.metrics
            .note_refusal(RefusedReason::Invalid, failure.message());
        tracing::warn!(
            receiver = %self.metrics.receiver,
            transport = self.metrics.transport,
            reason = "invalid",
            detail = failure.message(),
            "refused a request that could not be read"
        );
    }
}

/// How a request went through [`Intake::handle_with`].
pub(crate) enum Handled<T> {
    /// It reached the intake (or was refused for a full pipeline before
    /// `convert` ran: `None`).
    Reached(Outcome, Option<T>),
    /// Refused before the intake: unreadable, too large, badly encoded.
    Refused(Failure),
    /// The conversion task failed.
    Broken(String),
}

/// Starts a receiver that serves `routes` on `listener`, announced as
/// `what` in the start-up message.
pub(crate) async fn start(
    context: ReceiverContext<'_>,
    listener: &HttpListener,
    what: String,
    routes: Vec<(String, MethodRouter<Intake>)>,
) -> Result<StartedReceiver, StartError> {
    let mut started = StartedReceiver::default();
    let owned = listener.clone();
    let unwritten = context.max_connections;
    Server::http(listener, what)
        .start(
            &context,
            &mut started,
            move |socket, pipelines, metrics, security, shutdown| {
                let intake = Intake::new(&owned, unwritten, pipelines, metrics);
                serve(socket, routes, intake, security, shutdown)
            },
        )
        .await?;
    Ok(started)
}

/// What [`start`] would refuse before binding: TLS files or a token that
/// do not load.
pub(crate) fn check(id: &str, listener: &HttpListener) -> Vec<StartError> {
    Server::http(listener, String::new())
        .check(id)
        .into_iter()
        .collect()
}

/// Serves `routes` until `shutdown` resolves, over TLS and behind the
/// bearer-token check when `security` says so; the listener is already
/// bound.
async fn serve(
    listener: tokio::net::TcpListener,
    routes: Vec<(String, MethodRouter<Intake>)>,
    intake: Intake,
    security: Security,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (metrics, max_body, limits) = (intake.metrics.clone(), intake.max_body, intake.limits);
    let router = routes
        .into_iter()
        .fold(Router::new(), |router, (path, handler)| {
            router.route(&path, handler)
        })
        .with_state(intake);
    let router = protect_router(router, security.auth.clone(), metrics, max_body);
    serve_router(listener, router, security, limits, shutdown).await
}
