//! Pyroscope's answers as export results.
//!
//! `/ingest`, as every HTTP exporter classifies statuses
//! (protocol/http_status.rs), quoting the server's message.
//!
//! The push API answers Connect errors: the code of the JSON body (or, for
//! a reply without one, the code its status stands for) decides;
//! `unavailable`, `resource_exhausted`, `deadline_exceeded` and `aborted`
//! are retryable, after `Retry-After` when given.

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use crate::exporters::http_reply::{check_status, is_json, json_message, quoted, reply_error};
use crate::exporters::ExportError;
use crate::protocol::push_v1::connect::{Code, ConnectError};
use crate::protocol::push_v1::{LabelPair, LABEL_SERVICE_NAME};

/// The distinct `service_name`s of the series, for error messages.
pub(super) fn services<'a>(series: impl Iterator<Item = &'a [LabelPair]>) -> String {
    let mut names: Vec<&str> = series
        .filter_map(|labels| {
            labels
                .iter()
                .find(|label| label.name == LABEL_SERVICE_NAME)
                .map(|label| label.value.as_str())
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

/// The result a reply to a push of `series` series (of the applications
/// `services`) means.
pub(super) fn push_outcome(
    endpoint: &str,
    series: usize,
    services: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), ExportError> {
    if status.is_success() {
        return Ok(());
    }
    let error = ConnectError::from_reply(status.as_u16(), body);
    let message = quoted(Some(error.message.clone()).filter(|m| !m.is_empty()), body);
    let reply = PushErrorReply {
        endpoint: endpoint.to_owned(),
        status,
        code: error.code,
        series,
        services: services.to_owned(),
        message,
    };
    Err(reply_error(error.code.is_retryable(), headers, reply))
}

/// A push answered with a Connect error, with the start of its message.
#[derive(Debug, thiserror::Error)]
#[error(
    "{endpoint} answered {status} ({code}) to a push of {series} series ({services}): {message}"
)]
struct PushErrorReply {
    endpoint: String,
    status: StatusCode,
    code: Code,
    series: usize,
    services: String,
    message: String,
}

/// An `/ingest` reply whose status is not a success, with the start of
/// its message.
#[derive(Debug, thiserror::Error)]
#[error("{endpoint} answered {status} to the push of {name}: {message}")]
struct IngestErrorReply {
    endpoint: String,
    status: StatusCode,
    name: String,
    message: String,
}

/// The result a reply to the push of `name` to `endpoint` means.
pub(super) fn outcome(
    endpoint: &str,
    name: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), ExportError> {
    check_status(status, headers, || IngestErrorReply {
        endpoint: endpoint.to_owned(),
        status,
        name: name.to_owned(),
        message: error_text(headers, body),
    })
}

/// The `message` of a JSON error body (Connect's shape), or the body's
/// text, cut short.
fn error_text(headers: &HeaderMap, body: &[u8]) -> String {
    quoted(is_json(headers).then(|| json_message(body)).flatten(), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exporters::http_reply::{assert_classified_by_the_table, header_map as headers};

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        assert_classified_by_the_table(|status| outcome("e", "a{}", status, &none, b""));
        assert!(outcome("e", "a{}", StatusCode::OK, &none, b"").is_ok());
        assert!(outcome("e", "a{}", StatusCode::NO_CONTENT, &none, b"").is_ok());
    }

    #[test]
    fn a_push_reply_without_a_connect_error_is_classified_as_any_http_reply() {
        let none = HeaderMap::new();
        assert_classified_by_the_table(|status| {
            push_outcome("e", 1, "a", status, &none, b"a proxy's page")
        });
    }

    #[test]
    fn connect_codes_are_classified() {
        let none = HeaderMap::new();
        let reply = |status: u16, body: &[u8]| {
            push_outcome(
                "e",
                1,
                "a",
                StatusCode::from_u16(status).unwrap(),
                &none,
                body,
            )
        };
        for (status, code) in [
            (503, "unavailable"),
            (429, "resource_exhausted"),
            (504, "deadline_exceeded"),
            (409, "aborted"),
        ] {
            let body = format!(r#"{{"code":"{code}","message":"m"}}"#);
            let error = reply(status, body.as_bytes()).unwrap_err();
            assert!(error.is_retryable(), "{code}");
            assert!(error.to_string().contains(code), "{error}");
        }
        for (status, code) in [
            (400, "invalid_argument"),
            (401, "unauthenticated"),
            (500, "internal"),
            (409, "already_exists"),
        ] {
            let body = format!(r#"{{"code":"{code}","message":"m"}}"#);
            assert!(
                !reply(status, body.as_bytes()).unwrap_err().is_retryable(),
                "{code}"
            );
        }
        // Without a Connect body, the status stands for a code.
        assert!(reply(502, b"bad gateway").unwrap_err().is_retryable());
        assert!(reply(429, b"").unwrap_err().is_retryable());
        assert!(!reply(404, b"404 page not found")
            .unwrap_err()
            .is_retryable());
        assert!(reply(200, b"").is_ok());
        let retry = headers(&[("retry-after", "3")]);
        let error =
            push_outcome("e", 2, "a, b", StatusCode::SERVICE_UNAVAILABLE, &retry, b"").unwrap_err();
        assert!(matches!(
            error,
            ExportError::Retryable { retry_after: Some(d), .. } if d.as_secs() == 3
        ));
        assert!(error.to_string().contains("2 series (a, b)"), "{error}");
    }

    #[test]
    fn messages_quote_the_server_briefly() {
        let json = headers(&[("content-type", "application/json")]);
        let error = outcome(
            "http://p/ingest",
            "cart{}",
            StatusCode::BAD_REQUEST,
            &json,
            br#"{"code":"invalid_argument","message":"invalid label name"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("400 Bad Request"), "{error}");
        assert!(error.contains("cart{}"), "{error}");
        assert!(error.contains("invalid label name"), "{error}");
        assert!(!error.contains("invalid_argument"), "{error}");
        let long = "x".repeat(1000);
        let text = headers(&[("content-type", "text/plain")]);
        let error = outcome("e", "a{}", StatusCode::BAD_REQUEST, &text, long.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.len() < 400, "{error}");
    }
}
