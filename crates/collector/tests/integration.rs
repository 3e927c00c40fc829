//! Every integration test of collector, in one binary: one link instead of one per file.

mod config;
mod config_reference;
mod exporter_helper;
mod extensions_config;
mod file_exporter;
mod layering;
mod memory_limiter_in_process;
mod no_mutable_statics;
mod no_string_errors;
mod otlp_exporters;
mod pipeline_processors;
mod pprof_extension_config;
mod pprof_receiver_config;
mod pprof_remote_go_in_process;
mod pprof_remote_in_process;
mod pprof_remote_tls_in_process;
mod pprof_sources_config;
mod processors;
mod pyroscope_exporter;
mod receiver_security;
mod symbolize_processor;
mod telemetry_config;
mod unavailable_types;
mod zpages_config;
