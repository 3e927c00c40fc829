//! File descriptors: the process's limit on open files (RLIMIT_NOFILE),
//! raised to the hard limit at `serve` start as Go programs (the
//! OpenTelemetry Collector among them) do, and the connection caps the
//! listeners get from it ([`ConnectionPlan`]): the `max_connections` a
//! configuration leaves out are derived so that every listener's
//! connections and a reserve for the rest fit under the limit.

mod limit;
mod plan;

pub use limit::{raise_to_hard_limit, DescriptorLimit, RaiseError};
pub use plan::{ConnectionPlan, Reserve, PROCESS_RESERVE};
