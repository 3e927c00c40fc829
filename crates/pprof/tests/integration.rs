//! Every integration test of pprof, in one binary: one link instead of one per file.

mod corpus;
mod folded;
mod gzip;
mod legacy;
mod robustness;
mod validation;
