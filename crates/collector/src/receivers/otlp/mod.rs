//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

mod admitted_body;
mod compression;
pub mod config;
mod decompressed;
pub mod grpc;
mod grpc_unary;
pub mod http;
mod intake;
pub mod retry_info;

pub(crate) use admitted_body::{drain, read_admitted, BodyBudget, BodyError};
pub use intake::{
    admit, intake, settle, Admission, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
