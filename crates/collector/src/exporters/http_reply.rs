//! What the HTTP exporters read from a reply: at most the start of its
//! body, when to retry, and the server's message, quoted briefly; what a
//! reply that is not a success means; and what a request that got no reply
//! means.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{StatusCode, Url};

use super::{ExportCause, ExportError};
use crate::protocol::http_status::{classify, StatusClass};
use crate::shared::root_cause::with_root_cause;

/// The first `limit` bytes of a reply's body, whatever the server sends.
pub(crate) async fn read_reply(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
        if body.len() >= limit {
            break;
        }
    }
    Ok(body)
}

/// A request to `url` that got no usable reply: retryable unless the
/// request itself could not be built. `timeout` is the limit it ran into.
pub(crate) fn send_error(url: &Url, timeout: Duration, error: reqwest::Error) -> ExportError {
    let endpoint = url.to_string();
    if error.is_timeout() {
        return ExportError::retryable(ExportCause::NoReply {
            endpoint,
            limit: timeout,
        });
    }
    let (is_builder, is_connect) = (error.is_builder(), error.is_connect());
    let error = Box::new(SendError(error));
    if is_builder {
        ExportError::Permanent(ExportCause::Request { endpoint, error })
    } else if is_connect {
        ExportError::retryable(ExportCause::Unreachable { endpoint, error })
    } else {
        ExportError::retryable(ExportCause::Request { endpoint, error })
    }
}

/// A request that got no usable reply, shown by its root cause: reqwest's
/// own text repeats the URL and hides the cause.
#[derive(Debug)]
struct SendError(reqwest::Error);

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let with_root = with_root_cause(String::new(), &self.0);
        match with_root.strip_prefix(": ") {
            Some(root) => f.write_str(root),
            None => std::fmt::Display::fmt(&self.0, f),
        }
    }
}

impl std::error::Error for SendError {}

/// Whether a reply's status is a success, as the one table
/// ([`classify`]) says; if not, the error `reply` describes: retryable,
/// after `Retry-After` when given, or permanent.
pub(crate) fn check_status<E: std::error::Error + Send + Sync + 'static>(
    status: StatusCode,
    headers: &HeaderMap,
    reply: impl FnOnce() -> E,
) -> Result<(), ExportError> {
    match classify(status) {
        StatusClass::Success => Ok(()),
        StatusClass::Retryable => Err(reply_error(true, headers, reply())),
        StatusClass::Permanent => Err(reply_error(false, headers, reply())),
    }
}

/// An error reply's error: retryable, after `Retry-After` when given, or
/// permanent.
pub(crate) fn reply_error(
    retryable: bool,
    headers: &HeaderMap,
    reply: impl std::error::Error + Send + Sync + 'static,
) -> ExportError {
    let cause = ExportCause::ErrorReply(Box::new(reply));
    if retryable {
        ExportError::Retryable {
            cause,
            retry_after: retry_after(headers, SystemTime::now()),
        }
    } else {
        ExportError::Permanent(cause)
    }
}

/// How much of an error body a message quotes.
const QUOTED_BODY_CHARS: usize = 300;

/// `Retry-After` as seconds or an HTTP date (a date past is no wait).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

/// The `message` of a JSON error body (`google.rpc.Status` or Connect's
/// shape).
pub(crate) fn json_message(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.get("message")?.as_str().map(str::to_owned))
}

/// `message`, or else the body's text, trimmed and cut short.
pub(crate) fn quoted(message: Option<String>, body: &[u8]) -> String {
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

/// Headers from name and value pairs, for tests.
#[cfg(test)]
pub(crate) fn header_map(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(
            *name,
            reqwest::header::HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// Asserts that `outcome` gives every status the class the one table
/// gives it.
#[cfg(test)]
pub(crate) fn assert_classified_by_the_table(
    outcome: impl Fn(StatusCode) -> Result<(), ExportError>,
) {
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        let class = match outcome(status) {
            Ok(()) => StatusClass::Success,
            Err(error) if error.is_retryable() => StatusClass::Retryable,
            Err(_) => StatusClass::Permanent,
        };
        assert_eq!(class, classify(status), "{code}");
    }
}

#[cfg(test)]
mod tests {
    use super::header_map as headers;
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let seconds = headers(&[("retry-after", "7")]);
        assert_eq!(retry_after(&seconds, now), Some(Duration::from_secs(7)));
        let date = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]);
        assert_eq!(retry_after(&date, now), Some(Duration::from_secs(10)));
        let past = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:27 GMT")]);
        assert_eq!(retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
    }

    #[test]
    fn bodies_are_quoted_short() {
        assert_eq!(quoted(None, b"  \n"), "(no message)");
        assert_eq!(quoted(Some("no samples".into()), b"ignored"), "no samples");
        let long = quoted(None, "x".repeat(1000).as_bytes());
        assert_eq!(long.chars().count(), QUOTED_BODY_CHARS + 1);
        assert!(long.ends_with('…'));
    }
}
