//! Every integration test of profbridge, in one binary: one link instead of one per file.

mod allocator;
mod convert;
mod deploy;
mod descriptors_binary;
mod extensions_in_process;
mod forwarding;
mod inspect;
mod jfr_cli;
mod kafka;
mod kafka_security;
mod legacy_ingest;
mod lockout_binary;
mod memory_limiter_binary;
mod otelcol_telemetry;
mod pprof_extension_binary;
mod pprof_remote_binary;
mod pprof_sources;
mod pyroscope_jfr;
mod real_world_configs;
mod send;
mod serve;
mod support;
mod symbolize;
mod symbolize_debuginfod;
mod telemetry;
mod zpages_in_process;
