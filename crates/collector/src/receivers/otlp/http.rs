//! OTLP over HTTP: `POST /v1development/profiles` (path configurable),
//! protobuf or JSON bodies, gzip or zstd, answered in the request's
//! content type with the status codes the OTLP specification gives.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use prost::Message;
use serde_json::json;

use profbridge_translate::decode_request_reusing;
use profbridge_translate::json::request_from_json;
use profbridge_translate::otlp::{ExportProfilesServiceRequest, ExportProfilesServiceResponse};

use super::compression::{decompress, decompressed_size_estimate, DecompressError};
use super::config::HttpConfig;
use super::decompressed::DecompressedBuffers;
use crate::net::{serve_router, ConnectionLimits, HttpLimits};
use crate::pipeline::{pooled_request, wanted, PipelineHandle, Wanted};
use crate::protocol::admission::{declared_length, RETRY_AFTER};
use crate::protocol::compression::Compression;
use crate::protocol::retry_info;
use crate::receivers::admitted_body::{drain, read_admitted, BodyBudget, BodyError};
use crate::receivers::intake::{
    intake, settle, Admission, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
use crate::telemetry::{ReceiverMetrics, RefusedReason};
use crate::tls::{protect_router, Security};

#[derive(Clone)]
struct Receiver {
    pipelines: Arc<[PipelineHandle]>,
    max_body: usize,
    /// Labelled with the receiver id and transport `http`.
    metrics: ReceiverMetrics,
    buffers: Arc<DecompressedBuffers>,
    /// How long a body may take to arrive.
    read_timeout: std::time::Duration,
    /// The forms of a request the exporters send or store as they are.
    wanted: Wanted,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

/// gRPC status codes used in error bodies.
const INVALID_ARGUMENT: i32 = 3;
const UNAVAILABLE: i32 = 14;
const RESOURCE_EXHAUSTED: i32 = 8;
const DEADLINE_EXCEEDED: i32 = 4;

pub fn router(
    config: &HttpConfig,
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
) -> Router {
    let max_body =
        usize::try_from(config.listener.server.max_request_body_size.0).unwrap_or(usize::MAX);
    Router::new()
        .route(&config.profiles_url_path, post(export))
        .with_state(Receiver {
            wanted: wanted(&pipelines),
            pipelines,
            max_body,
            metrics,
            buffers: Arc::default(),
            read_timeout: config.listener.server.read_timeout.0,
        })
}

/// Serves until `shutdown` resolves; the listener is already bound.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: HttpConfig,
    limits: (ConnectionLimits, HttpLimits),
    pipelines: Arc<[PipelineHandle]>,
    metrics: ReceiverMetrics,
    security: Security,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let drain_limit =
        usize::try_from(config.listener.server.max_request_body_size.0).unwrap_or(usize::MAX);
    let router = protect_router(
        router(&config, pipelines, metrics.clone()),
        security.auth.clone(),
        metrics,
        drain_limit,
    );
    serve_router(listener, router, security, limits, shutdown).await
}

impl Receiver {
    /// Admits the request on an estimate of its decompressed size, then
    /// decompresses, decodes and queues it: blocking work.
    fn receive(
        &self,
        encoding: Encoding,
        compression: Compression,
        body: Bytes,
        mut admission: Admission,
    ) -> Result<Decision, (StatusCode, String)> {
        // JSON spends more bytes than protobuf on the same request.
        let decoded_per_byte = match encoding {
            Encoding::Protobuf => DECODED_BYTES_PER_PROTOBUF_BYTE,
            Encoding::Json => 1,
        };
        let estimate = decompressed_size_estimate(compression, &body, self.max_body);
        // The body's own bytes are held already; this grows the hold to
        // what decoding needs.
        if !admission.cover_in(
            &self.pipelines,
            estimate.saturating_mul(decoded_per_byte),
            &self.metrics,
        ) {
            return Ok(Decision::done(Outcome::Unavailable));
        }
        let raw = decompress(compression, body.clone(), self.max_body, &self.buffers).map_err(
            |error| match error {
                DecompressError::TooLarge => (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the decompressed body is larger than max_request_body_size".to_owned(),
                ),
                DecompressError::Corrupt(error) => (
                    StatusCode::BAD_REQUEST,
                    format!("{}: {error}", compression.name()),
                ),
            },
        )?;
        if !admission.cover(raw.len().saturating_mul(decoded_per_byte), &self.metrics) {
            self.buffers.give_back(raw);
            return Ok(Decision::done(Outcome::Unavailable));
        }
        let decoded = decode(encoding, &raw, &self.pipelines);
        let size = raw.len();
        let (request, received) = match (decoded, encoding) {
            (Ok(request), Encoding::Protobuf) => {
                let keep = self.wanted.keeps(compression);
                let received = self.buffers.keep_received(keep, compression, body, raw);
                (request, Some(received))
            }
            (decoded, _) => {
                self.buffers.give_back(raw);
                (decoded?, None)
            }
        };
        Ok(intake(
            request,
            size,
            received,
            &self.pipelines,
            &self.metrics,
            admission,
        ))
    }
}

async fn export(State(receiver): State<Receiver>, headers: HeaderMap, body: Body) -> Response {
    let Some(encoding) = content_type(&headers) else {
        undecodable(&receiver, "unsupported Content-Type");
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "use Content-Type application/x-protobuf or application/json",
        )
            .into_response();
    };
    let content_encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    // The limit holds while the body streams in: nothing past it is
    // buffered, and what is buffered is held in the pipelines' budgets.
    let mut body = body;
    let deadline = tokio::time::Instant::now() + receiver.read_timeout;
    let budget = BodyBudget {
        pipelines: &receiver.pipelines,
        metrics: &receiver.metrics,
        limit: receiver.max_body,
        deadline,
        timeout: receiver.read_timeout,
    };
    let (bytes, admission) =
        match read_admitted(&mut body, declared_length(&headers), &budget).await {
            Ok(read) => read,
            Err(BodyError::TooLarge { .. }) => {
                undecodable(&receiver, "body larger than max_request_body_size");
                return error(
                    encoding,
                    StatusCode::PAYLOAD_TOO_LARGE,
                    RESOURCE_EXHAUSTED,
                    "the request body is larger than max_request_body_size",
                );
            }
            Err(BodyError::Unavailable) => {
                // Counted by the admission. The rest of the body is read and
                // dropped, so that HTTP/1 clients still writing it get this
                // answer, not a reset.
                drain(&mut body, receiver.max_body, deadline).await;
                return unavailable(encoding);
            }
            Err(timed_out @ BodyError::TimedOut(_)) => {
                let reason = format!("{timed_out} (read_timeout)");
                undecodable(&receiver, &reason);
                return error_response_closing(
                    encoding,
                    StatusCode::REQUEST_TIMEOUT,
                    DEADLINE_EXCEEDED,
                    &reason,
                );
            }
            Err(failed @ BodyError::Failed(_)) => {
                let reason = failed.to_string();
                undecodable(&receiver, &reason);
                return error(encoding, StatusCode::BAD_REQUEST, INVALID_ARGUMENT, &reason);
            }
        };
    let Some(compression) = Compression::from_name(&content_encoding) else {
        let reason =
            format!("Content-Encoding {content_encoding:?} is not supported; use gzip or zstd");
        undecodable(&receiver, &reason);
        return error(
            encoding,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_ARGUMENT,
            &reason,
        );
    };
    let blocking = receiver.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        blocking.receive(encoding, compression, bytes, admission)
    })
    .await;
    let outcome = match outcome {
        Ok(Ok(decision)) => Ok(Ok(settle(decision, &receiver.metrics).await)),
        Ok(Err(error)) => Ok(Err(error)),
        Err(join) => Err(join),
    };
    match outcome {
        Ok(Ok(Outcome::Accepted { rejected, reason })) => success(encoding, rejected, &reason),
        Ok(Ok(Outcome::Invalid(reason))) => {
            error(encoding, StatusCode::BAD_REQUEST, INVALID_ARGUMENT, &reason)
        }
        Ok(Ok(Outcome::Unavailable)) => unavailable(encoding),
        Ok(Err((status, reason))) => {
            undecodable(&receiver, &reason);
            let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
                RESOURCE_EXHAUSTED
            } else {
                INVALID_ARGUMENT
            };
            error(encoding, status, code, &reason)
        }
        Err(join) => error(
            encoding,
            StatusCode::INTERNAL_SERVER_ERROR,
            13,
            &join.to_string(),
        ),
    }
}

/// [`error`], closing the connection: the rest of the body never came.
fn error_response_closing(
    encoding: Encoding,
    status: StatusCode,
    code: i32,
    message: &str,
) -> Response {
    let mut response = error(encoding, status, code, message);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// 503 with Retry-After.
fn unavailable(encoding: Encoding) -> Response {
    let mut response = error(
        encoding,
        StatusCode::SERVICE_UNAVAILABLE,
        UNAVAILABLE,
        "the pipeline is full; retry later",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(RETRY_AFTER.as_secs()),
    );
    response
}

/// Logs a request refused before its profiles could be counted.
fn undecodable(receiver: &Receiver, detail: &str) {
    receiver.metrics.refused_request(RefusedReason::Invalid);
    receiver
        .metrics
        .note_refusal(RefusedReason::Invalid, detail);
    tracing::warn!(
        receiver = %receiver.metrics.receiver,
        transport = receiver.metrics.transport,
        reason = "invalid",
        detail,
        "refused a request that could not be decoded"
    );
}

fn content_type(headers: &HeaderMap) -> Option<Encoding> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next()?.trim().to_ascii_lowercase();
    match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
        "application/json" => Some(Encoding::Json),
        _ => None,
    }
}

fn decode(
    encoding: Encoding,
    raw: &[u8],
    pipelines: &[PipelineHandle],
) -> Result<ExportProfilesServiceRequest, (StatusCode, String)> {
    match encoding {
        Encoding::Protobuf => decode_request_reusing(raw, pooled_request(pipelines, raw.len()))
            .map_err(|e| (StatusCode::BAD_REQUEST, format!("protobuf: {e}"))),
        Encoding::Json => {
            request_from_json(raw).map_err(|e| (StatusCode::BAD_REQUEST, format!("json: {e}")))
        }
    }
}

fn success(encoding: Encoding, rejected: usize, reason: &str) -> Response {
    let rejected = i64::try_from(rejected).unwrap_or(i64::MAX);
    match encoding {
        Encoding::Protobuf => {
            let response = ExportProfilesServiceResponse {
                partial_success: (rejected > 0).then(|| {
                    profbridge_translate::otlp::ExportProfilesPartialSuccess {
                        rejected_profiles: rejected,
                        error_message: reason.to_owned(),
                    }
                }),
            };
            protobuf_response(StatusCode::OK, response.encode_to_vec())
        }
        Encoding::Json => {
            let body = if rejected > 0 {
                json!({ "partialSuccess": { "rejectedProfiles": rejected.to_string(), "errorMessage": reason } })
            } else {
                json!({})
            };
            json_response(StatusCode::OK, body.to_string())
        }
    }
}

fn error(encoding: Encoding, status: StatusCode, code: i32, message: &str) -> Response {
    match encoding {
        Encoding::Protobuf => protobuf_response(status, retry_info::status(code, message)),
        Encoding::Json => json_response(
            status,
            json!({ "code": code, "message": message }).to_string(),
        ),
    }
}

fn protobuf_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        body,
    )
        .into_response()
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
