//! What several test modules share: collectors to test against (in the
//! test process, or as a spawned `profbridge serve`), profiles with
//! strings that are not UTF-8, and `go tool pprof` output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod capture;
pub mod collector;
pub mod http;
pub mod in_process;
pub mod invalid_utf8;
#[path = "../../../../tests/support/raw_text.rs"]
pub mod raw_text;
