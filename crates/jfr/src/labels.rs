//! The Pyroscope Java agent's labels snapshot: a protobuf
//! `LabelsSnapshot { map<int64, Context> contexts = 1; map<int64, string>
//! strings = 2; }` with `Context { map<int64, int64> labels = 1; }`,
//! label keys and values being ids into `strings`.

use std::collections::HashMap;

use profbridge_pprof::DecodeOptions;
use prost::Message;
use thiserror::Error;

#[derive(Clone, PartialEq, Message)]
pub struct LabelsContext {
    #[prost(map = "int64, int64", tag = "1")]
    pub labels: HashMap<i64, i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LabelsSnapshot {
    #[prost(map = "int64, message", tag = "1")]
    pub contexts: HashMap<i64, LabelsContext>,
    #[prost(map = "int64, string", tag = "2")]
    pub strings: HashMap<i64, String>,
}

#[derive(Debug, Error)]
pub enum LabelsError {
    #[error(transparent)]
    Gunzip(#[from] profbridge_pprof::DecodeError),
    #[error("the labels part is not a Pyroscope labels snapshot: {0}")]
    NotSnapshot(prost::DecodeError),
}

/// Decodes a snapshot, gzipped or not.
pub fn parse_labels_snapshot(
    bytes: &[u8],
    options: &DecodeOptions,
) -> Result<LabelsSnapshot, LabelsError> {
    let unzipped = profbridge_pprof::unzip(bytes, options)?;
    LabelsSnapshot::decode(unzipped.bytes.as_ref()).map_err(LabelsError::NotSnapshot)
}
