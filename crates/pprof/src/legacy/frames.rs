//! The drop/keep frame regexps google/pprof gives legacy profiles, so that
//! allocator, lock and profiler frames do not show as the program's own.

const ALLOCATOR_FRAMES: &[&str] = &[
    // POSIX
    "calloc",
    "cfree",
    "malloc",
    "free",
    "memalign",
    "do_memalign",
    "(__)?posix_memalign",
    "pvalloc",
    "valloc",
    "realloc",
    // tcmalloc
    "tcmalloc::.*",
    "tc_calloc",
    "tc_cfree",
    "tc_malloc",
    "tc_free",
    "tc_memalign",
    "tc_posix_memalign",
    "tc_pvalloc",
    "tc_valloc",
    "tc_realloc",
    "tc_new",
    "tc_delete",
    "tc_newarray",
    "tc_deletearray",
    "tc_new_nothrow",
    "tc_newarray_nothrow",
    // macOS malloc zones
    "malloc_zone_malloc",
    "malloc_zone_calloc",
    "malloc_zone_valloc",
    "malloc_zone_realloc",
    "malloc_zone_memalign",
    "malloc_zone_free",
    // Go runtime
    r"runtime\..*",
    // others
    "BaseArena::.*",
    "(::)?do_malloc_no_errno",
    "(::)?do_malloc_pages",
    "(::)?do_malloc",
    "DoSampledAllocation",
    "MallocedMemBlock::MallocedMemBlock",
    "_M_allocate",
    "__builtin_(vec_)?delete",
    "__builtin_(vec_)?new",
    "__gnu_cxx::new_allocator::allocate",
    "__libc_malloc",
    "__malloc_alloc_template::allocate",
    "allocate",
    "cpp_alloc",
    r"operator new(\[\])?",
    "simple_alloc::allocate",
];

/// Go runtime frames worth keeping even inside allocator stacks.
const ALLOCATOR_KEEP_FRAMES: &[&str] = &[
    r"runtime\.panic",
    r"runtime\.reflectcall",
    r"runtime\.call[0-9]*",
];

const PROFILER_FRAMES: &[&str] = &[
    "ProfileData::Add",
    "ProfileData::prof_handler",
    "CpuProfiler::prof_handler",
    "__pthread_sighandler",
    "__restore",
];

const LOCK_FRAMES: &[&str] = &[
    "RecordLockProfileData",
    "(base::)?RecordLockProfileData.*",
    "(base::)?SubmitMutexProfileData.*",
    "(base::)?SubmitSpinLockProfileData.*",
    "(base::Mutex::)?AwaitCommon.*",
    "(base::Mutex::)?Unlock.*",
    "(base::Mutex::)?UnlockSlow.*",
    "(base::Mutex::)?ReaderUnlock.*",
    "(base::MutexLock::)?~MutexLock.*",
    "(Mutex::)?AwaitCommon.*",
    "(Mutex::)?Unlock.*",
    "(Mutex::)?UnlockSlow.*",
    "(Mutex::)?ReaderUnlock.*",
    "(MutexLock::)?~MutexLock.*",
    "(SpinLock::)?Unlock.*",
    "(SpinLock::)?SlowUnlock.*",
    "(SpinLockHolder::)?~SpinLockHolder.*",
];

const HEAP_TYPES: &[&[&str]] = &[
    &["allocations", "size"],
    &["objects", "space"],
    &["inuse_objects", "inuse_space"],
    &["alloc_objects", "alloc_space"],
    &[
        "alloc_objects",
        "alloc_space",
        "inuse_objects",
        "inuse_space",
    ],
];
const CONTENTION_TYPES: &[&[&str]] = &[&["contentions", "delay"]];

/// (drop_frames, keep_frames) for a legacy profile with these sample types.
pub(super) fn frame_filters(sample_types: &[(String, String)]) -> (String, String) {
    let is = |kinds: &[&[&str]]| {
        kinds.iter().any(|kind| {
            kind.len() == sample_types.len()
                && kind.iter().zip(sample_types).all(|(k, (t, _))| k == t)
        })
    };
    if is(HEAP_TYPES) {
        (ALLOCATOR_FRAMES.join("|"), ALLOCATOR_KEEP_FRAMES.join("|"))
    } else if is(CONTENTION_TYPES) {
        (LOCK_FRAMES.join("|"), String::new())
    } else {
        (PROFILER_FRAMES.join("|"), String::new())
    }
}
