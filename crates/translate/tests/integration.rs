//! Every integration test of translate, in one binary: one link instead of one per file.

mod corpus_roundtrip;
mod field_numbers;
mod json;
mod merge;
mod otlp_decode;
mod otlp_differential;
mod otlp_properties;
mod pprof_properties;
mod reserved_string;
mod translation;
