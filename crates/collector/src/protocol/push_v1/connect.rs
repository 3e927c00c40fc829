//! The Connect protocol's error model for unary calls: a code, the HTTP
//! status each code is answered with, and the JSON body
//! `{"code":"invalid_argument","message":"…"}`; and, for a reply without
//! such a body, the code its HTTP status stands for.

use serde::{Deserialize, Serialize};

/// Connect's error codes (gRPC's, spelled in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Canceled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

const CODES: [(Code, &str, u16); 16] = [
    (Code::Canceled, "canceled", 499),
    (Code::Unknown, "unknown", 500),
    (Code::InvalidArgument, "invalid_argument", 400),
    (Code::DeadlineExceeded, "deadline_exceeded", 504),
    (Code::NotFound, "not_found", 404),
    (Code::AlreadyExists, "already_exists", 409),
    (Code::PermissionDenied, "permission_denied", 403),
    (Code::ResourceExhausted, "resource_exhausted", 429),
    (Code::FailedPrecondition, "failed_precondition", 400),
    (Code::Aborted, "aborted", 409),
    (Code::OutOfRange, "out_of_range", 400),
    (Code::Unimplemented, "unimplemented", 501),
    (Code::Internal, "internal", 500),
    (Code::Unavailable, "unavailable", 503),
    (Code::DataLoss, "data_loss", 500),
    (Code::Unauthenticated, "unauthenticated", 401),
];

impl Code {
    /// The code as Connect writes it, e.g. `invalid_argument`.
    pub fn as_str(self) -> &'static str {
        CODES
            .iter()
            .find(|(code, _, _)| *code == self)
            .map_or("unknown", |(_, name, _)| name)
    }

    pub fn parse(text: &str) -> Option<Self> {
        CODES
            .iter()
            .find(|(_, name, _)| *name == text)
            .map(|(code, _, _)| *code)
    }

    /// The HTTP status a server answers this code with.
    pub fn http_status(self) -> u16 {
        CODES
            .iter()
            .find(|(code, _, _)| *code == self)
            .map_or(500, |(_, _, status)| *status)
    }

    /// What a client makes of an error reply without a Connect error
    /// body (from a proxy, say): the protocol's table.
    pub fn from_http_status(status: u16) -> Self {
        match status {
            400 => Self::Internal,
            401 => Self::Unauthenticated,
            403 => Self::PermissionDenied,
            404 => Self::Unimplemented,
            429 | 502 | 503 | 504 => Self::Unavailable,
            _ => Self::Unknown,
        }
    }

    /// Whether a push that failed with this code is tried again:
    /// unavailable, resource_exhausted, deadline_exceeded and aborted.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Unavailable | Self::ResourceExhausted | Self::DeadlineExceeded | Self::Aborted
        )
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Connect error: the code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    pub code: Code,
    pub message: String,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
}

#[derive(Deserialize)]
struct ReadBody {
    code: Option<String>,
    message: Option<String>,
}

impl ConnectError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The JSON body of the error.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&ErrorBody {
            code: self.code.as_str(),
            message: &self.message,
        })
        .unwrap_or_default()
    }

    /// The error a reply with HTTP `status` and `body` carries: the body's
    /// code when it is a Connect error, else the status's.
    pub fn from_reply(status: u16, body: &[u8]) -> Self {
        let parsed: Option<ReadBody> = serde_json::from_slice(body).ok();
        let code = parsed
            .as_ref()
            .and_then(|body| body.code.as_deref())
            .and_then(Code::parse);
        match (code, parsed.and_then(|body| body.message)) {
            (Some(code), message) => Self::new(code, message.unwrap_or_default()),
            (None, _) => Self::new(
                Code::from_http_status(status),
                String::from_utf8_lossy(body).trim().to_owned(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_their_names_and_statuses() {
        for (code, name, status) in CODES {
            assert_eq!(Code::parse(name), Some(code));
            assert_eq!(code.as_str(), name);
            assert_eq!(code.http_status(), status);
        }
        assert_eq!(Code::parse("INVALID_ARGUMENT"), None);
    }

    #[test]
    fn error_bodies_are_written_and_read() {
        let error = ConnectError::new(Code::Unavailable, "the pipeline is full");
        assert_eq!(
            error.to_json(),
            br#"{"code":"unavailable","message":"the pipeline is full"}"#
        );
        assert_eq!(ConnectError::from_reply(503, &error.to_json()), error);
        let proxy = ConnectError::from_reply(502, b"<html>bad gateway</html>");
        assert_eq!(proxy.code, Code::Unavailable);
        assert!(proxy.message.contains("bad gateway"));
        assert_eq!(
            ConnectError::from_reply(400, br#"{"code":"nonsense"}"#).code,
            Code::Internal
        );
        assert!(Code::ResourceExhausted.is_retryable());
        assert!(!Code::InvalidArgument.is_retryable());
        assert!(!Code::Internal.is_retryable());
    }
}
