//! Symbolization of native frames in OTLP profiles (docs/symbolize.md).
//!
//! For each location without lines whose mapping names an ELF file or a
//! build id, the file is found (the mapping's path under a root, then
//! `DIR/.build-id/xx/rest.debug`, then `.gnu_debuglink`, then debuginfod
//! servers by build id), the runtime address becomes an ELF address
//! through the file's loadable segments, and addr2line resolves functions,
//! files, lines and inlined frames (innermost first). Interpreted and
//! kernel frames are left alone.

mod binary;
mod cache;
mod debuginfod;
mod dictionary;
mod elf;
mod error;
mod locate;
mod processes;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use profbridge_translate::keys::{BUILD_ID_GNU, FRAME_TYPE, MAPPING_FLAGS};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, Line};
use rustc_hash::FxHashMap;

use binary::FileKey;
use cache::{AddressCache, FileCache, Resolved};
pub use cache::{CacheLimits, CacheUse, CACHED_ADDRESSES};
pub use debuginfod::{
    server_urls, Debuginfod, FetchError, UnsupportedUrl, DEFAULT_CACHE_MAX_BYTES,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MISS_TTL, DEFAULT_READ_TIMEOUT, DEFAULT_TIMEOUT,
    SERVER_BACKOFF,
};
use dictionary::Editor;
pub use error::{FileError, MissReason};

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
    /// by build id (`.build-id/xx/rest.debug`) and for `.gnu_debuglink` names.
    pub debug_dirs: Vec<PathBuf>,
    /// debuginfod servers, asked by build id when the files above do not
    /// give both the mapped file and its DWARF.
    pub debuginfod: Option<Debuginfod>,
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
    /// Native locations without lines left so, by reason.
    pub misses: BTreeMap<MissReason, u64>,
    /// Interpreted and kernel locations, not looked at.
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
}

impl Symbolizer {
    pub fn new(sources: Sources) -> Self {
        Self::with_limits(sources, CacheLimits::default())
    }

    pub fn with_limits(sources: Sources, limits: CacheLimits) -> Self {
        Self {
            debuginfod: sources.debuginfod.clone().map(debuginfod::Client::new),
            sources,
            files: FileCache::new(limits),
            // Resolved addresses take at most a quarter of the budget.
            addresses: AddressCache::new(limits.bytes / 4),
        }
    }

    /// The bytes the caches hold now, as [`CacheLimits::bytes`] counts them.
    pub fn cached_bytes(&self) -> u64 {
        self.files.bytes() + self.addresses.bytes()
    }

    pub fn limits(&self) -> CacheLimits {
        self.files.limits()
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
        let mut targets: FxHashMap<(usize, Option<u32>), Option<Target>> = FxHashMap::default();
        let mut flags: FxHashMap<usize, [bool; 4]> = FxHashMap::default();
        for index in 1..editor.dictionary.location_table.len() {
            let Some(location) = editor.dictionary.location_table.get(index) else {
                continue;
            };
            if !location.lines.is_empty() {
                continue;
            }
            let (address, mapping_index) = (location.address, location.mapping_index);
            if !is_native(&editor, &location.attribute_indices) {
                report.left_alone += 1;
                continue;
            }
            let mapping_index = usize::try_from(mapping_index).unwrap_or(0);
            let pid = pids.get(&index).copied();
            let target = targets
                .entry((mapping_index, pid))
                .or_insert_with(|| target_of(&editor, mapping_index, pid));
            let Some(target) = target else {
                *report.misses.entry(MissReason::NoMapping).or_default() += 1;
                continue;
            };
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                *report.misses.entry(MissReason::OutOfTime).or_default() += 1;
                continue;
            }
            let outcome = self.resolve(target, address, &mut report);
            match outcome {
                Ok((frames, has_dwarf)) => {
                    let lines = write_lines(&mut editor, &frames);
                    let mapping_flags = flags.entry(mapping_index).or_default();
                    mapping_flags[0] |= frames.iter().any(|f| !f.function.name.is_empty());
                    mapping_flags[1] |= frames.iter().any(|f| !f.function.file.is_empty());
                    mapping_flags[2] |= frames.iter().any(|f| f.line > 0);
                    mapping_flags[3] |= has_dwarf;
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
            for (key, set) in MAPPING_FLAGS.iter().zip(set) {
                if set {
                    editor.set_mapping_flag(mapping, key);
                }
            }
        }
        report
    }

    /// The frames at runtime `address` of a mapping, and whether they come
    /// from DWARF.
    fn resolve(
        &mut self,
        target: &Target,
        address: u64,
        report: &mut Report,
    ) -> Result<(Arc<[Resolved]>, bool), MissReason> {
        let binary = self.files.get(
            &self.sources,
            self.debuginfod.as_ref(),
            &target.key,
            &mut report.problems,
            &mut report.cache,
        )?;
        let (id, has_dwarf) = (binary.id, binary.has_dwarf);
        let elf_address = if target.start == 0 && target.limit == 0 {
            Some(address)
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
        Ok((frames, has_dwarf))
    }
}

/// Whether a location is native code: no `profile.frame.type`, or `native`.
fn is_native(editor: &Editor<'_>, attribute_indices: &[i32]) -> bool {
    attribute_indices
        .iter()
        .all(|&i| match editor.attribute(i) {
            Some((key, value)) if key == FRAME_TYPE => value.is_none_or(|v| v == "native"),
            _ => true,
        })
}

/// A mapping to resolve addresses in: the file it names and where it was
/// mapped.
struct Target {
    key: FileKey,
    start: u64,
    limit: u64,
    file_offset: u64,
}

/// The target of mapping `index` in process `pid`, or `None` when there is
/// no such mapping or it names neither a path nor a GNU build id.
fn target_of(editor: &Editor<'_>, index: usize, pid: Option<u32>) -> Option<Target> {
    if index == 0 {
        return None;
    }
    let mapping = editor.dictionary.mapping_table.get(index)?;
    let path = editor.text(mapping.filename_strindex).to_owned();
    let build_id = mapping
        .attribute_indices
        .iter()
        .find_map(|&i| match editor.attribute(i) {
            Some((key, Some(value))) if key == BUILD_ID_GNU => elf::unhex(value),
            _ => None,
        });
    let names_a_file = path.starts_with('/');
    (names_a_file || build_id.is_some()).then_some(Target {
        key: FileKey {
            path,
            build_id,
            pid,
        },
        start: mapping.memory_start,
        limit: mapping.memory_limit,
        file_offset: mapping.file_offset,
    })
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
