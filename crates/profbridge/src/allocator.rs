//! The allocator settings of `serve` and `convert` (whose setting is
//! described at [`apply_convert_settings`]). mimalloc keeps freed memory
//! for a while (1 s in v3) before giving it back to the system; under steady
//! load that retention is most of the collector's memory beyond its queue
//! budgets. `serve` therefore sets a 50 ms purge delay, unless the
//! operator configured mimalloc through any `MIMALLOC_` variable (see
//! docs/architecture.md, "Memory is given back", for how it was chosen).
//!
//! mimalloc reads the purge delay each time it schedules a purge, so
//! setting it once at start-up, in-process, takes effect for the rest of
//! the run; purges scheduled before that (with the default delay, ten
//! times longer for arenas) are carried out at once by a forced collect.
//!
//! mimalloc carries out a purge that is due only when the program next
//! allocates or frees, so a collector that goes quiet (every body stalled,
//! or all of them just timed out) would keep what it freed last: 60 MiB
//! after 40 stalled uploads were dropped. `serve` therefore runs a thread
//! that has mimalloc carry out the purges that are due every
//! [`PURGE_INTERVAL`]; it frees nothing that is not due.

use std::ffi::{c_int, c_long};
use std::time::Duration;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (mimalloc.h): the
/// sys crate exports no constant for it. `serve`'s start-up log reads the
/// option back, and a test checks that `MIMALLOC_PURGE_DELAY` shows there.
const MI_OPTION_PURGE_DELAY: c_int = 15;
const COLLECTOR_PURGE_DELAY_MS: c_long = 50;

/// How often due purges are carried out; twice the purge delay, so that
/// memory freed and then left alone is given back within three delays.
pub const PURGE_INTERVAL: Duration = Duration::from_millis(100);

/// Who chose the purge delay in effect, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeDelaySource {
    Collector,
    Environment,
}

/// The purge delay in effect, in milliseconds, and who chose it.
#[derive(Debug, Clone, Copy)]
pub struct AllocatorSettings {
    pub purge_delay_ms: c_long,
    pub source: PurgeDelaySource,
}

/// `mi_option_arena_max_object_size` in `mi_option_e` (mimalloc.h), in KiB.
const MI_OPTION_ARENA_MAX_OBJECT_SIZE: c_int = 45;
/// What `convert` sets that option to. Measured (docs/benchmarks.md,
/// "Where convert's memory goes"): with mimalloc's default, a call over
/// many files peaked far above its largest file alone, what one file freed
/// not all being reused by the next; with the option set (to this, or to
/// any size up to 1 GiB that was tried) freed memory is given back and
/// faulted in again instead, and the peak stays within 1.5 MB of the
/// largest file's, for 11 to 16% more CPU over 100 files.
const CONVERT_ARENA_MAX_OBJECT_KIB: c_long = 256;

fn configured_by_operator() -> bool {
    std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("MIMALLOC_"))
}

/// Sets `convert`'s largest arena object unless a `MIMALLOC_` variable is
/// set.
pub fn apply_convert_settings() {
    if !configured_by_operator() {
        set_option(
            MI_OPTION_ARENA_MAX_OBJECT_SIZE,
            CONVERT_ARENA_MAX_OBJECT_KIB,
        );
    }
}

#[allow(unsafe_code)]
fn set_option(option: c_int, value: c_long) {
    // SAFETY: mi_option_set stores an integer in mimalloc's option table;
    // any option index and value are accepted.
    unsafe { libmimalloc_sys::mi_option_set(option, value) }
}

/// Sets the collector's purge delay unless a `MIMALLOC_` variable is set.
pub fn apply_collector_settings() -> AllocatorSettings {
    let source = if configured_by_operator() {
        PurgeDelaySource::Environment
    } else {
        set_purge_delay(COLLECTOR_PURGE_DELAY_MS);
        PurgeDelaySource::Collector
    };
    AllocatorSettings {
        purge_delay_ms: purge_delay(),
        source,
    }
}

// The only unsafe code in the workspace: calls into mimalloc's C API,
// which takes plain integers and has no preconditions.
#[allow(unsafe_code)]
fn set_purge_delay(milliseconds: c_long) {
    // SAFETY: mi_option_set stores an integer in mimalloc's option table;
    // any option index and value are accepted. mi_collect frees and purges
    // what mimalloc holds for the process; it may be called at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, milliseconds);
        libmimalloc_sys::mi_collect(true);
    }
}

/// Frees and purges what mimalloc keeps for the process, giving the pages
/// back to the system; a `memory_limiter` calls it above its hard limit.
#[allow(unsafe_code)]
pub fn release_memory() {
    // SAFETY: as in set_purge_delay: mi_collect has no preconditions.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Starts the thread that carries out due purges every [`PURGE_INTERVAL`].
pub fn start_purging() -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("allocator-purge".to_owned())
        .spawn(|| {
            init_thread();
            loop {
                std::thread::sleep(PURGE_INTERVAL);
                purge_due();
            }
        })
        .map(drop)
}

#[allow(unsafe_code)]
fn init_thread() {
    // SAFETY: mi_thread_init sets up the calling thread's heap, if it has
    // none yet; it has no preconditions. mi_collect works through that
    // heap and does nothing for a thread without one, which a thread that
    // never allocated may be.
    unsafe { libmimalloc_sys::mi_thread_init() }
}

#[allow(unsafe_code)]
fn purge_due() {
    // SAFETY: as in set_purge_delay. Unforced, it collects this thread's
    // (empty) heap and carries out the purges whose delay has passed.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

#[allow(unsafe_code)]
fn purge_delay() -> c_long {
    // SAFETY: mi_option_get reads mimalloc's option table (initialising it
    // from the environment on first use); it has no preconditions.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
}
