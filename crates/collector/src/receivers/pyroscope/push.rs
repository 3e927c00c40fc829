//! `POST /push.v1.PusherService/Push`, Pyroscope's push API in the Connect
//! protocol (unary), as the current Pyroscope SDKs and Alloy's
//! `pyroscope.write` send it: a `PushRequest` as protobuf
//! (`application/proto`) or JSON (`application/json`), compressed or not
//! (`Content-Encoding`). Every series becomes a resource (series.rs).
//!
//! Answers as a Connect server does: 200 with an empty `PushResponse` in
//! the request's codec; errors as a JSON body `{"code": …, "message": …}`
//! with the HTTP status of the code: `invalid_argument` (400) for what
//! cannot be read or is too large, `unavailable` (503, with Retry-After)
//! when a pipeline is full, `unimplemented` (501) for a compression we do
//! not know, `internal` (500). A push some of whose profiles are invalid
//! keeps the valid ones and answers `invalid_argument` naming the others,
//! which is what Pyroscope answers for an invalid profile (it keeps none).

use std::time::SystemTime;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use prost::Message;

use super::series::{push_request, Rejections};
use crate::protocol::admission::RETRY_AFTER;
use crate::protocol::push_v1::connect::{Code, ConnectError};
use crate::protocol::push_v1::{json, PushRequest};
use crate::receivers::from_pprof::nanos_since_epoch;
use crate::receivers::intake::Outcome;
use crate::receivers::pprof_http::{Failure, Handled, Intake};
use crate::telemetry::recent_errors::profiles_phrase;
use crate::telemetry::RefusedReason;

/// The body's codec, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Proto,
    Json,
}

impl Codec {
    fn of(headers: &HeaderMap) -> Option<Self> {
        let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        let media = value.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case("application/proto") {
            Some(Self::Proto)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Self::Json)
        } else {
            None
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Self::Proto => "application/proto",
            Self::Json => "application/json",
        }
    }

    fn decode(self, body: &[u8]) -> Result<PushRequest, BodyError> {
        match self {
            Self::Proto => PushRequest::decode(body).map_err(BodyError::Protobuf),
            Self::Json => json::decode(body).map_err(BodyError::Json),
        }
    }
}

/// Why a push's body is not a `PushRequest`.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("the body is not a protobuf PushRequest: {0}")]
    Protobuf(prost::DecodeError),
    #[error("{0}")]
    Json(json::JsonError),
}

pub(super) async fn push(State(intake): State<Intake>, headers: HeaderMap, body: Body) -> Response {
    let Some(codec) = Codec::of(&headers) else {
        let failure = Failure::BadRequest(
            "the Content-Type is neither application/proto nor application/json".to_owned(),
        );
        intake.note_refusal(&failure);
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [(
                header::HeaderName::from_static("accept-post"),
                "application/proto, application/json",
            )],
            format!("{}\n", failure.message()),
        )
            .into_response();
    };
    let version = headers
        .get("connect-protocol-version")
        .map(|value| value.to_str().unwrap_or("?").trim());
    if let Some(version) = version.filter(|version| *version != "1") {
        let failure = Failure::BadRequest(format!(
            "Connect-Protocol-Version {version:?} is not supported; use 1"
        ));
        intake.note_refusal(&failure);
        return error_response(&ConnectError::new(Code::InvalidArgument, failure.message()));
    }
    let max_unzipped = intake.max_body;
    let received_at = nanos_since_epoch(SystemTime::now());
    let metrics = intake.metrics.clone();
    let handled = intake
        .handle_with(&headers, body, move |raw| {
            let push = codec
                .decode(&raw)
                .map_err(|error| Failure::BadRequest(error.to_string()))?;
            drop(raw);
            push_request(&push, max_unzipped, received_at, &metrics)
        })
        .await;
    match handled {
        Handled::Reached(outcome, rejections) => {
            let rejections = rejections.unwrap_or_default();
            if matches!(outcome, Outcome::Accepted { .. }) && rejections.left_out > 0 {
                // The intake counted what it validated; these never got there.
                intake
                    .metrics
                    // Left out unread: their samples are not known.
                    .refused(RefusedReason::Invalid, rejections.left_out, 0);
                intake.metrics.note_refusal(
                    RefusedReason::Invalid,
                    &format!(
                        "{} of a push that cannot be read: {}",
                        profiles_phrase(rejections.left_out),
                        rejections.summary()
                    ),
                );
                tracing::warn!(
                    receiver = %intake.metrics.receiver,
                    transport = intake.metrics.transport,
                    reason = RefusedReason::Invalid.as_str(),
                    refused_profiles = rejections.left_out,
                    detail = rejections.summary(),
                    "refused profiles of a push that cannot be read"
                );
            }
            outcome_response(codec, outcome, rejections)
        }
        Handled::Refused(failure) => error_response(&failure_error(&failure)),
        Handled::Broken(message) => error_response(&ConnectError::new(Code::Internal, message)),
    }
}

/// The Connect error for a request refused before the intake. A body over
/// the size limit is `invalid_argument`, not `resource_exhausted`: the
/// SDKs retry the latter, and the same body would be refused again.
fn failure_error(failure: &Failure) -> ConnectError {
    let code = match failure {
        Failure::BadRequest(_) | Failure::TooLarge(_) => Code::InvalidArgument,
        Failure::UnsupportedEncoding(_) => Code::Unimplemented,
        Failure::TimedOut(_) => Code::DeadlineExceeded,
    };
    ConnectError::new(code, failure.message())
}

fn outcome_response(codec: Codec, outcome: Outcome, mut rejections: Rejections) -> Response {
    match outcome {
        Outcome::Accepted { rejected, reason } => {
            let left_out = rejections.left_out.saturating_add(rejected);
            if left_out == 0 {
                return success(codec);
            }
            if rejected > 0 {
                rejections.describe(reason);
            }
            let kept = rejections.total.saturating_sub(left_out);
            error_response(&ConnectError::new(
                Code::InvalidArgument,
                format!(
                    "kept {kept} of {} profiles; left out: {}",
                    rejections.total,
                    rejections.summary()
                ),
            ))
        }
        Outcome::Invalid(reason) => {
            error_response(&ConnectError::new(Code::InvalidArgument, reason))
        }
        Outcome::Unavailable => {
            let mut response = error_response(&ConnectError::new(
                Code::Unavailable,
                "the pipeline is full; retry later",
            ));
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(RETRY_AFTER.as_secs()),
            );
            response
        }
    }
}

/// 200 with an empty `PushResponse` in the request's codec.
fn success(codec: Codec) -> Response {
    let body: &'static [u8] = match codec {
        Codec::Proto => b"",
        Codec::Json => b"{}",
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, codec.content_type())],
        body,
    )
        .into_response()
}

fn error_response(error: &ConnectError) -> Response {
    let status =
        StatusCode::from_u16(error.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        error.to_json(),
    )
        .into_response();
    if error.code == Code::Unimplemented {
        response.headers_mut().insert(
            HeaderName::from_static("accept-encoding"),
            HeaderValue::from_static("gzip, zstd"),
        );
    }
    response
}
