//! The OTLP receiver: gRPC `ProfilesService/Export` and HTTP
//! `POST /v1development/profiles`.

pub mod config;
pub mod grpc;
pub mod http;
mod intake;
pub mod retry_info;

pub use intake::{intake, Outcome};
