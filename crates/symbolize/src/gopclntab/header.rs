//! The header of `.gopclntab` (the runtime's `pcHeader`) and what differs
//! between the layouts of Go 1.18–1.19 and Go 1.20 onwards.

use super::bytes::{Bytes, Endian};
use super::error::GoTablesError;

const GO_1_2_MAGIC: u32 = 0xffff_fffb;
const GO_1_16_MAGIC: u32 = 0xffff_fffa;
const GO_1_18_MAGIC: u32 = 0xffff_fff0;
const GO_1_20_MAGIC: u32 = 0xffff_fff1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// Go 1.18 and 1.19.
    Go118,
    /// Go 1.20 onwards: `_func` gained `startLine`, the inline tree entry
    /// lost its file and line, the module data gained `covctrs`.
    Go120,
}

impl Layout {
    /// Bytes of a `_func` before its `pcdata` offsets.
    pub fn func_size(self) -> u64 {
        match self {
            Layout::Go118 => 40,
            Layout::Go120 => 44,
        }
    }

    /// Bytes of an `inlinedCall`.
    pub fn inline_entry_size(self) -> u64 {
        match self {
            Layout::Go118 => 20,
            Layout::Go120 => 16,
        }
    }

    /// Where an `inlinedCall` holds its callee's name offset and the
    /// offset of an instruction at its call site.
    pub fn inline_name_and_parent_pc(self) -> (u64, u64) {
        match self {
            Layout::Go118 => (12, 16),
            Layout::Go120 => (4, 8),
        }
    }

    /// The word of `runtime.moduledata` that holds `gofunc`, the base of
    /// function data offsets.
    pub fn moduledata_gofunc_word(self) -> u64 {
        match self {
            Layout::Go118 => 38,
            Layout::Go120 => 40,
        }
    }
}

/// Offsets are from the start of the section.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub layout: Layout,
    pub endian: Endian,
    pub ptr_size: u8,
    /// The instruction size unit of pc deltas.
    pub quantum: u8,
    pub nfunc: u64,
    /// As the linker wrote it; 0 when left to a dynamic relocation.
    pub text_start: u64,
    pub funcnametab: u64,
    pub cutab: u64,
    pub filetab: u64,
    pub pctab: u64,
    /// The function table, followed by the `_func` records it points to.
    pub pclntab: u64,
}

impl Header {
    pub fn parse(data: &[u8]) -> Result<Self, GoTablesError> {
        let magic_bytes: [u8; 4] = data
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(GoTablesError::BadHeader("shorter than its header"))?;
        let little = u32::from_le_bytes(magic_bytes);
        let big = u32::from_be_bytes(magic_bytes);
        let (endian, magic) = if known(little) {
            (Endian::Little, little)
        } else if known(big) {
            (Endian::Big, big)
        } else {
            return Err(GoTablesError::UnknownMagic(little));
        };
        let layout = match magic {
            GO_1_18_MAGIC => Layout::Go118,
            GO_1_20_MAGIC => Layout::Go120,
            _ => return Err(GoTablesError::UnsupportedVersion(magic)),
        };
        let mut bytes = Bytes {
            data,
            endian,
            ptr_size: 8,
        };
        let pad = (bytes.u8(4, "header")?, bytes.u8(5, "header")?);
        let quantum = bytes.u8(6, "header")?;
        let ptr_size = bytes.u8(7, "header")?;
        if pad != (0, 0) || ![1, 2, 4].contains(&quantum) || ![4, 8].contains(&ptr_size) {
            return Err(GoTablesError::BadHeader(
                "padding, instruction size or pointer size out of range",
            ));
        }
        bytes.ptr_size = ptr_size;
        let word = |index: u64| bytes.word(8 + index * u64::from(ptr_size), "header");
        let header = Header {
            layout,
            endian,
            ptr_size,
            quantum,
            nfunc: word(0)?,
            text_start: word(2)?,
            funcnametab: word(3)?,
            cutab: word(4)?,
            filetab: word(5)?,
            pctab: word(6)?,
            pclntab: word(7)?,
        };
        let len = data.len() as u64;
        let offsets = [
            header.funcnametab,
            header.cutab,
            header.filetab,
            header.pctab,
            header.pclntab,
        ];
        if offsets.iter().any(|&offset| offset >= len) {
            return Err(GoTablesError::BadHeader("a table starts past the section"));
        }
        if header.nfunc == 0 {
            return Err(GoTablesError::BadHeader("no functions"));
        }
        // The function table: an (entry, _func offset) pair of u32 per
        // function, then the end of the last function.
        let functab_end = header
            .nfunc
            .checked_mul(8)
            .and_then(|size| size.checked_add(4 + header.pclntab))
            .ok_or(GoTablesError::TooLong {
                what: "function table",
            })?;
        if functab_end > len {
            return Err(GoTablesError::OutOfBounds {
                what: "function table",
                offset: header.pclntab,
            });
        }
        Ok(header)
    }
}

fn known(magic: u32) -> bool {
    [GO_1_2_MAGIC, GO_1_16_MAGIC, GO_1_18_MAGIC, GO_1_20_MAGIC].contains(&magic)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(magic: u32, nfunc: u64, offsets: u64) -> Vec<u8> {
        let mut data = magic.to_le_bytes().to_vec();
        data.extend([0, 0, 1, 8]);
        data.extend(nfunc.to_le_bytes());
        data.extend(1u64.to_le_bytes());
        data.extend(0x40_1000u64.to_le_bytes());
        for _ in 0..5 {
            data.extend(offsets.to_le_bytes());
        }
        data.resize(200, 0);
        data
    }

    #[test]
    fn reads_the_go_1_18_and_1_20_headers() {
        let parsed = Header::parse(&header(GO_1_18_MAGIC, 2, 72)).ok();
        assert_eq!(
            parsed.map(|h| (h.layout, h.nfunc, h.pclntab)),
            Some((Layout::Go118, 2, 72))
        );
        let parsed = Header::parse(&header(GO_1_20_MAGIC, 2, 72)).ok();
        assert_eq!(parsed.map(|h| h.layout), Some(Layout::Go120));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(
            Header::parse(&header(GO_1_16_MAGIC, 2, 72)),
            Err(GoTablesError::UnsupportedVersion(GO_1_16_MAGIC))
        ));
        assert!(matches!(
            Header::parse(&header(0x1234_5678, 2, 72)),
            Err(GoTablesError::UnknownMagic(0x1234_5678))
        ));
        assert!(matches!(
            Header::parse(&header(GO_1_18_MAGIC, 1 << 40, 72)),
            Err(GoTablesError::OutOfBounds { .. })
        ));
        assert!(matches!(
            Header::parse(&header(GO_1_18_MAGIC, u64::MAX, 72)),
            Err(GoTablesError::TooLong { .. })
        ));
        assert!(Header::parse(&header(GO_1_18_MAGIC, 2, 500)).is_err());
        assert!(Header::parse(&header(GO_1_18_MAGIC, 2, 72)[..30]).is_err());
        assert!(Header::parse(&[]).is_err());
    }
}
