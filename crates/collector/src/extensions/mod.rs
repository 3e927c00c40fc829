//! Extensions: what runs beside the pipelines, one folder each.

pub mod file_storage;
pub mod health_check;
