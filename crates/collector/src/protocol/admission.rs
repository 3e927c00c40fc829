//! What a receiver tells and reads when it admits a request: how long a
//! refused client waits before retrying, and the body's declared length,
//! which is admitted before the body is read.

use std::time::Duration;

use axum::http::{header, HeaderMap};

/// How long clients are told to wait before retrying a refused request
/// (HTTP `Retry-After`, gRPC RetryInfo).
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The body's declared length, when it declares one.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_declared_length_is_read_when_it_is_a_number() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers), None);
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static(" 42 "));
        assert_eq!(declared_length(&headers), Some(42));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("many"));
        assert_eq!(declared_length(&headers), None);
    }
}
