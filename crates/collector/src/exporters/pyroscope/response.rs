//! Pyroscope's answers as export results. As for OTLP/HTTP: 2xx is
//! success; 429, 502, 503 and 504 are retryable, after `Retry-After` when
//! given; so is 408, which Pyroscope answers when it could not read the
//! whole body. Anything else is permanent, quoting the server's message.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;

use crate::exporters::ExportError;

/// How much of an error body a message quotes.
const QUOTED_BODY_CHARS: usize = 300;

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
    let is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    let message = if is_json {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| value.get("message")?.as_str().map(str::to_owned))
    } else {
        None
    };
    let text = message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let text = text.trim();
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    let mut quoted: String = text.chars().take(QUOTED_BODY_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    quoted
}

/// `Retry-After` as seconds or an HTTP date (a date past is no wait).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
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
    fn retry_after_takes_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let seconds = headers(&[("retry-after", "7")]);
        assert_eq!(retry_after(&seconds, now), Some(Duration::from_secs(7)));
        let date = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]);
        assert_eq!(retry_after(&date, now), Some(Duration::from_secs(10)));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
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
