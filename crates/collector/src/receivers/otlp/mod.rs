//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

mod compression;
pub mod config;
mod decompressed;
mod factory;
pub mod grpc;
pub mod http;

pub use factory::OtlpReceiverFactory;
