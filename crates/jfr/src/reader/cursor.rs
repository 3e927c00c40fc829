//! Primitive reads over one chunk: LEB128-style compressed integers (or
//! fixed-width big-endian ones when the chunk says so), floats, strings.

use super::error::{Problem, ReadError};

/// How a string value is encoded (its first byte).
const STRING_NULL: u8 = 0;
const STRING_EMPTY: u8 = 1;
const STRING_POOL_REF: u8 = 2;
const STRING_UTF8: u8 = 3;
const STRING_CHAR_ARRAY: u8 = 4;
const STRING_LATIN1: u8 = 5;

/// A string value: inline text, or a reference into the chunk's
/// `java.lang.String` constant pool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JfrString {
    Null,
    Text(String),
    PoolRef(i64),
}

/// Room reserved ahead for the items of a count: a count is checked
/// against the bytes left, but an item may be far larger in memory than
/// its byte, and counts nest; past this, vectors grow with what is read.
const PREALLOCATE_AT_MOST: usize = 1024;

/// The capacity to reserve for `count` items.
pub(crate) fn preallocation(count: usize) -> usize {
    count.min(PREALLOCATE_AT_MOST)
}

#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute offset of `data[0]` in the recording, for errors.
    base: u64,
    compressed: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: u64, compressed: bool) -> Self {
        Self {
            data,
            pos: 0,
            base,
            compressed,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// The absolute offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn error(&self, problem: Problem) -> ReadError {
        ReadError {
            offset: self.offset(),
            problem,
        }
    }

    /// Moves to `pos` within the slice (the end included).
    pub(crate) fn seek(&mut self, pos: usize) -> Result<(), ReadError> {
        if pos > self.data.len() {
            return Err(self.error(Problem::OffsetOutOfChunk {
                offset: pos as u64,
                chunk_size: self.data.len() as u64,
            }));
        }
        self.pos = pos;
        Ok(())
    }

    /// A cursor over the next `len` bytes; this one moves past them.
    pub(crate) fn split(&mut self, len: usize) -> Result<Cursor<'a>, ReadError> {
        let bytes = self.take(len)?;
        Ok(Cursor::new(
            bytes,
            self.offset() - len as u64,
            self.compressed,
        ))
    }

    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8], ReadError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|end| *end <= self.data.len())
            .ok_or_else(|| self.error(Problem::UnexpectedEnd))?;
        let bytes = self
            .data
            .get(self.pos..end)
            .ok_or_else(|| self.error(Problem::UnexpectedEnd))?;
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, ReadError> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }

    pub(crate) fn fixed_u32(&mut self) -> Result<u32, ReadError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(crate) fn fixed_u64(&mut self) -> Result<u64, ReadError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A compressed integer of up to 9 bytes: 7 bits a byte, low first,
    /// the 9th byte contributing all 8 of its bits.
    pub(crate) fn varint(&mut self) -> Result<u64, ReadError> {
        let mut value = 0u64;
        for index in 0..9u32 {
            let byte = self.u8()?;
            if index == 8 {
                return Ok(value | (u64::from(byte) << 56));
            }
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Ok(value)
    }

    /// A `long` (and the sizes, ids and offsets written as one).
    pub(crate) fn long(&mut self) -> Result<i64, ReadError> {
        let raw = if self.compressed {
            self.varint()?
        } else {
            self.fixed_u64()?
        };
        Ok(raw as i64)
    }

    /// An `int`: compressed, or 4 bytes big-endian.
    pub(crate) fn int(&mut self) -> Result<i32, ReadError> {
        if !self.compressed {
            return Ok(self.fixed_u32()? as i32);
        }
        let start = self.offset();
        let raw = self.varint()?;
        u32::try_from(raw).map(|v| v as i32).map_err(|_| ReadError {
            offset: start,
            problem: Problem::IntegerTooWide,
        })
    }

    /// A `short` or `char`: compressed, or 2 bytes big-endian.
    pub(crate) fn short(&mut self) -> Result<i16, ReadError> {
        if !self.compressed {
            return Ok(i16::from_be_bytes(self.array()?));
        }
        let start = self.offset();
        let raw = self.varint()?;
        u16::try_from(raw).map(|v| v as i16).map_err(|_| ReadError {
            offset: start,
            problem: Problem::IntegerTooWide,
        })
    }

    pub(crate) fn f32(&mut self) -> Result<f32, ReadError> {
        Ok(f32::from_be_bytes(self.array()?))
    }

    pub(crate) fn f64(&mut self) -> Result<f64, ReadError> {
        Ok(f64::from_be_bytes(self.array()?))
    }

    /// A count of things that each take at least one byte: never more
    /// than the bytes left, so nothing is allocated for bytes that are not
    /// there.
    pub(crate) fn count(&mut self) -> Result<usize, ReadError> {
        let start = self.offset();
        let count = self.int()?;
        let count = usize::try_from(count).map_err(|_| ReadError {
            offset: start,
            problem: Problem::NegativeCount(i64::from(count)),
        })?;
        if count > self.remaining() {
            return Err(ReadError {
                offset: start,
                problem: Problem::CountPastEnd {
                    count: count as u64,
                    remaining: self.remaining() as u64,
                },
            });
        }
        Ok(count)
    }

    pub(crate) fn string(&mut self) -> Result<JfrString, ReadError> {
        let start = self.offset();
        match self.u8()? {
            STRING_NULL => Ok(JfrString::Null),
            STRING_EMPTY => Ok(JfrString::Text(String::new())),
            STRING_POOL_REF => Ok(JfrString::PoolRef(self.long()?)),
            STRING_UTF8 => {
                let len = self.count()?;
                let bytes = self.take(len)?;
                Ok(JfrString::Text(String::from_utf8_lossy(bytes).into_owned()))
            }
            STRING_CHAR_ARRAY => {
                let len = self.count()?;
                let mut units = Vec::with_capacity(preallocation(len));
                for _ in 0..len {
                    units.push(self.short()? as u16);
                }
                Ok(JfrString::Text(String::from_utf16_lossy(&units)))
            }
            STRING_LATIN1 => {
                let len = self.count()?;
                let bytes = self.take(len)?;
                Ok(JfrString::Text(
                    bytes.iter().map(|&b| char::from(b)).collect(),
                ))
            }
            other => Err(ReadError {
                offset: start,
                problem: Problem::UnknownStringEncoding(other),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn compressed(bytes: &[u8]) -> Cursor<'_> {
        Cursor::new(bytes, 0, true)
    }

    #[test]
    fn varints_read_seven_bits_a_byte_and_eight_in_the_ninth() {
        assert_eq!(compressed(&[0x05]).long().unwrap(), 5);
        assert_eq!(compressed(&[0xac, 0x02]).long().unwrap(), 300);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(compressed(&max).long().unwrap(), -1);
        assert!(compressed(&[0x80, 0x80]).long().is_err());
    }

    #[test]
    fn an_int_wider_than_32_bits_is_refused() {
        let err = compressed(&[0x80, 0x80, 0x80, 0x80, 0x10])
            .int()
            .unwrap_err();
        assert!(matches!(err.problem, Problem::IntegerTooWide));
        assert_eq!(
            compressed(&[0xff, 0xff, 0xff, 0xff, 0x0f]).int().unwrap(),
            -1
        );
    }

    #[test]
    fn fixed_width_integers_when_not_compressed() {
        let mut cursor = Cursor::new(&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 3], 0, false);
        assert_eq!(cursor.int().unwrap(), 256);
        assert_eq!(cursor.long().unwrap(), 7);
        assert_eq!(cursor.short().unwrap(), 3);
    }

    #[test]
    fn strings_in_every_encoding() {
        let text = |s: &str| JfrString::Text(s.to_owned());
        assert_eq!(compressed(&[0]).string().unwrap(), JfrString::Null);
        assert_eq!(compressed(&[1]).string().unwrap(), text(""));
        assert_eq!(compressed(&[2, 9]).string().unwrap(), JfrString::PoolRef(9));
        assert_eq!(
            compressed(&[3, 2, b'h', b'i']).string().unwrap(),
            text("hi")
        );
        assert_eq!(
            compressed(&[4, 2, 0xe9, 0x01, b'x']).string().unwrap(),
            text("éx")
        );
        assert_eq!(
            compressed(&[5, 2, 0xe9, b'x']).string().unwrap(),
            text("éx")
        );
        assert!(matches!(
            compressed(&[6]).string().unwrap_err().problem,
            Problem::UnknownStringEncoding(6)
        ));
    }

    #[test]
    fn a_count_past_the_bytes_left_is_refused_before_allocating() {
        let err = compressed(&[3, 0xff, 0xff, 0xff, 0xff, 0x07])
            .string()
            .unwrap_err();
        assert!(matches!(err.problem, Problem::CountPastEnd { .. }));
        assert_eq!(err.offset, 1);
    }
}
