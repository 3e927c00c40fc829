//! The functions of `.gopclntab`: which one holds an address, its name, and
//! its pc-value tables (file, line, inline-tree index at each pc).

use super::bytes::Bytes;
use super::error::GoTablesError;
use super::header::Header;

/// `PCDATA_InlTreeIndex` and `FUNCDATA_InlTree` (runtime/symtab.go).
const PCDATA_INLINE_TREE_INDEX: u64 = 2;
const FUNCDATA_INLINE_TREE: u8 = 3;

/// More steps than a pc-value table of any function has.
const MAX_PCVALUE_STEPS: u32 = 1 << 18;

/// The tables with the address the function table's entries count from.
pub(super) struct Pcln<'a> {
    pub bytes: Bytes<'a>,
    pub header: Header,
    pub text_start: u64,
}

/// A `_func` record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Func {
    pub entry: u64,
    /// Where the record is in the section.
    offset: u64,
    pub name_off: u32,
    pcfile: u32,
    pcln: u32,
    npcdata: u32,
    cu_offset: u32,
    nfuncdata: u8,
}

impl Pcln<'_> {
    /// The function whose code holds `address`, if any.
    pub fn find(&self, address: u64) -> Result<Option<Func>, GoTablesError> {
        let Some(offset) = address
            .checked_sub(self.text_start)
            .and_then(|offset| u32::try_from(offset).ok())
        else {
            return Ok(None);
        };
        let header = &self.header;
        let entry_at = |index: u64| self.bytes.u32(header.pclntab + index * 8, "function table");
        if offset < entry_at(0)? || offset >= entry_at(header.nfunc)? {
            return Ok(None);
        }
        // entry(low) <= offset < entry(high) holds throughout.
        let (mut low, mut high) = (0, header.nfunc);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if entry_at(middle)? <= offset {
                low = middle;
            } else {
                high = middle;
            }
        }
        let record = self
            .bytes
            .u32(header.pclntab + low * 8 + 4, "function table")?;
        let func = self.func_at(header.pclntab + u64::from(record))?;
        if Some(func.entry) != self.text_start.checked_add(u64::from(entry_at(low)?)) {
            return Err(GoTablesError::Inconsistent { index: low });
        }
        Ok(Some(func))
    }

    /// Checks that the function table is in address order and that each
    /// entry's record starts where the entry says: what lookups rely on.
    pub fn check_function_table(&self) -> Result<(), GoTablesError> {
        let header = &self.header;
        let mut previous = 0;
        for index in 0..=header.nfunc {
            let entry = self
                .bytes
                .u32(header.pclntab + index * 8, "function table")?;
            if entry < previous {
                return Err(GoTablesError::Inconsistent { index });
            }
            previous = entry;
            if index == header.nfunc {
                break;
            }
            let record = self
                .bytes
                .u32(header.pclntab + index * 8 + 4, "function table")?;
            let func = self.func_at(header.pclntab + u64::from(record))?;
            if Some(func.entry) != self.text_start.checked_add(u64::from(entry)) {
                return Err(GoTablesError::Inconsistent { index });
            }
        }
        Ok(())
    }

    fn func_at(&self, offset: u64) -> Result<Func, GoTablesError> {
        let field = |at: u64| self.bytes.u32(offset + at, "function record");
        let entry = self
            .text_start
            .checked_add(u64::from(field(0)?))
            .ok_or(GoTablesError::BadHeader("text start too high"))?;
        Ok(Func {
            entry,
            offset,
            name_off: field(4)?,
            pcfile: field(20)?,
            pcln: field(24)?,
            npcdata: field(28)?,
            cu_offset: field(32)?,
            nfuncdata: self.bytes.u8(
                offset + self.header.layout.func_size() - 1,
                "function record",
            )?,
        })
    }

    /// The function name at `name_off` of the name table.
    pub fn name(&self, name_off: u32) -> Result<String, GoTablesError> {
        let name = self.bytes.c_str(
            self.header.funcnametab + u64::from(name_off),
            "function name",
        )?;
        Ok(String::from_utf8_lossy(name).into_owned())
    }

    /// The file and line of `func` at `pc`; empty and 0 where the tables
    /// say none, as the runtime's "?" and 0.
    pub fn file_line(&self, func: &Func, pc: u64) -> Result<(String, u32), GoTablesError> {
        let file_index = self.pcvalue(func, func.pcfile, pc)?;
        let line = self.pcvalue(func, func.pcln, pc)?;
        let (Ok(file_index), Ok(line)) = (u64::try_from(file_index), u32::try_from(line)) else {
            return Ok((String::new(), 0));
        };
        let cu_entry = (u64::from(func.cu_offset) + file_index) * 4;
        let file_offset = self
            .bytes
            .u32(self.header.cutab + cu_entry, "compilation unit table")?;
        if file_offset == u32::MAX {
            return Ok((String::new(), line));
        }
        let file = self
            .bytes
            .c_str(self.header.filetab + u64::from(file_offset), "file name")?;
        Ok((String::from_utf8_lossy(file).into_owned(), line))
    }

    /// The index in `func`'s inline tree of the call being executed at
    /// `pc`, negative when the code there is `func`'s own.
    pub fn inline_index(&self, func: &Func, pc: u64) -> Result<i32, GoTablesError> {
        if u64::from(func.npcdata) <= PCDATA_INLINE_TREE_INDEX {
            return Ok(-1);
        }
        let table = self.bytes.u32(
            func.offset + self.header.layout.func_size() + PCDATA_INLINE_TREE_INDEX * 4,
            "pcdata",
        )?;
        self.pcvalue(func, table, pc)
    }

    /// The offset of `func`'s inline tree from the module's `gofunc`.
    pub fn inline_tree(&self, func: &Func) -> Result<Option<u32>, GoTablesError> {
        if func.nfuncdata <= FUNCDATA_INLINE_TREE {
            return Ok(None);
        }
        let at = func.offset
            + self.header.layout.func_size()
            + u64::from(func.npcdata) * 4
            + u64::from(FUNCDATA_INLINE_TREE) * 4;
        let offset = self.bytes.u32(at, "funcdata")?;
        Ok((offset != u32::MAX).then_some(offset))
    }

    /// The value of the pc-value table at `table` for `pc`: a run of
    /// (value delta, pc delta) varint pairs from the function's entry;
    /// -1 when the table is absent or ends before `pc`.
    fn pcvalue(&self, func: &Func, table: u32, pc: u64) -> Result<i32, GoTablesError> {
        if table == 0 {
            return Ok(-1);
        }
        let what = "pc-value table";
        let mut at = self.header.pctab + u64::from(table);
        let mut value: i32 = -1;
        let mut until = func.entry;
        for _ in 0..MAX_PCVALUE_STEPS {
            let delta = self.bytes.uvarint(&mut at, what)?;
            if delta == 0 && until != func.entry {
                return Ok(-1);
            }
            value = value.wrapping_add(zigzag(delta));
            let pc_delta = self.bytes.uvarint(&mut at, what)?;
            // Every entry covers some code.
            if pc_delta == 0 {
                return Err(GoTablesError::TooLong { what });
            }
            until = until
                .checked_add(u64::from(pc_delta) * u64::from(self.header.quantum))
                .ok_or(GoTablesError::TooLong { what })?;
            if pc < until {
                return Ok(value);
            }
        }
        Err(GoTablesError::TooLong { what })
    }
}

/// A value delta: the low bit is the sign.
fn zigzag(delta: u32) -> i32 {
    ((delta >> 1) ^ (delta & 1).wrapping_neg()) as i32
}

#[cfg(test)]
mod tests {
    use super::super::bytes::Endian;
    use super::super::header::Layout;
    use super::*;

    /// One function at 0x1000 whose line table says line 10 for 4 bytes,
    /// 12 for 2, then 11 for 4 (values start at -1).
    fn tables(pctab: &[u8]) -> (Vec<u8>, Header) {
        let mut data = vec![0u8; 8];
        data.extend(pctab);
        let header = Header {
            layout: Layout::Go118,
            endian: Endian::Little,
            ptr_size: 8,
            quantum: 1,
            nfunc: 1,
            text_start: 0x1000,
            funcnametab: 0,
            cutab: 0,
            filetab: 0,
            pctab: 0,
            pclntab: 0,
        };
        (data, header)
    }

    fn line_at(data: &[u8], header: Header, pc: u64) -> Result<i32, GoTablesError> {
        let pcln = Pcln {
            bytes: Bytes {
                data,
                endian: Endian::Little,
                ptr_size: 8,
            },
            header,
            text_start: 0x1000,
        };
        let func = Func {
            entry: 0x1000,
            offset: 0,
            name_off: 0,
            pcfile: 0,
            pcln: 8,
            npcdata: 0,
            cu_offset: 0,
            nfuncdata: 0,
        };
        pcln.pcvalue(&func, func.pcln, pc)
    }

    #[test]
    fn pc_value_tables_step_from_the_entry() {
        // +11 → 10 for 4, +2 → 12 for 2, -1 → 11 for 4, end.
        let (data, header) = tables(&[22, 4, 4, 2, 1, 4, 0]);
        let lines: Vec<i32> = (0x1000..0x100b)
            .map(|pc| line_at(&data, header, pc).unwrap_or(-2))
            .collect();
        assert_eq!(lines, [10, 10, 10, 10, 12, 12, 11, 11, 11, 11, -1]);
    }

    #[test]
    fn a_table_cut_short_is_an_error() {
        let (data, header) = tables(&[22, 4, 4]);
        assert!(matches!(
            line_at(&data, header, 0x1005),
            Err(GoTablesError::OutOfBounds { .. })
        ));
        let (data, header) = tables(&[0xff; 40]);
        assert!(line_at(&data, header, 0x1005).is_err());
    }

    #[test]
    fn value_deltas_carry_their_sign_in_the_low_bit() {
        assert_eq!(
            [0, 1, 2, 3, 4, u32::MAX].map(zigzag),
            [0, -1, 1, -2, 2, i32::MIN]
        );
    }
}
