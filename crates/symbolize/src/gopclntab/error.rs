//! What makes a Go binary's tables unusable.

/// Why `.gopclntab` (or the inline trees it points to) cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GoTablesError {
    #[error("cannot read: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a readable ELF file: {0}")]
    Parse(#[from] object::read::Error),
    #[error("the section claims {claimed} bytes, the file has {file_len}")]
    SectionPastEnd { claimed: u64, file_len: u64 },
    #[error("unknown magic {0:#010x}")]
    UnknownMagic(u32),
    #[error("tables of Go 1.2 to 1.17 (magic {0:#010x}) are not read; Go 1.18 and later are")]
    UnsupportedVersion(u32),
    #[error("bad header: {0}")]
    BadHeader(&'static str),
    #[error("{what} at offset {offset:#x} lies past the end of the table")]
    OutOfBounds { what: &'static str, offset: u64 },
    #[error("{what} is longer than any valid table holds")]
    TooLong { what: &'static str },
    #[error("function table entry {index} is out of order or disagrees with its function")]
    Inconsistent { index: u64 },
    #[error("inline tree address {0:#x} is in no loadable segment")]
    UnmappedAddress(u64),
}
