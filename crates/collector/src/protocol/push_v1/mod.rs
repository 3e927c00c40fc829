//! Grafana Pyroscope's push API, `push.v1.PusherService/Push`, as its
//! SDKs and Alloy's `pyroscope.write` speak it: a `PushRequest` of series,
//! each a set of labels and raw pprof profiles, sent over the Connect
//! protocol (unary; protobuf or JSON bodies). The messages are declared
//! here with the field numbers of Pyroscope's `push/v1/push.proto` and
//! `types/v1/types.proto`; `RawProfileSeries.annotations` (field 3) is
//! left out, as Pyroscope drops annotations that come through the push
//! API (prost skips the field).

pub mod connect;
pub mod json;

/// The path of the Push method.
pub const PUSH_PATH: &str = "/push.v1.PusherService/Push";

/// The label that names the application.
pub const LABEL_SERVICE_NAME: &str = "service_name";
/// The label that names the profile (`process_cpu`, `memory`…).
pub const LABEL_PROFILE_NAME: &str = "__name__";
/// `"false"`: the profile already holds deltas, Pyroscope must not
/// compute them; `"true"`: it must.
pub const LABEL_DELTA: &str = "__delta__";
/// The session label, the one `__` label Pyroscope stores.
pub const LABEL_SESSION_ID: &str = "__session_id__";

/// `push.v1.PushRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    #[prost(message, repeated, tag = "1")]
    pub series: Vec<RawProfileSeries>,
}

/// `push.v1.PushResponse`: empty.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushResponse {}

/// `push.v1.RawProfileSeries`: labels and the profiles that carry them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawProfileSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<RawSample>,
}

/// `push.v1.RawSample`: one pprof profile, usually gzipped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawSample {
    #[prost(bytes = "vec", tag = "1")]
    pub raw_profile: Vec<u8>,
    /// `ID` in the schema: a unique id of the profile, often empty.
    #[prost(string, tag = "2")]
    pub id: String,
}

/// `types.v1.LabelPair`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

impl LabelPair {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    /// Field numbers and wire types, byte by byte: series (1) holding
    /// labels (1: name 1, value 2) and samples (1: raw_profile 1, ID 2).
    #[test]
    fn the_wire_format_is_pyroscopes() {
        let request = PushRequest {
            series: vec![RawProfileSeries {
                labels: vec![LabelPair::new("a", "b")],
                samples: vec![RawSample {
                    raw_profile: vec![7],
                    id: "x".to_owned(),
                }],
            }],
        };
        let bytes = request.encode_to_vec();
        assert_eq!(
            bytes,
            [
                0x0a, 0x10, // series, 16 bytes
                0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, b'b', // labels
                0x12, 0x06, 0x0a, 0x01, 7, 0x12, 0x01, b'x', // samples
            ]
        );
        assert_eq!(PushRequest::decode(bytes.as_slice()).ok(), Some(request));
    }
}
