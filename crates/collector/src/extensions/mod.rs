//! Extensions: what runs beside the pipelines, one folder each.

pub mod bearertokenauth;
pub mod file_storage;
pub mod health_check;
mod http_endpoint;
pub mod pprof;
pub mod zpages;
