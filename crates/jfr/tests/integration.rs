//! Every integration test of the JFR reader and converter, in one binary
//! (one link; the JDK recordings are the testkit's, made once per machine).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod async_profiler;
mod jdk_oracle;
mod robustness;
mod synthetic;
