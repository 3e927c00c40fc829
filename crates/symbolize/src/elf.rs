//! The facts symbolization needs from an ELF file's headers.

use std::fs::File;
use std::path::Path;

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment};

use crate::error::FileError;

/// A loadable segment: where its bytes are in the file and in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub file_offset: u64,
    pub file_size: u64,
    pub address: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct ElfFacts {
    pub build_id: Option<Vec<u8>>,
    pub segments: Vec<Segment>,
    /// `.gnu_debuglink`: the debug file's name and the CRC-32 of its bytes.
    pub debuglink: Option<(String, u32)>,
    /// Whether the file holds DWARF (`.debug_info` with contents).
    pub has_dwarf: bool,
}

impl ElfFacts {
    pub fn read(path: &Path) -> Result<Self, FileError> {
        let file = File::open(path).map_err(|source| FileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let cache = ReadCache::new(file);
        let parse_error = |source| FileError::Parse {
            path: path.to_path_buf(),
            source,
        };
        let object = object::File::parse(&cache).map_err(parse_error)?;
        if object.format() != object::BinaryFormat::Elf {
            return Err(FileError::NotElf {
                path: path.to_path_buf(),
            });
        }
        let build_id = object.build_id().map_err(parse_error)?.map(<[u8]>::to_vec);
        let debuglink = object
            .gnu_debuglink()
            .map_err(parse_error)?
            .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
        let segments = object
            .segments()
            .map(|segment| {
                let (file_offset, file_size) = segment.file_range();
                Segment {
                    file_offset,
                    file_size,
                    address: segment.address(),
                }
            })
            .collect();
        let has_dwarf = object
            .section_by_name(".debug_info")
            .is_some_and(|section| section.file_range().is_some_and(|(_, size)| size > 0));
        Ok(Self {
            build_id,
            segments,
            debuglink,
            has_dwarf,
        })
    }

    /// The ELF virtual address of byte `file_offset` of the file, if a
    /// loadable segment holds it.
    pub fn address_of_offset(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| file_offset >= s.file_offset && file_offset - s.file_offset < s.file_size)
            .and_then(|s| (file_offset - s.file_offset).checked_add(s.address))
    }
}

/// Lowercase hex, as build ids are written.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string, or `None` when it is not hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || text.is_empty() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}
