//! End-to-end and interop tests; each `*.rs` beside this file is one test
//! binary. The crate itself has no code.
