//! The reserved pprof labels that carry what pprof has no field for.

pub(crate) mod attr_types;
pub(crate) mod build_id;
pub(crate) mod frame_types;
pub(crate) mod hex;
pub(crate) mod otlp_data;
