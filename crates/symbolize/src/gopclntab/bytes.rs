//! Bounds-checked reads of Go's tables: every read names what it reads, so
//! that a table cut short or pointing astray says where.

use super::error::GoTablesError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endian {
    Little,
    Big,
}

/// Longest varint Go writes for a `uint32`.
const MAX_VARINT_BYTES: u64 = 5;

/// A byte region with its byte order and pointer size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bytes<'a> {
    pub data: &'a [u8],
    pub endian: Endian,
    pub ptr_size: u8,
}

impl<'a> Bytes<'a> {
    pub fn slice(
        &self,
        offset: u64,
        len: u64,
        what: &'static str,
    ) -> Result<&'a [u8], GoTablesError> {
        let out_of_bounds = || GoTablesError::OutOfBounds { what, offset };
        let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .ok_or_else(out_of_bounds)?;
        self.data.get(start..end).ok_or_else(out_of_bounds)
    }

    fn array<const N: usize>(
        &self,
        offset: u64,
        what: &'static str,
    ) -> Result<[u8; N], GoTablesError> {
        let bytes = self.slice(offset, N as u64, what)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    pub fn u8(&self, offset: u64, what: &'static str) -> Result<u8, GoTablesError> {
        let [byte] = self.array::<1>(offset, what)?;
        Ok(byte)
    }

    pub fn u32(&self, offset: u64, what: &'static str) -> Result<u32, GoTablesError> {
        let bytes = self.array(offset, what)?;
        Ok(match self.endian {
            Endian::Little => u32::from_le_bytes(bytes),
            Endian::Big => u32::from_be_bytes(bytes),
        })
    }

    pub fn u64(&self, offset: u64, what: &'static str) -> Result<u64, GoTablesError> {
        let bytes = self.array(offset, what)?;
        Ok(match self.endian {
            Endian::Little => u64::from_le_bytes(bytes),
            Endian::Big => u64::from_be_bytes(bytes),
        })
    }

    /// A pointer-sized word.
    pub fn word(&self, offset: u64, what: &'static str) -> Result<u64, GoTablesError> {
        match self.ptr_size {
            4 => self.u32(offset, what).map(u64::from),
            _ => self.u64(offset, what),
        }
    }

    /// The NUL-terminated string at `offset`.
    pub fn c_str(&self, offset: u64, what: &'static str) -> Result<&'a [u8], GoTablesError> {
        let out_of_bounds = || GoTablesError::OutOfBounds { what, offset };
        let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
        let rest = self.data.get(start..).ok_or_else(out_of_bounds)?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(out_of_bounds)?;
        rest.get(..end).ok_or_else(out_of_bounds)
    }

    /// Go's unsigned varint (7 bits a byte, low first) at `*offset`, which
    /// moves past it.
    pub fn uvarint(&self, offset: &mut u64, what: &'static str) -> Result<u32, GoTablesError> {
        let mut value: u32 = 0;
        for index in 0..MAX_VARINT_BYTES {
            let byte = self.u8(*offset + index, what)?;
            value |= u32::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                *offset += index + 1;
                return Ok(value);
            }
        }
        Err(GoTablesError::TooLong { what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn little(data: &[u8]) -> Bytes<'_> {
        Bytes {
            data,
            endian: Endian::Little,
            ptr_size: 8,
        }
    }

    #[test]
    fn reads_past_the_end_are_errors() {
        let bytes = little(&[1, 2, 3]);
        assert!(matches!(
            bytes.u32(0, "x"),
            Err(GoTablesError::OutOfBounds { offset: 0, .. })
        ));
        assert!(bytes.u8(u64::MAX, "x").is_err());
        assert!(bytes.slice(1, u64::MAX, "x").is_err());
        assert_eq!(bytes.u8(2, "x").ok(), Some(3));
    }

    #[test]
    fn strings_end_at_nul_and_need_one() {
        let bytes = little(b"main.f\0go");
        assert_eq!(bytes.c_str(0, "name").ok(), Some(&b"main.f"[..]));
        assert!(bytes.c_str(7, "name").is_err());
        assert!(bytes.c_str(9, "name").is_err());
        assert!(bytes.c_str(100, "name").is_err());
    }

    #[test]
    fn varints_are_bounded() {
        let bytes = little(&[0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        let mut offset = 0;
        assert_eq!(bytes.uvarint(&mut offset, "v").ok(), Some(300));
        assert_eq!(offset, 2);
        assert!(matches!(
            bytes.uvarint(&mut offset, "v"),
            Err(GoTablesError::TooLong { .. })
        ));
        let mut at_end = 7;
        assert!(matches!(
            bytes.uvarint(&mut at_end, "v"),
            Err(GoTablesError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn byte_order_and_pointer_size() {
        let data = [0, 0, 0, 1, 0, 0, 0, 2];
        let big = Bytes {
            data: &data,
            endian: Endian::Big,
            ptr_size: 4,
        };
        assert_eq!(big.word(4, "w").ok(), Some(2));
        assert_eq!(little(&data).word(0, "w").ok(), Some(0x0200_0000_0100_0000));
    }
}
