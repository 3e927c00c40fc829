//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

mod admitted_body;
mod compression;
pub mod config;
mod decompressed;
mod factory;
pub mod grpc;
pub mod http;

pub(crate) use admitted_body::{drain, read_admitted, BodyBudget, BodyError};
pub use factory::OtlpReceiverFactory;
