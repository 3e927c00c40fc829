//! Deltas of cumulative profiles: the rules of docs/pprof.md, on built
//! scrapes, properties over random sequences of them, and corpus profiles.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod build;
mod corpus;
mod properties;
mod rules;
