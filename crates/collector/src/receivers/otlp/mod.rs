//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

mod admitted_body;
mod compression;
pub mod config;
mod decompressed;
mod factory;
pub mod grpc;
pub mod http;

pub use crate::receivers::intake::{
    admit, intake, settle, Admission, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
pub(crate) use admitted_body::{drain, read_admitted, BodyBudget, BodyError};
pub use factory::OtlpReceiverFactory;
