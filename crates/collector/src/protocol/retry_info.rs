//! `google.rpc.Status` with a `google.rpc.RetryInfo` detail, the way gRPC
//! servers tell clients when to retry (the `grpc-status-details-bin`
//! trailer).

use std::time::Duration;

use prost::Message;

#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<Any>,
}

#[derive(Clone, PartialEq, Message)]
struct Any {
    #[prost(string, tag = "1")]
    type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<ProtoDuration>,
}

#[derive(Clone, PartialEq, Message)]
struct ProtoDuration {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

/// The encoded `google.rpc.Status` carrying a RetryInfo of `delay`.
pub fn status_details(code: i32, message: &str, delay: Duration) -> Vec<u8> {
    let retry = RetryInfo {
        retry_delay: Some(ProtoDuration {
            seconds: i64::try_from(delay.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(delay.subsec_nanos()).unwrap_or(0),
        }),
    };
    RpcStatus {
        code,
        message: message.to_owned(),
        details: vec![Any {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".to_owned(),
            value: retry.encode_to_vec(),
        }],
    }
    .encode_to_vec()
}

/// The retry delay in encoded status details, if there is one.
pub fn retry_delay(details: &[u8]) -> Option<Duration> {
    let status = RpcStatus::decode(details).ok()?;
    let any = status
        .details
        .iter()
        .find(|d| d.type_url.ends_with("google.rpc.RetryInfo"))?;
    let delay = RetryInfo::decode(any.value.as_slice()).ok()?.retry_delay?;
    Some(Duration::new(
        u64::try_from(delay.seconds).ok()?,
        u32::try_from(delay.nanos).ok()?,
    ))
}

/// The message of an encoded `google.rpc.Status`, when the bytes are one.
pub fn status_message(encoded: &[u8]) -> Option<String> {
    RpcStatus::decode(encoded).ok().map(|status| status.message)
}

/// The encoded `google.rpc.Status` for an HTTP error body.
pub fn status(code: i32, message: &str) -> Vec<u8> {
    RpcStatus {
        code,
        message: message.to_owned(),
        details: Vec::new(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delay_round_trips() {
        let details = status_details(14, "full", Duration::from_millis(1500));
        assert_eq!(retry_delay(&details), Some(Duration::from_millis(1500)));
        assert_eq!(retry_delay(&status(3, "bad")), None);
    }
}
