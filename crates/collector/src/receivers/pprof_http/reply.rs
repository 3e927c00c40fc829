//! Why a request failed, and the status code and text each answer gets.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use profbridge_jfr::JfrError;
use profbridge_pprof::{DecodeError, DetectError, ParseError};

use crate::protocol::admission::RETRY_AFTER;
use crate::receivers::intake::Outcome;

/// A request refused before its profiles reached the pipelines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// 400: the data or the parameters are wrong; the text says how.
    BadRequest(String),
    /// 413: over max_request_body_size.
    TooLarge(String),
    /// 415: a Content-Encoding we do not decode.
    UnsupportedEncoding(String),
    /// 408: the body did not arrive within read_timeout.
    TimedOut(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Self::BadRequest(message)
            | Self::TooLarge(message)
            | Self::UnsupportedEncoding(message)
            | Self::TimedOut(message) => message,
        }
    }

    /// A parse error: too large when a size limit was hit, else bad data.
    pub fn from_parse(error: &ParseError) -> Self {
        let too_large = match error {
            ParseError::Pprof(decode) | ParseError::Detect(DetectError::Decode(decode)) => {
                is_size_limit(decode)
            }
            _ => false,
        };
        if too_large {
            Self::TooLarge(format!("{error} (max_request_body_size)"))
        } else {
            Self::BadRequest(format!("cannot read the profile: {error}"))
        }
    }

    /// A JFR recording that does not convert: too large when a size limit
    /// was hit, else bad data.
    pub fn from_jfr(error: &JfrError) -> Self {
        match error {
            JfrError::Decode(decode) if is_size_limit(decode) => Self::TooLarge(format!(
                "the JFR recording: {error} (max_request_body_size)"
            )),
            _ => Self::BadRequest(format!("cannot read the JFR recording: {error}")),
        }
    }

    /// A gunzip error: too large when the limit was hit, else bad data.
    pub fn from_gunzip(error: &DecodeError) -> Self {
        if is_size_limit(error) {
            Self::TooLarge(format!("{error} (max_request_body_size)"))
        } else {
            Self::BadRequest(format!("cannot gunzip the body: {error}"))
        }
    }

    pub fn response(&self) -> Response {
        let status = match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedEncoding(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
        };
        let mut response = text(status, self.message());
        if matches!(self, Self::TimedOut(_)) {
            // The rest of the body never came: the connection cannot be reused.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

fn is_size_limit(error: &DecodeError) -> bool {
    matches!(
        error,
        DecodeError::InputTooLarge { .. } | DecodeError::DecompressedTooLarge { .. }
    )
}

/// The answer to a request that reached the intake.
pub(crate) fn outcome_response(outcome: Outcome, accepted: StatusCode) -> Response {
    match outcome {
        Outcome::Accepted { .. } => accepted.into_response(),
        Outcome::Invalid(reason) => text(StatusCode::BAD_REQUEST, &reason),
        Outcome::Unavailable => {
            let mut response = text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the pipeline is full; retry later",
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(RETRY_AFTER.as_secs()),
            );
            response
        }
    }
}

pub(crate) fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response()
}
