//! The collector's allocator settings. mimalloc keeps freed memory for a
//! while (1 s in v3) before giving it back to the system; under steady
//! load that retention is most of the collector's memory beyond its queue
//! budgets. `serve` therefore runs with a 50 ms purge delay (what is kept
//! grows with the delay times the rate requests come and go; with the
//! receivers and exporters reusing their memory, 50 ms kept the peak at
//! twice the sustainable load well under the queue budget + 100 MiB, and
//! giving pages back sooner cost system time, the pages being faulted in
//! again), unless the
//! operator set `MIMALLOC_PURGE_DELAY` (or any other `MIMALLOC_` option)
//! themselves. mimalloc reads its options when the process starts, before
//! `main`, so the setting takes a re-execution of the same binary with the
//! same arguments; the process keeps its id and its standard streams.

use std::os::unix::process::CommandExt;
use std::process::Command;

const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";
const PURGE_DELAY_MS: &str = "50";

/// Re-executes the process with the collector's allocator settings when
/// they are not in its environment yet; returns when it cannot (the
/// collector then runs with mimalloc's defaults).
pub fn apply_collector_settings() {
    if std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("MIMALLOC_")) {
        return;
    }
    let Ok(executable) = std::env::current_exe() else {
        return;
    };
    let error = Command::new(executable)
        .args(std::env::args_os().skip(1))
        .env(PURGE_DELAY_VAR, PURGE_DELAY_MS)
        .exec();
    tracing::debug!(%error, "running with mimalloc's default purge delay");
}
