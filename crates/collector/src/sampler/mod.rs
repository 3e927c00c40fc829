//! profbridge's own CPU profile, for the pprof extension and the pprof
//! receiver's `self` source. pprof-rs samples the process: the kernel
//! sends SIGPROF every 10 ms of CPU time the process uses (ITIMER_PROF),
//! and its handler records the stack of the thread that was running. Only
//! one recording runs in a process at a time, as with Go's CPU profiler:
//! pprof-rs holds the one profiler, and starting a second recording is
//! [`SamplerError::InUse`]. The addresses are resolved off the signal
//! handler (recording.rs), the profile is built by profile.rs from the
//! mappings maps.rs reads, and encoded by profbridge-pprof.

mod maps;
mod profile;
mod recording;

pub use recording::{Recorded, Recording, SamplerError, FREQUENCY_HZ};
