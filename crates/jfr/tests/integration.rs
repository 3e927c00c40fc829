//! Every integration test of the JFR reader and converter, in one binary
//! (one link, and one JDK recording shared by all of them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod jdk;
mod jdk_oracle;
mod jdk_recording;
mod robustness;
mod synthetic;
mod synthetic_recording;
