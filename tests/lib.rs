//! End-to-end and interop tests against real tools: `interop.rs` is the
//! one test binary, each module beside it a group. The crate itself has no
//! code.
