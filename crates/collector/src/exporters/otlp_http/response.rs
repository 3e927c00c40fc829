//! HTTP responses as export results, per the OTLP/HTTP specification:
//! 2xx is success (perhaps partial); the rest as every HTTP exporter
//! classifies statuses (protocol/http_status.rs).

use prost::Message;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::StatusCode;

use profbridge_translate::otlp::{ExportProfilesPartialSuccess, ExportProfilesServiceResponse};

use crate::exporters::http_reply::{check_status, is_json, json_message, quoted};
use crate::exporters::ExportError;
use crate::protocol::retry_info;

/// The partial success a 2xx reply reports, or the error its status means.
pub(super) fn outcome(
    endpoint: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Option<ExportProfilesPartialSuccess>, ExportError> {
    check_status(status, headers, || ErrorReply {
        endpoint: endpoint.to_owned(),
        status,
        message: error_text(headers, body),
    })?;
    Ok(partial_success(headers, body))
}

/// A reply whose status is not a success, with the start of its message.
#[derive(Debug, thiserror::Error)]
#[error("{endpoint} answered {status}: {message}")]
struct ErrorReply {
    endpoint: String,
    status: StatusCode,
    message: String,
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
        retry_info::status_message(body)
    } else if is_json(headers) {
        json_message(body)
    } else {
        None
    };
    quoted(message, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exporters::http_reply::{assert_classified_by_the_table, header_map as headers};

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        assert_classified_by_the_table(|status| outcome("e", status, &none, b"").map(drop));
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
