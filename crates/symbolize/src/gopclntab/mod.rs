//! Go's own symbol tables, for Go binaries without DWARF (built with
//! `-ldflags=-w`, or `-s -w`): `.gopclntab` gives each address its
//! function, file and line, and the inline trees its functions point to
//! give the functions inlined there. Read as the Go runtime reads them
//! (runtime/symtab.go), for the layouts of Go 1.18 onwards.

mod bytes;
mod error;
mod func;
mod header;
mod inline;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSymbol};

use bytes::Bytes;
pub use error::GoTablesError;
use func::Pcln;
use header::Header;
use inline::InlineTrees;

/// Deepest inline chain followed: far deeper than the compiler inlines.
const MAX_INLINE_DEPTH: usize = 256;

/// Where the Go linker puts the tables: `.gopclntab`, or inside the
/// relocated read-only data of a position-independent executable.
const SECTION_NAMES: [&str; 2] = [".gopclntab", ".data.rel.ro.gopclntab"];

/// One function of an address's inline chain, named as Go names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoFrame {
    pub function: String,
    pub file: String,
    pub line: u32,
}

/// The largest `.gopclntab` read: Kubernetes' binaries have about 20 MB.
const MAX_TABLE_BYTES: u64 = 512 << 20;

pub(crate) struct GoTables {
    /// The whole section: lookups jump around in it.
    table: Vec<u8>,
    header: Header,
    text_start: u64,
    inline: Option<InlineTrees>,
}

impl GoTables {
    /// The tables of the ELF file at `path`; `None` when it has none (not
    /// a Go binary).
    pub fn open(path: &Path) -> Result<Option<Self>, GoTablesError> {
        let file = File::open(path)?;
        let file_len = file.metadata()?.len();
        let cache = ReadCache::new(&file);
        let object = object::File::parse(&cache)?;
        let Some(section) = SECTION_NAMES
            .iter()
            .find_map(|name| object.section_by_name(name))
        else {
            return Ok(None);
        };
        let Some((offset, size)) = section.file_range() else {
            return Ok(None);
        };
        let past_end = || GoTablesError::SectionPastEnd {
            claimed: size,
            file_len,
        };
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(past_end());
        }
        if size > MAX_TABLE_BYTES {
            return Err(GoTablesError::TooLong { what: ".gopclntab" });
        }
        let mut table = vec![0; usize::try_from(size).map_err(|_| past_end())?];
        file.read_exact_at(&mut table, offset)?;
        let header = Header::parse(&table)?;
        // A position-independent binary may leave the text start to a
        // dynamic relocation.
        let text_start = match header.text_start {
            0 => object
                .symbol_by_name("runtime.text")
                .map(|symbol| symbol.address())
                .or_else(|| object.section_by_name(".text").map(|s| s.address()))
                .ok_or(GoTablesError::BadHeader("no text start"))?,
            start => start,
        };
        let tables = Self {
            table,
            header,
            text_start,
            inline: None,
        };
        tables.pcln().check_function_table()?;
        let inline_file = file.try_clone()?;
        let inline = InlineTrees::find(
            &object,
            inline_file,
            file_len,
            &header,
            section.address(),
            text_start,
        );
        Ok(Some(Self { inline, ..tables }))
    }

    /// The memory the tables hold.
    pub fn heap_bytes(&self) -> u64 {
        self.table.len() as u64
    }

    /// Whether inlined functions are told apart.
    pub fn has_inline_trees(&self) -> bool {
        self.inline.is_some()
    }

    fn pcln(&self) -> Pcln<'_> {
        Pcln {
            bytes: Bytes {
                data: &self.table,
                endian: self.header.endian,
                ptr_size: self.header.ptr_size,
            },
            header: self.header,
            text_start: self.text_start,
        }
    }

    /// The inline chain at `address`, innermost first, as the runtime
    /// expands it (runtime.CallersFrames): the function inlined at the
    /// address with the file and line there, then, from an instruction of
    /// the caller at the call site, the caller with the call's file and
    /// line, out to the function the code belongs to. Empty when no
    /// function holds the address.
    pub fn frames(&self, address: u64) -> Result<Vec<GoFrame>, GoTablesError> {
        let pcln = self.pcln();
        let Some(func) = pcln.find(address)? else {
            return Ok(Vec::new());
        };
        let inline = match &self.inline {
            Some(trees) => pcln.inline_tree(&func)?.map(|tree| (trees, tree)),
            None => None,
        };
        let mut frames = Vec::new();
        let mut pc = address;
        let mut visited = Vec::new();
        for _ in 0..MAX_INLINE_DEPTH {
            // Each call site is in the caller, outside what it called: a
            // table that comes back to a pc is corrupt.
            if visited.contains(&pc) {
                return Err(GoTablesError::TooLong {
                    what: "inline chain",
                });
            }
            visited.push(pc);
            let (file, line) = pcln.file_line(&func, pc)?;
            let call = match inline {
                Some((trees, tree)) => match u32::try_from(pcln.inline_index(&func, pc)?) {
                    Ok(index) => Some(trees.entry(tree, index)?),
                    Err(_) => None,
                },
                None => None,
            };
            let Some(call) = call else {
                let function = pcln.name(func.name_off)?;
                frames.push(GoFrame {
                    function,
                    file,
                    line,
                });
                return Ok(frames);
            };
            frames.push(GoFrame {
                function: pcln.name(call.name_off)?,
                file,
                line,
            });
            pc = func.entry.checked_add(u64::from(call.parent_pc)).ok_or(
                GoTablesError::TooLong {
                    what: "inline call site offset",
                },
            )?;
        }
        Err(GoTablesError::TooLong {
            what: "inline chain",
        })
    }
}
