//! The protobuf wire format, read from a byte slice: fields, varints,
//! packed runs. Whatever prost would reject, or would read in a way this
//! module does not reproduce (groups), is `Unsupported`.

use super::{Fast, Unsupported};

/// A field's payload, by wire type.
#[derive(Debug, Clone, Copy)]
pub(super) enum Payload<'a> {
    Varint(u64),
    Fixed64(u64),
    /// No field of these messages is 32-bit; unknown ones are skipped.
    Fixed32,
    LengthDelimited(&'a [u8]),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Field<'a> {
    pub number: u32,
    pub payload: Payload<'a>,
}

impl<'a> Field<'a> {
    #[inline]
    pub fn varint(self) -> Fast<u64> {
        match self.payload {
            Payload::Varint(value) => Ok(value),
            _ => Err(Unsupported),
        }
    }

    #[inline]
    pub fn fixed64(self) -> Fast<u64> {
        match self.payload {
            Payload::Fixed64(value) => Ok(value),
            _ => Err(Unsupported),
        }
    }

    /// The body of a message, or the bytes of a `bytes` field.
    #[inline]
    pub fn bytes(self) -> Fast<&'a [u8]> {
        match self.payload {
            Payload::LengthDelimited(bytes) => Ok(bytes),
            _ => Err(Unsupported),
        }
    }

    pub fn string(self) -> Fast<String> {
        self.str().map(str::to_owned)
    }

    pub fn str(self) -> Fast<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| Unsupported)
    }

    /// Appends a repeated `int32`, packed or not, as prost does.
    pub fn append_int32s(self, values: &mut Vec<i32>) -> Fast<()> {
        self.append_varints(values, int32)
    }

    /// Appends a repeated `int64`, packed or not, as prost does.
    pub fn append_int64s(self, values: &mut Vec<i64>) -> Fast<()> {
        self.append_varints(values, int64)
    }

    fn append_varints<T>(self, values: &mut Vec<T>, convert: impl Fn(u64) -> T) -> Fast<()> {
        match self.payload {
            Payload::Varint(value) => values.push(convert(value)),
            Payload::LengthDelimited(mut packed) => {
                let count = packed.iter().filter(|&&byte| byte < 0x80).count();
                reserve_for_run(values, count);
                while !packed.is_empty() {
                    let (value, rest) = split_varint(packed)?;
                    values.push(convert(value));
                    packed = rest;
                }
            }
            _ => return Err(Unsupported),
        }
        Ok(())
    }

    /// Appends a repeated `fixed64`, packed or not, as prost does.
    pub fn append_fixed64s(self, values: &mut Vec<u64>) -> Fast<()> {
        match self.payload {
            Payload::Fixed64(value) => values.push(value),
            Payload::LengthDelimited(packed) => {
                let words = packed.chunks_exact(8);
                if !words.remainder().is_empty() {
                    return Err(Unsupported);
                }
                reserve_for_run(values, words.len());
                for word in words {
                    values.push(u64::from_le_bytes(
                        word.try_into().map_err(|_| Unsupported)?,
                    ));
                }
            }
            _ => return Err(Unsupported),
        }
        Ok(())
    }
}

/// Protobuf's `int32` from a varint: the low 32 bits, as prost reads it.
pub(super) fn int32(varint: u64) -> i32 {
    varint as i32
}

pub(super) fn int64(varint: u64) -> i64 {
    varint as i64
}

pub(super) fn uint32(varint: u64) -> u32 {
    varint as u32
}

/// Exact capacity for a field's first packed run; amortized growth when a
/// field comes in many runs, so that odd inputs cannot make it quadratic.
fn reserve_for_run<T>(values: &mut Vec<T>, additional: usize) {
    if values.is_empty() {
        values.reserve_exact(additional);
    } else {
        values.reserve(additional);
    }
}

/// The fields of a message body, in order.
pub(super) fn fields(message: &[u8]) -> Fields<'_> {
    Fields { rest: message }
}

pub(super) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Fields<'a> {
    type Item = Fast<Field<'a>>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let field = self.read_field();
        if field.is_err() {
            self.rest = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    #[inline(always)]
    fn read_field(&mut self) -> Fast<Field<'a>> {
        let key = u32::try_from(self.varint()?).map_err(|_| Unsupported)?;
        let number = key >> 3;
        if number == 0 {
            return Err(Unsupported);
        }
        let payload = match key & 7 {
            0 => Payload::Varint(self.varint()?),
            1 => Payload::Fixed64(u64::from_le_bytes(self.take()?)),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| Unsupported)?;
                let (bytes, rest) = self.rest.split_at_checked(len).ok_or(Unsupported)?;
                self.rest = rest;
                Payload::LengthDelimited(bytes)
            }
            5 => {
                self.take::<4>()?;
                Payload::Fixed32
            }
            _ => return Err(Unsupported), // groups (3, 4), or no wire type at all
        };
        Ok(Field { number, payload })
    }

    #[inline(always)]
    fn varint(&mut self) -> Fast<u64> {
        let (value, rest) = split_varint(self.rest)?;
        self.rest = rest;
        Ok(value)
    }

    /// Skips the next field, without decoding its value (which the decoding
    /// pass checks), and gives its number.
    #[inline(always)]
    fn skip_field(&mut self) -> Fast<u32> {
        let key = self.varint()?;
        let len = match key & 7 {
            0 => {
                self.rest
                    .iter()
                    .position(|&byte| byte < 0x80)
                    .ok_or(Unsupported)?
                    + 1
            }
            1 => 8,
            2 => usize::try_from(self.varint()?).map_err(|_| Unsupported)?,
            5 => 4,
            _ => return Err(Unsupported),
        };
        self.rest = self.rest.get(len..).ok_or(Unsupported)?;
        u32::try_from(key >> 3).map_err(|_| Unsupported)
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> Fast<[u8; N]> {
        let (bytes, rest) = self.rest.split_at_checked(N).ok_or(Unsupported)?;
        self.rest = rest;
        bytes.try_into().map_err(|_| Unsupported)
    }
}

/// The varint at the start of `bytes`, and the bytes after it. Like prost,
/// refuses more than 10 bytes and values above `u64::MAX`.
#[inline(always)]
fn split_varint(bytes: &[u8]) -> Fast<(u64, &[u8])> {
    match *bytes {
        [byte, ref rest @ ..] if byte < 0x80 => Ok((u64::from(byte), rest)),
        [low, high, ref rest @ ..] if high < 0x80 => {
            Ok((u64::from(low & 0x7f) | u64::from(high) << 7, rest))
        }
        _ => split_long_varint(bytes),
    }
}

/// `split_varint` for varints of 3 bytes or more: 8 bytes at a time when
/// there are 8, else byte by byte.
#[inline(never)]
fn split_long_varint(bytes: &[u8]) -> Fast<(u64, &[u8])> {
    if let Some(&word) = bytes.first_chunk::<8>() {
        let word = u64::from_le_bytes(word);
        // The high bit of each byte that would end a varint.
        let ends = !word & 0x8080_8080_8080_8080;
        if ends != 0 {
            let len = ends.trailing_zeros() as usize / 8 + 1;
            let groups = word & (ends ^ (ends - 1)) & 0x7f7f_7f7f_7f7f_7f7f;
            return Ok((
                join_7_bit_groups(groups),
                bytes.get(len..).ok_or(Unsupported)?,
            ));
        }
    }
    let mut value = 0;
    for (index, &byte) in bytes.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte < 0x80 {
            if index == 9 && byte > 1 {
                return Err(Unsupported);
            }
            return Ok((value, bytes.get(index + 1..).ok_or(Unsupported)?));
        }
    }
    Err(Unsupported)
}

/// The 7-bit groups in the low bits of `groups`' bytes, joined, the first
/// byte's lowest.
fn join_7_bit_groups(groups: u64) -> u64 {
    let pairs = (groups & 0x007f_007f_007f_007f) | ((groups & 0x7f00_7f00_7f00_7f00) >> 1);
    let quads = (pairs & 0x0000_3fff_0000_3fff) | ((pairs & 0x3fff_0000_3fff_0000) >> 2);
    (quads & 0x0000_0000_0fff_ffff) | ((quads & 0x0fff_ffff_0000_0000) >> 4)
}

/// How many times each field number below `N` occurs in `message`, so that
/// repeated fields can be allocated at their exact size.
pub(super) fn field_counts<const N: usize>(message: &[u8]) -> Fast<[usize; N]> {
    let mut counts = [0; N];
    let mut fields = fields(message);
    while !fields.rest.is_empty() {
        if let Some(count) = counts.get_mut(fields.skip_field()? as usize) {
            *count += 1;
        }
    }
    Ok(counts)
}
