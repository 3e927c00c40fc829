//! Pyroscope's answers as export results. As for OTLP/HTTP: 2xx is
//! success; 429, 502, 503 and 504 are retryable, after `Retry-After` when
//! given; so is 408, which Pyroscope answers when it could not read the
//! whole body. Anything else is permanent, quoting the server's message.

use std::time::SystemTime;

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use crate::exporters::http_reply::{is_json, json_message, quoted, retry_after};
use crate::exporters::ExportError;

/// The result a reply to the push of `name` to `endpoint` means.
pub(super) fn outcome(
    endpoint: &str,
    name: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), ExportError> {
    if status.is_success() {
        return Ok(());
    }
    let reason = format!(
        "{endpoint} answered {status} to the push of {name}: {}",
        error_text(headers, body)
    );
    let retryable = matches!(
        status,
        StatusCode::REQUEST_TIMEOUT
            | StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    );
    if retryable {
        Err(ExportError::Retryable {
            reason,
            retry_after: retry_after(headers, SystemTime::now()),
        })
    } else {
        Err(ExportError::Permanent(reason))
    }
}

/// The `message` of a JSON error body (Connect's shape), or the body's
/// text, cut short.
fn error_text(headers: &HeaderMap, body: &[u8]) -> String {
    let message = if is_json(headers) {
        json_message(body)
    } else {
        None
    };
    quoted(message, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        for code in [408, 429, 502, 503, 504] {
            let status = StatusCode::from_u16(code).unwrap();
            let error = outcome("e", "a{}", status, &none, b"").unwrap_err();
            assert!(error.is_retryable(), "{code}");
        }
        for code in [400, 401, 404, 413, 422, 500] {
            let status = StatusCode::from_u16(code).unwrap();
            let error = outcome("e", "a{}", status, &none, b"").unwrap_err();
            assert!(!error.is_retryable(), "{code}");
        }
        assert!(outcome("e", "a{}", StatusCode::OK, &none, b"").is_ok());
        assert!(outcome("e", "a{}", StatusCode::NO_CONTENT, &none, b"").is_ok());
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
