//! Every integration test of testkit, in one binary.

mod pprof_target;
