//! What a symbolizer keeps between requests: the files it opened (and the
//! ones it could not find or use) and the addresses it resolved, bounded in
//! count and in bytes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::binary::{Binary, FileKey, Frame, FunctionText};
use crate::debuginfod::Client;
use crate::error::{FileError, MissReason};
use crate::Sources;

/// How much a symbolizer may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// Files kept open (at least one).
    pub files: usize,
    /// Bytes kept: each open file counts the size of the file its debug
    /// information is read from (mapped, and parsed as it is used), and the
    /// resolved addresses count what they hold. The newest file stays even
    /// when it alone is larger.
    pub bytes: u64,
}

impl Default for CacheLimits {
    fn default() -> Self {
        Self {
            files: 64,
            bytes: 512 << 20,
        }
    }
}

/// How many resolved addresses are kept at most, over all files.
pub const CACHED_ADDRESSES: usize = 65_536;

/// How the caches were used by one call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheUse {
    /// Mappings whose file (or the fact that it is missing or unusable)
    /// was already known.
    pub file_hits: u64,
    /// Mappings whose file was looked for and opened.
    pub file_misses: u64,
    pub address_hits: u64,
    pub address_misses: u64,
}

/// One line of a resolved address, its function shared with every other
/// line that names it.
pub(crate) struct Resolved {
    pub function: Arc<FunctionText>,
    pub line: u32,
    pub column: u32,
}

pub(crate) struct FileCache {
    entries: FxHashMap<FileKey, Entry>,
    /// The key of an opened file, by the build id its mappings named: the
    /// same file for every process and path that names that build id.
    by_build_id: FxHashMap<Vec<u8>, FileKey>,
    order: VecDeque<FileKey>,
    limits: CacheLimits,
    bytes: u64,
    opened: u64,
}

struct Entry {
    file: Result<Binary, MissReason>,
    bytes: u64,
    /// For a file a debuginfod server failed to give: when to ask again.
    retry_at: Option<Instant>,
}

impl FileCache {
    pub fn new(limits: CacheLimits) -> Self {
        Self {
            entries: FxHashMap::default(),
            by_build_id: FxHashMap::default(),
            order: VecDeque::new(),
            limits: CacheLimits {
                files: limits.files.max(1),
                bytes: limits.bytes,
            },
            bytes: 0,
            opened: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The file for `key`, opened (and what is wrong with it added to
    /// `problems`) when it is not kept yet.
    pub fn get(
        &mut self,
        sources: &Sources,
        debuginfod: Option<&Client>,
        key: &FileKey,
        problems: &mut Vec<FileError>,
        usage: &mut CacheUse,
        deadline: Option<Instant>,
    ) -> Result<&Binary, MissReason> {
        let due = self
            .entries
            .get(key)
            .and_then(|entry| entry.retry_at)
            .is_some_and(|retry_at| Instant::now() >= retry_at);
        if due {
            self.remove(key);
        }
        if let Some(shared) = self.shared(key) {
            usage.file_hits += 1;
            return match self.entries.get(&shared) {
                Some(Entry {
                    file: Ok(binary), ..
                }) => Ok(binary),
                _ => Err(MissReason::FileNotFound),
            };
        }
        if self.entries.contains_key(key) {
            usage.file_hits += 1;
        } else {
            usage.file_misses += 1;
            while self.order.len() >= self.limits.files {
                self.evict_oldest();
            }
            self.opened += 1;
            let id = self.opened;
            let file =
                Binary::open(sources, debuginfod, key, problems, deadline).map(|mut binary| {
                    binary.id = id;
                    binary
                });
            // Out of time: the next request tries again.
            if let Err(MissReason::OutOfTime) = file {
                return Err(MissReason::OutOfTime);
            }
            let retry_at = matches!(file, Err(MissReason::DebuginfodFailed))
                .then(|| Instant::now() + debuginfod.map_or(Duration::ZERO, Client::rest_period));
            if let (Ok(binary), Some(build_id)) = (&file, &key.build_id) {
                if binary.places_offsets {
                    self.by_build_id.insert(build_id.clone(), key.clone());
                }
            }
            let bytes = file.as_ref().map_or(0, |binary| binary.bytes);
            self.bytes += bytes;
            self.entries.insert(
                key.clone(),
                Entry {
                    file,
                    bytes,
                    retry_at,
                },
            );
            self.order.push_back(key.clone());
            while self.bytes > self.limits.bytes && self.order.len() > 1 {
                self.evict_oldest();
            }
        }
        match self.entries.get(key) {
            Some(Entry {
                file: Ok(binary), ..
            }) => Ok(binary),
            Some(Entry {
                file: Err(reason), ..
            }) => Err(*reason),
            None => Err(MissReason::FileNotFound),
        }
    }

    /// The key of the file already open for `key`'s build id under another
    /// key (another process, or another name), when `key` has none of its
    /// own.
    fn shared(&self, key: &FileKey) -> Option<FileKey> {
        if self.entries.contains_key(key) {
            return None;
        }
        let shared = self.by_build_id.get(key.build_id.as_ref()?)?;
        self.entries.contains_key(shared).then(|| shared.clone())
    }

    fn remove(&mut self, key: &FileKey) {
        self.forget(key);
        self.order.retain(|kept| kept != key);
    }

    fn evict_oldest(&mut self) {
        if let Some(oldest) = self.order.pop_front() {
            self.forget(&oldest);
        }
    }

    fn forget(&mut self, key: &FileKey) {
        if let Some(entry) = self.entries.remove(key) {
            self.bytes -= entry.bytes;
        }
        if let Some(build_id) = &key.build_id {
            if self.by_build_id.get(build_id) == Some(key) {
                self.by_build_id.remove(build_id);
            }
        }
    }
}

/// Frames by (the file's [`Binary::id`], ELF address); starts over when it
/// passes its count or its bytes.
pub(crate) struct AddressCache {
    resolved: FxHashMap<(u64, u64), Arc<[Resolved]>>,
    /// The functions `resolved` names, each kept once.
    functions: FxHashSet<Arc<FunctionText>>,
    bytes: u64,
    limit_bytes: u64,
}

impl AddressCache {
    pub fn new(limit_bytes: u64) -> Self {
        Self {
            resolved: FxHashMap::default(),
            functions: FxHashSet::default(),
            bytes: 0,
            limit_bytes,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn get(&self, file: u64, address: u64) -> Option<Arc<[Resolved]>> {
        self.resolved.get(&(file, address)).map(Arc::clone)
    }

    pub fn insert(&mut self, file: u64, address: u64, frames: Vec<Frame>) -> Arc<[Resolved]> {
        if self.resolved.len() >= CACHED_ADDRESSES || self.bytes >= self.limit_bytes {
            self.resolved.clear();
            self.functions.clear();
            self.bytes = 0;
        }
        let entry_bytes = std::mem::size_of::<((u64, u64), Arc<[Resolved]>)>()
            + frames.len() * std::mem::size_of::<Resolved>();
        self.bytes += entry_bytes as u64;
        let frames: Arc<[Resolved]> = frames
            .into_iter()
            .map(|frame| Resolved {
                function: self.intern(frame.function),
                line: frame.line,
                column: frame.column,
            })
            .collect();
        self.resolved.insert((file, address), Arc::clone(&frames));
        frames
    }

    fn intern(&mut self, function: FunctionText) -> Arc<FunctionText> {
        if let Some(known) = self.functions.get(&function) {
            return Arc::clone(known);
        }
        let text_bytes = function.name.len() + function.system_name.len() + function.file.len();
        self.bytes += (text_bytes + std::mem::size_of::<FunctionText>()) as u64;
        let function = Arc::new(function);
        self.functions.insert(Arc::clone(&function));
        function
    }
}
