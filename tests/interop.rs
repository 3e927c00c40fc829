//! The interop tests against real tools, in one binary.

mod go_pprof_interop;
mod go_runtime_legacy_interop;
mod gperftools_interop;
mod otlp_to_pprof_go_interop;
