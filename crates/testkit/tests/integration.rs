//! Every integration test of testkit, in one binary.

mod kafka;
mod pprof_target;
