//! The inline trees of Go functions. They are not in `.gopclntab`: a
//! function's `FUNCDATA_InlTree` is an offset from the module's `gofunc`
//! (the `go:func.*` symbol, in read-only data), which the ELF symbol table
//! names, or else the runtime's module data (`runtime.firstmoduledata`)
//! holds: found by its first words, which point at `.gopclntab` and its
//! name table.

use std::fs::File;
use std::os::unix::fs::FileExt;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

use super::bytes::{Bytes, Endian};
use super::error::GoTablesError;
use super::header::{Header, Layout};

/// The word of the module data that holds `text`, the start of Go's code.
const MODULEDATA_TEXT_WORD: u64 = 22;

/// Data sections larger than this are not scanned for the module data.
const MAX_SCANNED_SECTION: u64 = 256 << 20;

/// Entries of one inline tree, at most: the runtime's own bound.
const MAX_INLINE_ENTRIES: u64 = 1 << 20;

/// A loadable segment, to find the file bytes of an address.
#[derive(Debug, Clone, Copy)]
struct Segment {
    address: u64,
    file_offset: u64,
    file_size: u64,
}

/// Reads inline-tree entries from the file on demand.
pub(super) struct InlineTrees {
    file: File,
    gofunc: u64,
    segments: Vec<Segment>,
    layout: Layout,
    endian: Endian,
}

/// One `inlinedCall`: the function inlined, and an instruction of its
/// caller at the call site (an offset from the function's entry).
#[derive(Debug, Clone, Copy)]
pub(super) struct InlinedCall {
    pub name_off: u32,
    pub parent_pc: u32,
}

impl InlineTrees {
    /// `None` when neither the symbol table nor the module data gives
    /// `gofunc`.
    pub fn find<'data, R: object::ReadRef<'data>>(
        object: &object::File<'data, R>,
        file: File,
        file_len: u64,
        header: &Header,
        pclntab_address: u64,
        text_start: u64,
    ) -> Option<Self> {
        let segments: Vec<Segment> = object
            .segments()
            .map(|segment| {
                let (file_offset, file_size) = segment.file_range();
                Segment {
                    address: segment.address(),
                    file_offset,
                    file_size,
                }
            })
            .collect();
        let from_symbol = ["go:func.*", "go.func.*"]
            .iter()
            .find_map(|name| object.symbol_by_name(name))
            .map(|symbol| symbol.address());
        let gofunc = from_symbol.or_else(|| {
            gofunc_from_moduledata(object, &file, file_len, header, pclntab_address, text_start)
        })?;
        let trees = Self {
            file,
            gofunc,
            segments,
            layout: header.layout,
            endian: header.endian,
        };
        trees.file_offset(gofunc, 1).ok()?;
        Some(trees)
    }

    /// Entry `index` of the inline tree at `tree` (from `gofunc`).
    pub fn entry(&self, tree: u32, index: u32) -> Result<InlinedCall, GoTablesError> {
        let what = "inline tree";
        if u64::from(index) >= MAX_INLINE_ENTRIES {
            return Err(GoTablesError::TooLong { what });
        }
        let size = self.layout.inline_entry_size();
        let address = self
            .gofunc
            .checked_add(u64::from(tree) + u64::from(index) * size)
            .ok_or(GoTablesError::UnmappedAddress(self.gofunc))?;
        let offset = self.file_offset(address, size)?;
        let mut buffer = [0u8; 20];
        let entry = buffer
            .get_mut(..size as usize)
            .ok_or(GoTablesError::TooLong { what })?;
        self.file.read_exact_at(entry, offset)?;
        let bytes = Bytes {
            data: entry,
            endian: self.endian,
            ptr_size: 8,
        };
        let (name_at, parent_pc_at) = self.layout.inline_name_and_parent_pc();
        Ok(InlinedCall {
            name_off: bytes.u32(name_at, what)?,
            parent_pc: bytes.u32(parent_pc_at, what)?,
        })
    }

    /// The file offset of `size` bytes at `address`.
    fn file_offset(&self, address: u64, size: u64) -> Result<u64, GoTablesError> {
        self.segments
            .iter()
            .find(|s| {
                address >= s.address
                    && address
                        .checked_add(size)
                        .is_some_and(|end| end - s.address <= s.file_size)
            })
            .and_then(|s| (address - s.address).checked_add(s.file_offset))
            .ok_or(GoTablesError::UnmappedAddress(address))
    }
}

fn gofunc_from_moduledata<'data, R: object::ReadRef<'data>>(
    object: &object::File<'data, R>,
    file: &File,
    file_len: u64,
    header: &Header,
    pclntab_address: u64,
    text_start: u64,
) -> Option<u64> {
    let word_size = u64::from(header.ptr_size);
    let funcnametab = pclntab_address.checked_add(header.funcnametab)?;
    for name in [".noptrdata", ".data", ".data.rel.ro"] {
        let Some((offset, size)) = object
            .section_by_name(name)
            .and_then(|section| section.file_range())
        else {
            continue;
        };
        if size > MAX_SCANNED_SECTION || offset.checked_add(size).is_none_or(|end| end > file_len) {
            continue;
        }
        let mut data = vec![0; size as usize];
        if file.read_exact_at(&mut data, offset).is_err() {
            continue;
        }
        let bytes = Bytes {
            data: &data,
            endian: header.endian,
            ptr_size: header.ptr_size,
        };
        let word = |index: u64| bytes.word(index * word_size, "module data").ok();
        for start in 0..size / word_size {
            if word(start) == Some(pclntab_address)
                && word(start + 1) == Some(funcnametab)
                && word(start + MODULEDATA_TEXT_WORD) == Some(text_start)
            {
                if let Some(gofunc) = word(start + header.layout.moduledata_gofunc_word()) {
                    return Some(gofunc);
                }
            }
        }
    }
    None
}
