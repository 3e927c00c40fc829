//! What can go wrong with one file, and why a location stays unsymbolized.

use std::fmt;
use std::path::PathBuf;

pub use crate::kallsyms::KallsymsError;

/// A file that was found but cannot be used; each is reported once.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a readable ELF file: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: object::read::Error,
    },
    #[error("{}: not an ELF file", path.display())]
    NotElf { path: PathBuf },
    #[error("{}: build id {found} does not match the mapping's {wanted}", path.display())]
    BuildIdMismatch {
        path: PathBuf,
        found: String,
        wanted: String,
    },
    #[error("{}: its debug information cannot be loaded: {message}", path.display())]
    DebugInfo { path: PathBuf, message: String },
    #[error("{}: its Go symbol tables cannot be read: {source}", path.display())]
    GoTables {
        path: PathBuf,
        #[source]
        source: crate::gopclntab::GoTablesError,
    },
    #[error("debuginfod {url}: build id {build_id}: {source}")]
    Debuginfod {
        url: String,
        build_id: String,
        #[source]
        source: crate::debuginfod::FetchError,
    },
    #[error("{mapping:?} leaves the root {}", root.display())]
    OutsideRoot { mapping: String, root: PathBuf },
    #[error("{mapping:?} passes through too many symbolic links under the root {}", root.display())]
    TooManyLinks { mapping: String, root: PathBuf },
    #[error(transparent)]
    Kallsyms(#[from] KallsymsError),
}

/// Why a native or kernel location was left without lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MissReason {
    /// The location has no mapping, or its mapping names neither a file nor a build id.
    NoMapping,
    /// No ELF file or debug file was found for the mapping.
    FileNotFound,
    /// Only a debug file was found: its program headers do not say where
    /// runtime addresses are in the file, the mapped file's do.
    OnlyDebugFile,
    /// A file was found but could not be used (see [`crate::Report::problems`]).
    FileUnusable,
    /// The address falls outside the mapping or outside the file's loadable segments.
    AddressOutsideFile,
    /// Neither debug information nor a symbol table covers the address.
    NoSymbol,
    /// No local file was found and a debuginfod server failed or timed out
    /// (see [`crate::Report::problems`]).
    DebuginfodFailed,
    /// The request's time budget ran out before the location's turn.
    OutOfTime,
    /// A kernel location, and the kernel's symbols cannot be read (see
    /// [`crate::Report::problems`]), or hide their addresses.
    KallsymsUnreadable,
    /// A kernel location whose address counts from where a module was
    /// loaded (as the eBPF profiler writes them), which kallsyms does not say.
    KernelModuleRelative,
    /// A kernel location whose mapping's build id is not the running
    /// kernel's: its profile was taken on another machine or kernel.
    OtherKernel,
}

impl MissReason {
    /// Every reason, in order.
    pub const ALL: [MissReason; 11] = [
        MissReason::NoMapping,
        MissReason::FileNotFound,
        MissReason::OnlyDebugFile,
        MissReason::FileUnusable,
        MissReason::AddressOutsideFile,
        MissReason::NoSymbol,
        MissReason::DebuginfodFailed,
        MissReason::OutOfTime,
        MissReason::KallsymsUnreadable,
        MissReason::KernelModuleRelative,
        MissReason::OtherKernel,
    ];

    /// A short name for counters and log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            MissReason::NoMapping => "no_mapping",
            MissReason::FileNotFound => "file_not_found",
            MissReason::OnlyDebugFile => "only_debug_file",
            MissReason::FileUnusable => "file_unusable",
            MissReason::AddressOutsideFile => "address_outside_file",
            MissReason::NoSymbol => "no_symbol",
            MissReason::DebuginfodFailed => "debuginfod_failed",
            MissReason::OutOfTime => "out_of_time",
            MissReason::KallsymsUnreadable => "kallsyms_unreadable",
            MissReason::KernelModuleRelative => "kernel_module_relative",
            MissReason::OtherKernel => "other_kernel",
        }
    }
}

impl fmt::Display for MissReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
