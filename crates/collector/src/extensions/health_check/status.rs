//! The health check's answer, as the Collector's: 200 and
//! `{"status":"Server available","upSince":…,"uptime":…}` once the
//! collector is ready, 503 and `Server not available` while it starts or
//! shuts down.

use std::time::{Duration, SystemTime};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::config::ResponseBody;
use crate::shared::timestamp::rfc3339;
use crate::telemetry::{Phase, Readiness};

/// Go's zero time, which the Collector sends as `upSince` when not ready.
const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

#[derive(Serialize)]
struct Body<'a> {
    status: &'a str,
    #[serde(rename = "upSince")]
    up_since: String,
    uptime: String,
}

/// The answer to a health check now.
pub fn answer(readiness: &Readiness, custom: Option<&ResponseBody>, now: SystemTime) -> Response {
    let since = match (readiness.phase(), readiness.ready_since()) {
        (Phase::Ready, Some(since)) => Some(since),
        _ => None,
    };
    let status = if since.is_some() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = match (custom, since) {
        (Some(custom), Some(_)) => custom.healthy.clone(),
        (Some(custom), None) => custom.unhealthy.clone(),
        (None, Some(since)) => json(&Body {
            status: "Server available",
            up_since: rfc3339(since),
            uptime: go_duration(now.duration_since(since).unwrap_or_default()),
        }),
        (None, None) => json(&Body {
            status: "Server not available",
            up_since: GO_ZERO_TIME.to_owned(),
            uptime: String::new(),
        }),
    };
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json(body: &Body<'_>) -> String {
    serde_json::to_string(body).unwrap_or_default()
}

/// A duration as Go's `time.Duration.String` writes it: `1h2m3.5s`,
/// `4.25s`, `150ms`, `0s`.
pub fn go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let seconds = duration.as_secs();
    let (hours, minutes) = (seconds / 3600, seconds % 3600 / 60);
    let rest = fraction(
        u128::from(seconds % 60) * 1_000_000_000 + u128::from(duration.subsec_nanos()),
        1_000_000_000,
    );
    match (hours, minutes) {
        (0, 0) => format!("{rest}s"),
        (0, _) => format!("{minutes}m{rest}s"),
        _ => format!("{hours}h{minutes}m{rest}s"),
    }
}

/// `value / unit` in decimal, without trailing zeros.
fn fraction(value: u128, unit: u128) -> String {
    let whole = value / unit;
    let digits = unit.ilog10() as usize;
    let part = format!("{:0digits$}", value % unit);
    let part = part.trim_end_matches('0');
    if part.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{part}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn body_of(response: Response) -> (StatusCode, String) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn starting_ready_and_shutting_down_answer_as_the_collector() {
        let readiness = Readiness::default();
        let not_available =
            r#"{"status":"Server not available","upSince":"0001-01-01T00:00:00Z","uptime":""}"#;
        let now = SystemTime::now();
        assert_eq!(
            body_of(answer(&readiness, None, now)).await,
            (StatusCode::SERVICE_UNAVAILABLE, not_available.to_owned())
        );
        readiness.set_ready();
        let since = readiness.ready_since().unwrap();
        let (status, body) = body_of(answer(
            &readiness,
            None,
            since + Duration::from_millis(1500),
        ))
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            format!(
                r#"{{"status":"Server available","upSince":"{}","uptime":"1.5s"}}"#,
                rfc3339(since)
            )
        );
        readiness.set_shutting_down();
        assert_eq!(
            body_of(answer(&readiness, None, now)).await,
            (StatusCode::SERVICE_UNAVAILABLE, not_available.to_owned())
        );
        let custom = ResponseBody {
            healthy: "up".to_owned(),
            unhealthy: "down".to_owned(),
        };
        assert_eq!(
            body_of(answer(&readiness, Some(&custom), now)).await,
            (StatusCode::SERVICE_UNAVAILABLE, "down".to_owned())
        );
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(45), "45ns"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_nanos(123_000), "123µs"),
            (Duration::from_millis(4250), "4.25s"),
            (Duration::from_secs(62), "1m2s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(3_723_500), "1h2m3.5s"),
        ];
        for (duration, written) in cases {
            assert_eq!(go_duration(duration), written);
        }
    }
}
