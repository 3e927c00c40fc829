//! Every integration test of pprof, in one binary: one link instead of one per file.

mod corpus;
mod delta;
mod encoder_differential;
mod field_numbers;
mod folded;
mod gunzip_differential;
mod gzip;
mod legacy;
mod packed;
mod robustness;
mod validation;
