//! The health check's answer, as the Collector's: 200 and
//! `{"status":"Server available","upSince":…,"uptime":…}` once the
//! collector is ready, 503 and `Server not available` while it starts or
//! shuts down.

use std::time::SystemTime;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::config::ResponseBody;
use crate::shared::duration::go_duration;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

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
}
