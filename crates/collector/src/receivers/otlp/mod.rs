//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

mod compression;
pub mod config;
mod decompressed;
pub mod grpc;
mod grpc_unary;
mod gunzip;
pub mod http;
mod intake;
pub mod retry_info;

pub use intake::{
    admit, intake, settle, Admission, Decision, Outcome, DECODED_BYTES_PER_PROTOBUF_BYTE,
};
