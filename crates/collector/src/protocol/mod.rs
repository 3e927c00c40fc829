//! The wire protocols' own rules, shared by receivers and exporters and
//! knowing nothing of pipelines: gRPC unary framing, compression names,
//! admission hints (Retry-After, declared lengths), what an HTTP reply's
//! status means to a sender, `google.rpc` RetryInfo, and Grafana
//! Pyroscope's push API.

pub mod admission;
pub mod compression;
pub mod grpc_unary;
pub mod http_status;
pub mod push_v1;
pub mod pyroscope_attributes;
pub mod retry_info;
