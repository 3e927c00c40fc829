//! Extensions: what runs beside the pipelines, one folder each.

pub mod health_check;
pub mod zpages;
