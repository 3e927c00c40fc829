//! The `remote` source of the pprof receiver: profiles pulled from HTTP
//! endpoints such as Go's `net/http/pprof`.

pub mod config;
