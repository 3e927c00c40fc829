//! HTTP responses as export results, per the OTLP/HTTP specification:
//! 2xx is success (perhaps partial); 429, 502, 503 and 504 are retryable,
//! after `Retry-After` when given; anything else is permanent.

use std::time::{Duration, SystemTime};

use prost::Message;
use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;

use profbridge_translate::otlp::{ExportProfilesPartialSuccess, ExportProfilesServiceResponse};

use crate::exporters::ExportError;

/// How much of an error body a message quotes.
const QUOTED_BODY_CHARS: usize = 300;

/// The part of `google.rpc.Status` error bodies that messages quote.
#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// The partial success a 2xx reply reports, or the error its status means.
pub(super) fn outcome(
    endpoint: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Option<ExportProfilesPartialSuccess>, ExportError> {
    if status.is_success() {
        return Ok(partial_success(headers, body));
    }
    let reason = format!(
        "{endpoint} answered {status}: {}",
        error_text(headers, body)
    );
    let retryable = matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
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

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let media = value.trim_start();
            media.starts_with("application/x-protobuf") || media.starts_with("application/protobuf")
        })
}

/// `partial_success` from a protobuf or JSON body; `None` for an empty or
/// undecodable body, which still means success.
fn partial_success(headers: &HeaderMap, body: &[u8]) -> Option<ExportProfilesPartialSuccess> {
    if body.is_empty() {
        return None;
    }
    if is_json(headers) {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        let partial = value
            .get("partialSuccess")
            .or_else(|| value.get("partial_success"))?;
        let rejected = partial
            .get("rejectedProfiles")
            .or_else(|| partial.get("rejected_profiles"))
            .and_then(|n| n.as_i64().or_else(|| n.as_str()?.parse().ok()))
            .unwrap_or(0);
        let message = partial
            .get("errorMessage")
            .or_else(|| partial.get("error_message"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        return Some(ExportProfilesPartialSuccess {
            rejected_profiles: rejected,
            error_message: message.to_owned(),
        });
    }
    ExportProfilesServiceResponse::decode(body)
        .ok()?
        .partial_success
}

/// The message of a `google.rpc.Status` body, or the body's text, cut short.
fn error_text(headers: &HeaderMap, body: &[u8]) -> String {
    let message = if is_protobuf(headers) {
        RpcStatus::decode(body).ok().map(|status| status.message)
    } else if is_json(headers) {
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
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        for code in [429, 502, 503, 504] {
            let status = StatusCode::from_u16(code).unwrap();
            assert!(outcome("e", status, &none, b"").unwrap_err().is_retryable());
        }
        for code in [400, 401, 404, 413, 500] {
            let status = StatusCode::from_u16(code).unwrap();
            assert!(!outcome("e", status, &none, b"").unwrap_err().is_retryable());
        }
        assert_eq!(outcome("e", StatusCode::OK, &none, b"").unwrap(), None);
    }

    #[test]
    fn partial_success_is_read_from_json_and_protobuf() {
        let json = headers(&[("content-type", "application/json")]);
        let body = br#"{"partialSuccess":{"rejectedProfiles":"2","errorMessage":"bad"}}"#;
        let partial = outcome("e", StatusCode::OK, &json, body).unwrap().unwrap();
        assert_eq!(partial.rejected_profiles, 2);
        assert_eq!(partial.error_message, "bad");
        let proto = headers(&[("content-type", "application/x-protobuf")]);
        let body = ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: 3,
                error_message: "worse".to_owned(),
            }),
        }
        .encode_to_vec();
        let partial = outcome("e", StatusCode::OK, &proto, &body)
            .unwrap()
            .unwrap();
        assert_eq!(partial.rejected_profiles, 3);
    }

    #[test]
    fn error_bodies_are_quoted_short() {
        let text = headers(&[("content-type", "text/plain")]);
        let long = "x".repeat(1000);
        let error = outcome("e", StatusCode::BAD_REQUEST, &text, long.as_bytes()).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("400 Bad Request"), "{message}");
        assert!(message.len() < 400, "{message}");
        let json = headers(&[("content-type", "application/json")]);
        let error = outcome(
            "e",
            StatusCode::BAD_REQUEST,
            &json,
            br#"{"code":3,"message":"no samples"}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("no samples"));
    }
}
