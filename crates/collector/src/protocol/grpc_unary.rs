//! The gRPC framing of a unary call, served without tonic's codec so that
//! a request is admitted before its message is decompressed: the request
//! body holds one length-prefixed message, and so does the reply, which
//! ends with `grpc-status: 0` in the trailers.

use bytes::{BufMut, Bytes};
use http_body_util::{BodyExt, Full};
use tonic::codegen::http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use tonic::codegen::http::Response;
use tonic::Status;

use super::compression::Compression;

/// The compressed flag (one byte) and message length (big-endian u32).
pub const PREFIX_LEN: usize = 5;

const ACCEPT_ENCODING: &str = "grpc-accept-encoding";
const ACCEPTED_ENCODINGS: &str = "gzip,zstd,identity";

/// Why a request body is not one gRPC message.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("the request has no message")]
    NoMessage,
    #[error("the request ends after {0} bytes, inside the 5-byte message prefix")]
    TruncatedPrefix(usize),
    #[error("invalid compressed flag {0} (valid flags are 0 and 1)")]
    InvalidFlag(u8),
    #[error("the message prefix declares {declared} bytes, but {actual} follow it")]
    LengthMismatch { declared: usize, actual: usize },
    #[error("a unary call carries one message, but {0} more bytes follow it")]
    MoreThanOneMessage(usize),
    #[error("the message is flagged as compressed, but the request names no grpc-encoding")]
    CompressedWithoutEncoding,
}

/// The request's `grpc-encoding`; UNIMPLEMENTED, listing what is
/// accepted, for one not served.
pub fn request_compression(headers: &HeaderMap) -> Result<Compression, Status> {
    let Some(value) = headers.get("grpc-encoding") else {
        return Ok(Compression::Identity);
    };
    let name = String::from_utf8_lossy(value.as_bytes());
    match Compression::from_name(&name) {
        Some(compression) => Ok(compression),
        None => {
            let mut status = Status::unimplemented(format!(
                "grpc-encoding {name:?} is not supported; use gzip, zstd or identity"
            ));
            status.metadata_mut().insert(
                ACCEPT_ENCODING,
                tonic::metadata::MetadataValue::from_static(ACCEPTED_ENCODINGS),
            );
            Err(status)
        }
    }
}

/// The call's deadline from its `grpc-timeout` header (digits and a
/// unit: H, M, S, m, u, n), when it has a valid one.
pub fn grpc_timeout(headers: &HeaderMap) -> Option<std::time::Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at_checked(value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    use std::time::Duration;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// The length of the message a prefix introduces.
pub fn message_length(prefix: &[u8; PREFIX_LEN]) -> usize {
    let [_, length @ ..] = *prefix;
    usize::try_from(u32::from_be_bytes(length)).unwrap_or(usize::MAX)
}

/// The one message in a request body, and how it is compressed: as the
/// request's `grpc-encoding` says when its compressed flag is set.
pub fn parse_unary(body: Bytes, encoding: Compression) -> Result<(Compression, Bytes), FrameError> {
    let Some(prefix) = body.first_chunk::<PREFIX_LEN>() else {
        return Err(match body.len() {
            0 => FrameError::NoMessage,
            short => FrameError::TruncatedPrefix(short),
        });
    };
    let [flag, ..] = *prefix;
    let declared = message_length(prefix);
    let actual = body.len().saturating_sub(PREFIX_LEN);
    if declared > actual {
        return Err(FrameError::LengthMismatch { declared, actual });
    }
    if declared < actual {
        return Err(FrameError::MoreThanOneMessage(
            actual.saturating_sub(declared),
        ));
    }
    let compression = match (flag, encoding) {
        (0, _) => Compression::Identity,
        (1, Compression::Identity) => return Err(FrameError::CompressedWithoutEncoding),
        (1, encoding) => encoding,
        (flag, _) => return Err(FrameError::InvalidFlag(flag)),
    };
    Ok((compression, body.slice(PREFIX_LEN..)))
}

/// A successful reply carrying `message`, uncompressed.
pub fn reply(message: &impl prost::Message) -> Response<tonic::body::Body> {
    let length = message.encoded_len();
    let Ok(prefix_length) = u32::try_from(length) else {
        return Status::internal("the reply is too large for a gRPC message").into_http();
    };
    let mut frame = Vec::with_capacity(PREFIX_LEN.saturating_add(length));
    frame.put_u8(0);
    frame.put_u32(prefix_length);
    if let Err(error) = message.encode(&mut frame) {
        return Status::internal(format!("encoding the reply: {error}")).into_http();
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let body = Full::new(Bytes::from(frame)).with_trailers(std::future::ready(Some(Ok(trailers))));
    let mut response = Response::new(tonic::body::Body::new(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(flag: u8, declared: u32, message: &[u8]) -> Bytes {
        let mut body = vec![flag];
        body.extend(declared.to_be_bytes());
        body.extend(message);
        Bytes::from(body)
    }

    #[test]
    fn one_message_is_parsed_with_its_compression() {
        let body = frame(0, 3, b"abc");
        assert_eq!(
            parse_unary(body, Compression::Gzip),
            Ok((Compression::Identity, Bytes::from_static(b"abc")))
        );
        let body = frame(1, 3, b"abc");
        assert_eq!(
            parse_unary(body, Compression::Zstd),
            Ok((Compression::Zstd, Bytes::from_static(b"abc")))
        );
        assert_eq!(
            parse_unary(frame(0, 0, b""), Compression::Identity),
            Ok((Compression::Identity, Bytes::new()))
        );
    }

    #[test]
    fn a_truncated_prefix_is_refused() {
        assert_eq!(
            parse_unary(Bytes::new(), Compression::Identity),
            Err(FrameError::NoMessage)
        );
        let error = parse_unary(Bytes::from_static(&[0, 0, 0]), Compression::Identity);
        assert_eq!(error, Err(FrameError::TruncatedPrefix(3)));
        assert_eq!(
            error.unwrap_err().to_string(),
            "the request ends after 3 bytes, inside the 5-byte message prefix"
        );
    }

    #[test]
    fn a_message_shorter_than_declared_is_refused() {
        let error = parse_unary(frame(0, 10, b"abc"), Compression::Identity).unwrap_err();
        assert_eq!(
            error,
            FrameError::LengthMismatch {
                declared: 10,
                actual: 3
            }
        );
        assert_eq!(
            error.to_string(),
            "the message prefix declares 10 bytes, but 3 follow it"
        );
    }

    #[test]
    fn two_messages_are_refused() {
        let mut body = frame(0, 3, b"abc").to_vec();
        body.extend_from_slice(&frame(0, 2, b"de"));
        let error = parse_unary(Bytes::from(body), Compression::Identity).unwrap_err();
        assert_eq!(error, FrameError::MoreThanOneMessage(7));
        assert_eq!(
            error.to_string(),
            "a unary call carries one message, but 7 more bytes follow it"
        );
    }

    #[test]
    fn a_compressed_flag_needs_an_encoding_and_flags_are_zero_or_one() {
        assert_eq!(
            parse_unary(frame(1, 3, b"abc"), Compression::Identity),
            Err(FrameError::CompressedWithoutEncoding)
        );
        assert_eq!(
            parse_unary(frame(2, 3, b"abc"), Compression::Gzip),
            Err(FrameError::InvalidFlag(2))
        );
    }

    #[test]
    fn an_unknown_encoding_is_unimplemented_and_says_what_is_accepted() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            request_compression(&headers).unwrap(),
            Compression::Identity
        );
        headers.insert("grpc-encoding", HeaderValue::from_static("zstd"));
        assert_eq!(request_compression(&headers).unwrap(), Compression::Zstd);
        headers.insert("grpc-encoding", HeaderValue::from_static("deflate"));
        let status = request_compression(&headers).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert_eq!(
            status.metadata().get(ACCEPT_ENCODING).unwrap(),
            ACCEPTED_ENCODINGS
        );
    }

    #[test]
    fn grpc_timeouts_are_read_in_every_unit() {
        let mut headers = HeaderMap::new();
        assert_eq!(grpc_timeout(&headers), None);
        for (text, expected) in [
            ("2S", std::time::Duration::from_secs(2)),
            ("1H", std::time::Duration::from_secs(3600)),
            ("1500m", std::time::Duration::from_millis(1500)),
            ("7n", std::time::Duration::from_nanos(7)),
        ] {
            headers.insert("grpc-timeout", HeaderValue::from_static(text));
            assert_eq!(grpc_timeout(&headers), Some(expected), "{text}");
        }
        for bad in ["S", "123456789S", "5x", ""] {
            headers.insert("grpc-timeout", HeaderValue::from_static(bad));
            assert_eq!(grpc_timeout(&headers), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn a_reply_is_one_uncompressed_message_then_status_ok() {
        let message = profbridge_translate::otlp::ExportProfilesServiceResponse {
            partial_success: Some(profbridge_translate::otlp::ExportProfilesPartialSuccess {
                rejected_profiles: 2,
                error_message: "bad".to_owned(),
            }),
        };
        let response = reply(&message);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/grpc");
        let collected = response.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        let body = collected.to_bytes();
        let (compression, encoded) = parse_unary(body, Compression::Identity).unwrap();
        assert_eq!(compression, Compression::Identity);
        assert_eq!(
            <profbridge_translate::otlp::ExportProfilesServiceResponse as prost::Message>::decode(
                encoded
            )
            .unwrap(),
            message
        );
    }
}
