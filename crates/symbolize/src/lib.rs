//! Symbolization of native frames in OTLP profiles (docs/symbolize.md).
//!
//! For each location without lines whose mapping names an ELF file or a
//! build id, the file is found (the mapping's path under a root, then
//! `DIR/.build-id/xx/rest.debug`, then `.gnu_debuglink`, then debuginfod
//! servers by build id), the runtime address becomes an ELF address
//! through the file's loadable segments, and addr2line resolves functions,
//! files, lines and inlined frames (innermost first); Go binaries without
//! DWARF resolve from Go's own tables (`gopclntab`). Kernel frames are
//! named from `/proc/kallsyms` when it is given; interpreted frames are
//! left alone.

mod binary;
mod cache;
mod debuginfod;
mod dictionary;
mod elf;
mod error;
mod frame_kind;
mod gopclntab;
mod kallsyms;
mod kernel_notes;
mod locate;
mod processes;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use profbridge_translate::keys::{BUILD_ID_GNU, BUILD_ID_HTLHASH, MAPPING_FLAGS};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, Line};
use rustc_hash::FxHashMap;

use binary::{FileKey, Frame, FunctionText};
use cache::{AddressCache, FileCache, Resolved};
pub use cache::{CacheLimits, CacheUse, CACHED_ADDRESSES};
pub use debuginfod::{
    server_urls, Debuginfod, FetchError, UnsupportedUrl, DEFAULT_CACHE_MAX_BYTES,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MISS_TTL, DEFAULT_READ_TIMEOUT, DEFAULT_TIMEOUT,
    SERVER_BACKOFF,
};
use dictionary::Editor;
pub use error::{FileError, MissReason};
use frame_kind::{kernel_address, kind_of, Kind};
pub use gopclntab::GoTablesError;
use kallsyms::Kallsyms;
pub use kallsyms::{KallsymsError, MAX_KALLSYMS_BYTES};

/// Where files are looked for.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Mapping paths are opened under this folder (`/` for the local
    /// machine); `None` opens no mapping path.
    pub root: Option<PathBuf>,
    /// A `/proc` folder: a location sampled in a process that names its
    /// `process.pid` opens mapping paths under `PROC/PID/root` instead of
    /// `root`, which sees the files of a process in another container.
    pub process_roots: Option<PathBuf>,
    /// Folders of separate debug files, such as `/usr/lib/debug`: searched
    /// by build id (`.build-id/xx/rest.debug`, and `.build-id/xx/rest` for
    /// the file itself) and for `.gnu_debuglink` names.
    pub debug_dirs: Vec<PathBuf>,
    /// debuginfod servers, asked by build id when the files above do not
    /// give both the mapped file and its DWARF.
    pub debuginfod: Option<Debuginfod>,
    /// The kernel's symbols, in `/proc/kallsyms` format, for kernel frames;
    /// `None` leaves kernel frames alone.
    pub kallsyms: Option<PathBuf>,
    /// The notes of the kernel `kallsyms` describes (`/sys/kernel/notes`):
    /// a kernel location whose mapping has a GNU build id other than the
    /// one in them is not named from `kallsyms`. `None`, or a file that
    /// cannot be read, checks nothing.
    pub kernel_notes: Option<PathBuf>,
}

impl Sources {
    /// The folder mapping paths of process `pid` (when known) are opened in.
    pub(crate) fn root_of(&self, pid: Option<u32>) -> Option<PathBuf> {
        match (&self.process_roots, pid) {
            (Some(proc), Some(pid)) => Some(proc.join(pid.to_string()).join("root")),
            _ => self.root.clone(),
        }
    }
}

/// What one call of [`Symbolizer::symbolize`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// Locations that had no lines and now have them.
    pub locations_symbolized: u64,
    /// Lines written, inlined frames included.
    pub frames_symbolized: u64,
    /// Native and kernel locations without lines left so, by reason.
    pub misses: BTreeMap<MissReason, u64>,
    /// Interpreted locations, and kernel locations when there are no
    /// kernel symbols to read: not looked at.
    pub left_alone: u64,
    /// Files found but unusable, each reported the first time it is met.
    pub problems: Vec<FileError>,
    pub cache: CacheUse,
}

impl Report {
    pub fn missed(&self) -> u64 {
        self.misses.values().sum()
    }
}

/// Resolves addresses; keeps a cache of opened files (and of files not
/// found or unusable) by path, build id and process, and of resolved
/// addresses, bounded by [`CacheLimits`].
pub struct Symbolizer {
    sources: Sources,
    debuginfod: Option<debuginfod::Client>,
    files: FileCache,
    addresses: AddressCache,
    kernel: KernelSymbols,
}

/// The kernel's symbols, read the first time a kernel location needs them.
enum KernelSymbols {
    NotRead,
    /// The symbols, and the kernel's build id when its notes give one.
    Read(Kallsyms, Option<Vec<u8>>),
    Unreadable,
}

/// The id kernel functions have in the cache of resolved addresses; files
/// count from 1.
const KERNEL_FILE: u64 = 0;

impl Symbolizer {
    pub fn new(sources: Sources) -> Self {
        Self::with_limits(sources, CacheLimits::default())
    }

    pub fn with_limits(sources: Sources, limits: CacheLimits) -> Self {
        Self {
            debuginfod: sources.debuginfod.clone().map(debuginfod::Client::new),
            sources,
            // Resolved addresses take at most a quarter of the budget, open
            // files the rest.
            files: FileCache::new(CacheLimits {
                files: limits.files,
                bytes: limits.bytes - limits.bytes / 4,
            }),
            addresses: AddressCache::new(limits.bytes / 4),
            kernel: KernelSymbols::NotRead,
        }
    }

    /// The bytes the caches hold now, as [`CacheLimits::bytes`] counts them.
    pub fn cached_bytes(&self) -> u64 {
        self.files.bytes() + self.addresses.bytes()
    }

    /// Adds lines to every native location of `request` that has none and
    /// can be resolved, and sets its mapping's `pprof.mapping.has_*`.
    pub fn symbolize(&mut self, request: &mut ExportProfilesServiceRequest) -> Report {
        self.symbolize_until(request, None)
    }

    /// [`Self::symbolize`], resolving no location once `deadline` has
    /// passed (those are counted as [`MissReason::OutOfTime`]); a file
    /// being opened when it passes is opened to the end.
    pub fn symbolize_until(
        &mut self,
        request: &mut ExportProfilesServiceRequest,
        deadline: Option<Instant>,
    ) -> Report {
        let mut report = Report::default();
        let pids = match self.sources.process_roots {
            Some(_) => processes::pids_of_locations(request),
            None => FxHashMap::default(),
        };
        let Some(dictionary) = request.dictionary.as_mut() else {
            return report;
        };
        let mut editor = Editor::new(dictionary);
        // Each mapping's attributes are read once, whatever the processes.
        let mut mapping_targets: FxHashMap<usize, Option<Target>> = FxHashMap::default();
        let mut targets: FxHashMap<(usize, Option<u32>), Option<Target>> = FxHashMap::default();
        let mut kernel_build_ids: FxHashMap<usize, Option<Vec<u8>>> = FxHashMap::default();
        let mut flags: FxHashMap<usize, [bool; 4]> = FxHashMap::default();
        for index in 1..editor.dictionary.location_table.len() {
            let Some(location) = editor.dictionary.location_table.get(index) else {
                continue;
            };
            if !location.lines.is_empty() {
                continue;
            }
            let address = location.address;
            let mapping_index = usize::try_from(location.mapping_index).unwrap_or(0);
            let kind = kind_of(&editor, &location.attribute_indices, mapping_index);
            if kind == Kind::Interpreted
                || (kind == Kind::Kernel && self.sources.kallsyms.is_none())
            {
                report.left_alone += 1;
                continue;
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                *report.misses.entry(MissReason::OutOfTime).or_default() += 1;
                continue;
            }
            let pid = pids.get(&index).copied();
            let target = match kind {
                Kind::Native => targets
                    .entry((mapping_index, pid))
                    .or_insert_with(|| {
                        let target = mapping_targets
                            .entry(mapping_index)
                            .or_insert_with(|| target_of(&editor, mapping_index));
                        target.clone().map(|target| target.in_process(pid))
                    })
                    .as_ref(),
                _ => None,
            };
            if kind == Kind::Native && target.is_none() {
                *report.misses.entry(MissReason::NoMapping).or_default() += 1;
                continue;
            }
            let outcome = match target {
                Some(target) => self.resolve(target, address, &mut report, deadline),
                None => {
                    let mapped_build_id = kernel_build_ids
                        .entry(mapping_index)
                        .or_insert_with(|| mapping_build_id(&editor, mapping_index));
                    let mapped_build_id = mapped_build_id.clone();
                    self.resolve_kernel(
                        &editor,
                        mapping_index,
                        mapped_build_id.as_deref(),
                        address,
                        &mut report,
                    )
                }
            };
            match outcome {
                Ok((frames, found)) => {
                    let lines = write_lines(&mut editor, &frames);
                    let mapping_flags = flags.entry(mapping_index).or_default();
                    for (flag, found) in mapping_flags.iter_mut().zip(found) {
                        *flag |= found;
                    }
                    report.locations_symbolized += 1;
                    report.frames_symbolized += lines.len() as u64;
                    if let Some(location) = editor.dictionary.location_table.get_mut(index) {
                        location.lines = lines;
                    }
                }
                Err(reason) => *report.misses.entry(reason).or_default() += 1,
            }
        }
        let mut flagged: Vec<_> = flags.into_iter().collect();
        flagged.sort_unstable_by_key(|(mapping, _)| *mapping);
        for (mapping, set) in flagged {
            if mapping == 0 {
                continue;
            }
            for (key, set) in MAPPING_FLAGS.iter().zip(set) {
                if set {
                    editor.set_mapping_flag(mapping, key);
                }
            }
        }
        report
    }

    /// The frames at `address` of a mapping, and which of the mapping's
    /// `pprof.mapping.has_*` flags they make true.
    fn resolve(
        &mut self,
        target: &Target,
        address: u64,
        report: &mut Report,
        deadline: Option<Instant>,
    ) -> Result<(Arc<[Resolved]>, [bool; 4]), MissReason> {
        let binary = self.files.get(
            &self.sources,
            self.debuginfod.as_ref(),
            &target.key,
            &mut report.problems,
            &mut report.cache,
            deadline,
        )?;
        let (id, has_inline_frames) = (binary.id, binary.has_inline_frames);
        let elf_address = if target.elf_addresses {
            let inside = target.limit == 0 || (target.start..target.limit).contains(&address);
            inside.then_some(address)
        } else if !binary.places_offsets {
            return Err(MissReason::OnlyDebugFile);
        } else if address < target.start || (target.limit != 0 && address >= target.limit) {
            None
        } else {
            (address - target.start)
                .checked_add(target.file_offset)
                .and_then(|offset| binary.address_of_offset(offset))
        };
        let elf_address = elf_address.ok_or(MissReason::AddressOutsideFile)?;
        let frames = match self.addresses.get(id, elf_address) {
            Some(frames) => {
                report.cache.address_hits += 1;
                frames
            }
            None => {
                report.cache.address_misses += 1;
                let found = binary.frames(elf_address);
                self.addresses.insert(id, elf_address, found)
            }
        };
        if frames.is_empty() {
            return Err(MissReason::NoSymbol);
        }
        let found = [
            frames.iter().any(|f| !f.function.name.is_empty()),
            frames.iter().any(|f| !f.function.file.is_empty()),
            frames.iter().any(|f| f.line > 0),
            has_inline_frames,
        ];
        Ok((frames, found))
    }

    /// The kernel function at `address` of a kernel location of mapping
    /// `mapping_index`: one frame, named, with the module (`[ext4]`) as its
    /// file name for a module's function; of the mapping's flags, only
    /// `has_functions`.
    fn resolve_kernel(
        &mut self,
        editor: &Editor<'_>,
        mapping_index: usize,
        mapped_build_id: Option<&[u8]>,
        address: u64,
        report: &mut Report,
    ) -> Result<(Arc<[Resolved]>, [bool; 4]), MissReason> {
        if matches!(self.kernel, KernelSymbols::NotRead) {
            let path = self.sources.kallsyms.as_deref();
            let build_id = self
                .sources
                .kernel_notes
                .as_deref()
                .and_then(kernel_notes::kernel_build_id);
            self.kernel = match path.map(Kallsyms::read) {
                Some(Ok(symbols)) => KernelSymbols::Read(symbols, build_id),
                Some(Err(error)) => {
                    report.problems.push(error.into());
                    KernelSymbols::Unreadable
                }
                None => KernelSymbols::Unreadable,
            };
        }
        let KernelSymbols::Read(symbols, kernel_build_id) = &self.kernel else {
            return Err(MissReason::KallsymsUnreadable);
        };
        if let (Some(running), Some(mapped)) = (kernel_build_id, mapped_build_id) {
            if running.as_slice() != mapped {
                return Err(MissReason::OtherKernel);
            }
        }
        let address = kernel_address(editor, mapping_index, address, symbols)?;
        let frames = match self.addresses.get(KERNEL_FILE, address) {
            Some(frames) => {
                report.cache.address_hits += 1;
                frames
            }
            None => {
                report.cache.address_misses += 1;
                let found = symbols.lookup(address).map(|symbol| Frame {
                    function: FunctionText {
                        name: symbol.name.to_owned(),
                        system_name: symbol.name.to_owned(),
                        file: symbol
                            .module
                            .map(|module| format!("[{module}]"))
                            .unwrap_or_default(),
                    },
                    line: 0,
                    column: 0,
                });
                self.addresses
                    .insert(KERNEL_FILE, address, found.into_iter().collect())
            }
        };
        if frames.is_empty() {
            return Err(MissReason::NoSymbol);
        }
        Ok((frames, [true, false, false, false]))
    }
}

/// A mapping to resolve addresses in: the file it names and where it was
/// mapped.
#[derive(Clone)]
struct Target {
    key: FileKey,
    start: u64,
    limit: u64,
    file_offset: u64,
    /// Whether the mapping's addresses are the file's ELF virtual
    /// addresses already: the OpenTelemetry eBPF profiler's mappings (those
    /// with a `process.executable.build_id.htlhash`, its own file id),
    /// whose start, limit and locations it writes in the file's address
    /// space; and mappings with start and limit 0.
    elf_addresses: bool,
}

/// The target of mapping `index` in no process in particular, or `None`
/// when there is no such mapping or it names neither a path nor a GNU
/// build id.
fn target_of(editor: &Editor<'_>, index: usize) -> Option<Target> {
    if index == 0 {
        return None;
    }
    let mapping = editor.dictionary.mapping_table.get(index)?;
    let path = editor.text(mapping.filename_strindex).to_owned();
    let value_of = |wanted: &str| {
        mapping
            .attribute_indices
            .iter()
            .find_map(|&i| match editor.attribute(i) {
                Some((key, value)) if key == wanted => Some(value),
                _ => None,
            })
    };
    let build_id = mapping_build_id(editor, index);
    let from_ebpf_profiler = value_of(BUILD_ID_HTLHASH).is_some();
    let names_a_file = path.starts_with('/');
    let (start, limit) = (mapping.memory_start, mapping.memory_limit);
    (names_a_file || build_id.is_some()).then_some(Target {
        key: FileKey {
            path,
            build_id,
            pid: None,
        },
        start,
        limit,
        file_offset: mapping.file_offset,
        elf_addresses: from_ebpf_profiler || (start == 0 && limit == 0),
    })
}

impl Target {
    /// The same mapping as process `pid` has it (its files in its root).
    fn in_process(mut self, pid: Option<u32>) -> Self {
        self.key.pid = pid;
        self
    }
}

/// The GNU build id mapping `index` carries, decoded from hex.
fn mapping_build_id(editor: &Editor<'_>, index: usize) -> Option<Vec<u8>> {
    let mapping = (index != 0)
        .then(|| editor.dictionary.mapping_table.get(index))
        .flatten()?;
    mapping
        .attribute_indices
        .iter()
        .find_map(|&i| match editor.attribute(i) {
            Some((key, value)) if key == BUILD_ID_GNU => Some(value),
            _ => None,
        })
        .flatten()
        .and_then(elf::unhex)
}

fn write_lines(editor: &mut Editor<'_>, frames: &[Resolved]) -> Vec<Line> {
    frames
        .iter()
        .map(|frame| Line {
            function_index: editor.function(&frame.function),
            line: i64::from(frame.line),
            column: i64::from(frame.column),
        })
        .collect()
}
