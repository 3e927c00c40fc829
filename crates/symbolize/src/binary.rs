//! One mapped file made ready to resolve addresses: its loadable segments
//! and the DWARF (or symbol table) of the file or of its debug file, or
//! Go's own tables when a Go binary has no DWARF.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::debuginfod::{Client, Fetched, Kind};
use crate::elf::{hex, ElfFacts};
use crate::error::{FileError, MissReason};
use crate::gopclntab::GoTables;
use crate::locate;
use crate::Sources;

/// Which file a mapping names: its path and, when known, its build id and
/// the process whose root the path is in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    pub path: String,
    pub build_id: Option<Vec<u8>>,
    pub pid: Option<u32>,
}

pub(crate) struct Binary {
    /// Tells apart the files a symbolizer opened, in its cache of resolved
    /// addresses.
    pub id: u64,
    facts: ElfFacts,
    /// Whether `facts` are the mapped file's own: a debug file's program
    /// headers keep the addresses but not the file offsets
    /// (`objcopy --only-keep-debug` rewrites them).
    pub places_offsets: bool,
    debug: addr2line::Loader,
    /// Go's own tables, read when there is no DWARF.
    go: Option<GoTables>,
    /// Whether inlined functions are told apart: from DWARF, or from Go's
    /// inline trees.
    pub has_inline_frames: bool,
    /// The size of the file `debug` reads, which it maps, and of Go's
    /// tables, which are read into memory.
    pub bytes: u64,
}

/// A function as a line names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FunctionText {
    pub name: String,
    pub system_name: String,
    pub file: String,
}

/// One function of an address's inline chain, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub function: FunctionText,
    pub line: u32,
    pub column: u32,
}

impl Binary {
    /// Finds and opens the files for `key`; what is found but unusable is
    /// added to `problems`.
    pub fn open(
        sources: &Sources,
        debuginfod: Option<&Client>,
        key: &FileKey,
        problems: &mut Vec<FileError>,
        deadline: Option<Instant>,
    ) -> Result<Self, MissReason> {
        let problems_before = problems.len();
        let mut remote = Remote {
            client: debuginfod,
            deadline,
            failed: false,
            out_of_time: false,
        };
        let executable = find_executable(sources, key, problems).or_else(|| {
            let build_id = key.build_id.as_deref()?;
            remote.fetch(build_id, Kind::Executable, problems)
        });
        let build_id = key
            .build_id
            .clone()
            .or_else(|| executable.as_ref().and_then(|(_, f)| f.build_id.clone()));
        let debug_file = match &executable {
            Some((_, facts)) if facts.has_dwarf => None,
            _ => find_debug_file(
                sources,
                key,
                build_id.as_deref(),
                executable.as_ref(),
                problems,
            )
            .or_else(|| remote.fetch(build_id.as_deref()?, Kind::Debuginfo, problems)),
        };
        let executable_path = executable.as_ref().map(|(path, _)| path.clone());
        let (dwarf_path, facts, has_dwarf, places_offsets) = match (executable, debug_file) {
            (Some((_, exe)), Some((debug_path, debug))) => (debug_path, exe, debug.has_dwarf, true),
            (Some((path, exe)), None) => {
                let has_dwarf = exe.has_dwarf;
                (path, exe, has_dwarf, true)
            }
            (None, Some((debug_path, debug))) => {
                let has_dwarf = debug.has_dwarf;
                (debug_path, debug, has_dwarf, false)
            }
            (None, None) if remote.out_of_time => return Err(MissReason::OutOfTime),
            (None, None) if remote.failed => return Err(MissReason::DebuginfodFailed),
            (None, None) if problems.len() > problems_before => {
                return Err(MissReason::FileUnusable)
            }
            (None, None) => return Err(MissReason::FileNotFound),
        };
        let go = match executable_path {
            Some(path) if !has_dwarf => go_tables(&path, problems),
            _ => None,
        };
        let has_inline_frames = has_dwarf || go.as_ref().is_some_and(GoTables::has_inline_trees);
        let bytes = std::fs::metadata(&dwarf_path).map_or(0, |m| m.len())
            + go.as_ref().map_or(0, GoTables::heap_bytes);
        match addr2line::Loader::new(&dwarf_path) {
            Ok(debug) => Ok(Self {
                id: 0,
                facts,
                places_offsets,
                debug,
                go,
                has_inline_frames,
                bytes,
            }),
            Err(error) => {
                problems.push(FileError::DebugInfo {
                    path: dwarf_path,
                    message: error.to_string(),
                });
                Err(MissReason::FileUnusable)
            }
        }
    }

    /// The ELF address of byte `file_offset` of the mapped file.
    pub fn address_of_offset(&self, file_offset: u64) -> Option<u64> {
        self.facts.address_of_offset(file_offset)
    }

    /// The inline chain at ELF address `address`, innermost first; empty
    /// when nothing covers it.
    pub fn frames(&self, address: u64) -> Vec<Frame> {
        if let Some(frames) = self.go_frames(address) {
            return frames;
        }
        let mut frames = Vec::new();
        if let Ok(mut iter) = self.debug.find_frames(address) {
            while let Ok(Some(frame)) = iter.next() {
                let (name, system_name) = match &frame.function {
                    Some(function) => (
                        function.demangle().map(Cow::into_owned).unwrap_or_default(),
                        function.raw_name().map(Cow::into_owned).unwrap_or_default(),
                    ),
                    None => (String::new(), String::new()),
                };
                let location = frame.location.as_ref();
                frames.push(Frame {
                    function: FunctionText {
                        name,
                        system_name,
                        file: location
                            .and_then(|l| l.file)
                            .map(str::to_owned)
                            .unwrap_or_default(),
                    },
                    line: location.and_then(|l| l.line).unwrap_or(0),
                    column: location.and_then(|l| l.column).unwrap_or(0),
                });
            }
        }
        // The outermost function is named by the symbol table when one
        // covers the address, as llvm-symbolizer does: DWARF often names
        // it without its linkage name.
        if let Some(symbol) = self.debug.find_symbol(address) {
            let name = addr2line::demangle_auto(Cow::Borrowed(symbol), None).into_owned();
            match frames.last_mut() {
                Some(outermost) => {
                    outermost.function.name = name;
                    outermost.function.system_name = symbol.to_owned();
                }
                None => frames.push(Frame {
                    function: FunctionText {
                        name,
                        system_name: symbol.to_owned(),
                        file: String::new(),
                    },
                    line: 0,
                    column: 0,
                }),
            }
        }
        frames.retain(|f| !f.function.system_name.is_empty() || !f.function.file.is_empty());
        frames
    }

    /// The chain from Go's tables, when they cover `address`; a Go binary
    /// linked with C code leaves that code to the symbol table.
    fn go_frames(&self, address: u64) -> Option<Vec<Frame>> {
        let frames = self.go.as_ref()?.frames(address).ok()?;
        let frames: Vec<Frame> = frames
            .into_iter()
            .map(|frame| Frame {
                function: FunctionText {
                    system_name: frame.function.clone(),
                    name: frame.function,
                    file: frame.file,
                },
                line: frame.line,
                column: 0,
            })
            .collect();
        (!frames.is_empty()).then_some(frames)
    }
}

/// Go's tables of the executable at `path`, if it is a Go binary; tables
/// that cannot be read are reported.
fn go_tables(path: &Path, problems: &mut Vec<FileError>) -> Option<GoTables> {
    GoTables::open(path)
        .map_err(|source| {
            problems.push(FileError::GoTables {
                path: path.to_path_buf(),
                source,
            })
        })
        .ok()
        .flatten()
}

/// The debuginfod servers, and whether one failed (then the file's other
/// fetch is not tried).
struct Remote<'a> {
    client: Option<&'a Client>,
    deadline: Option<Instant>,
    failed: bool,
    out_of_time: bool,
}

impl Remote<'_> {
    /// The file `kind` of `build_id` from the servers, checked to carry
    /// that build id.
    fn fetch(
        &mut self,
        build_id: &[u8],
        kind: Kind,
        problems: &mut Vec<FileError>,
    ) -> Option<(PathBuf, ElfFacts)> {
        let client = self.client.filter(|_| !self.failed && !self.out_of_time)?;
        let path = match client.fetch(build_id, kind, problems, self.deadline) {
            Fetched::File(path) => path,
            Fetched::Missing => return None,
            Fetched::Failed => {
                self.failed = true;
                return None;
            }
            Fetched::OutOfTime => {
                self.out_of_time = true;
                return None;
            }
        };
        match ElfFacts::read(&path) {
            Ok(facts) if facts.build_id.as_deref() == Some(build_id) => Some((path, facts)),
            Ok(facts) => {
                problems.push(FileError::BuildIdMismatch {
                    path,
                    found: facts.build_id.as_deref().map(hex).unwrap_or_default(),
                    wanted: hex(build_id),
                });
                None
            }
            Err(error) => {
                problems.push(error);
                None
            }
        }
    }
}

/// The mapped file: at the mapping's path under the root, else (for a
/// mapping with a build id) at `.build-id/xx/rest` in a debug directory.
fn find_executable(
    sources: &Sources,
    key: &FileKey,
    problems: &mut Vec<FileError>,
) -> Option<(PathBuf, ElfFacts)> {
    let mut mapping_paths = vec![key.path.clone()];
    // The eBPF profiler names files by their base names: the process's
    // own maps give their paths, and the build id tells same-named files
    // apart.
    if let (Some(proc), Some(pid), Some(_), false) = (
        &sources.process_roots,
        key.pid,
        &key.build_id,
        key.path.starts_with('/'),
    ) {
        let maps = proc.join(pid.to_string()).join("maps");
        mapping_paths = locate::mapped_paths_named(&maps, &key.path);
    }
    let root = sources.root_of(key.pid);
    let under_root: Vec<PathBuf> = mapping_paths
        .iter()
        .filter_map(|mapping_path| {
            let root = root.as_deref()?;
            locate::under_root(root, mapping_path)
                .map_err(|error| problems.push(error))
                .ok()
                .flatten()
        })
        .collect();
    let by_build_id = key.build_id.iter().flat_map(|build_id| {
        sources
            .debug_dirs
            .iter()
            .filter_map(|dir| locate::file_by_build_id(dir, build_id))
    });
    for path in under_root.into_iter().chain(by_build_id) {
        if !path.is_file() {
            continue;
        }
        let Ok(facts) = ElfFacts::read(&path).map_err(|error| problems.push(error)) else {
            continue;
        };
        if let Some(wanted) = &key.build_id {
            if facts.build_id.as_ref() != Some(wanted) {
                problems.push(FileError::BuildIdMismatch {
                    path,
                    found: facts.build_id.as_deref().map(hex).unwrap_or_default(),
                    wanted: hex(wanted),
                });
                continue;
            }
        }
        return Some((path, facts));
    }
    None
}

fn find_debug_file(
    sources: &Sources,
    key: &FileKey,
    build_id: Option<&[u8]>,
    executable: Option<&(PathBuf, ElfFacts)>,
    problems: &mut Vec<FileError>,
) -> Option<(PathBuf, ElfFacts)> {
    if let Some(build_id) = build_id {
        for dir in &sources.debug_dirs {
            let Some(path) = locate::by_build_id(dir, build_id) else {
                continue;
            };
            if !path.is_file() {
                continue;
            }
            match ElfFacts::read(&path) {
                Ok(facts) if facts.build_id.as_deref() == Some(build_id) => {
                    return Some((path, facts))
                }
                Ok(facts) => problems.push(FileError::BuildIdMismatch {
                    path,
                    found: facts.build_id.as_deref().map(hex).unwrap_or_default(),
                    wanted: hex(build_id),
                }),
                Err(error) => problems.push(error),
            }
        }
    }
    let (exe_path, exe) = executable?;
    let (name, crc) = exe.debuglink.as_ref()?;
    let root = sources.root_of(key.pid);
    let candidates = locate::debuglink_candidates(
        exe_path,
        root.as_deref(),
        &key.path,
        name,
        &sources.debug_dirs,
    );
    for path in candidates {
        // Only regular files of a plausible size are read to the end.
        let Ok(metadata) = std::fs::metadata(&path) else {
            continue;
        };
        let size = metadata.len();
        if !metadata.is_file() || size == 0 || size > MAX_DEBUG_FILE_BYTES || path == *exe_path {
            continue;
        }
        match crc32_of(&path, size) {
            Ok(found) if found == *crc => match ElfFacts::read(&path) {
                Ok(facts) => return Some((path, facts)),
                Err(error) => problems.push(error),
            },
            Ok(_) => {}
            Err(error) => problems.push(error),
        }
    }
    None
}

/// The largest debuglink target read to check its CRC.
const MAX_DEBUG_FILE_BYTES: u64 = 8 << 30;

/// The CRC-32 `.gnu_debuglink` records of a whole file of `size` bytes
/// (no more is read).
fn crc32_of(path: &Path, size: u64) -> Result<u32, FileError> {
    let read_error = |source| FileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(read_error)?.take(size);
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(read_error)?;
        match buffer.get(..read) {
            Some([]) | None => break,
            Some(chunk) => hasher.update(chunk),
        }
    }
    Ok(hasher.finalize())
}
