//! The interop tests against real tools, in one binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "support/raw_text.rs"]
mod raw_text;

mod go_delta_interop;
mod go_pprof_interop;
mod go_runtime_legacy_interop;
mod gperftools_interop;
mod otlp_to_pprof_go_interop;
