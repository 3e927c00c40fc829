//! What the status of an HTTP reply means to the client that sent data:
//! one table for every exporter that sends over HTTP, so that they agree on
//! every status.

use reqwest::StatusCode;

/// What a reply's status says about the data its request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// The server took the data.
    Success,
    /// The server, or a proxy before it, cannot take the data now: send it
    /// again later, after `Retry-After` when the reply gives one.
    Retryable,
    /// The same request would get the same answer: do not send it again.
    Permanent,
}

/// 2xx is a success; 429, 502, 503 and 504 are retryable; any other
/// status is permanent: the OTLP/HTTP specification's table, which the
/// OpenTelemetry Collector's otlphttp exporter follows.
///
/// 408 is permanent. The Collector's otlphttp exporter does not retry it,
/// nor do Pyroscope's own clients: its Java agent retries 429 and 5xx, its
/// Go SDK retries nothing. Alloy's `pyroscope.write` retries a 408 only
/// because connect-go reads a status it has no entry for as `unknown`,
/// which Alloy retries as it does `internal`, not by a rule for 408.
pub fn classify(status: StatusCode) -> StatusClass {
    if status.is_success() {
        return StatusClass::Success;
    }
    match status {
        StatusCode::TOO_MANY_REQUESTS
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => StatusClass::Retryable,
        _ => StatusClass::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        let class = |code| classify(StatusCode::from_u16(code).unwrap());
        for code in [200, 204] {
            assert_eq!(class(code), StatusClass::Success, "{code}");
        }
        for code in [429, 502, 503, 504] {
            assert_eq!(class(code), StatusClass::Retryable, "{code}");
        }
        for code in [400, 401, 404, 408, 413, 422, 500] {
            assert_eq!(class(code), StatusClass::Permanent, "{code}");
        }
    }

    #[test]
    fn every_status_has_its_class() {
        for code in 100..=599 {
            let status = StatusCode::from_u16(code).unwrap();
            let expected = match code {
                200..=299 => StatusClass::Success,
                429 | 502 | 503 | 504 => StatusClass::Retryable,
                _ => StatusClass::Permanent,
            };
            assert_eq!(classify(status), expected, "{code}");
        }
    }
}
