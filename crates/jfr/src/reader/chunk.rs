//! One chunk: its header, metadata, constant pools and events.

use rustc_hash::FxHashSet;

use super::cursor::Cursor;
use super::error::{Problem, ReadError};
use super::metadata::{read_metadata, ClassDef, Types};
use super::pools::{read_pools, Pools};
use super::value::{Value, ValueReader, CHUNK_HEADER_SIZE};
use crate::{JfrError, Limits, MAGIC};

const SUPPORTED_MAJOR: u16 = 2;
const COMPRESSED_INTEGERS: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub(crate) size: u64,
    pub(crate) constant_pool_offset: u64,
    pub(crate) metadata_offset: u64,
    pub(crate) start_nanos: i64,
    pub(crate) duration_nanos: i64,
    pub(crate) start_ticks: i64,
    pub(crate) ticks_per_second: i64,
    pub(crate) compressed_integers: bool,
}

/// Reads a header at the cursor; `available` is the input left from it.
fn read_header(cursor: &mut Cursor<'_>, available: u64) -> Result<ChunkHeader, ReadError> {
    let start = cursor.offset();
    let at_start = |problem| ReadError {
        offset: start,
        problem,
    };
    if cursor.take(MAGIC.len())? != MAGIC {
        return Err(at_start(Problem::BadMagic));
    }
    let version = cursor.fixed_u32()?;
    let (major, minor) = ((version >> 16) as u16, version as u16);
    if major != SUPPORTED_MAJOR {
        return Err(at_start(Problem::UnsupportedVersion { major, minor }));
    }
    let size = cursor.fixed_u64()?;
    let header = ChunkHeader {
        size,
        constant_pool_offset: cursor.fixed_u64()?,
        metadata_offset: cursor.fixed_u64()?,
        start_nanos: cursor.fixed_u64()? as i64,
        duration_nanos: cursor.fixed_u64()? as i64,
        start_ticks: cursor.fixed_u64()? as i64,
        ticks_per_second: cursor.fixed_u64()? as i64,
        compressed_integers: cursor.fixed_u32()? & COMPRESSED_INTEGERS != 0,
    };
    if size > available || size < CHUNK_HEADER_SIZE as u64 {
        return Err(at_start(Problem::ChunkSizePastInput { size, available }));
    }
    for offset in [header.constant_pool_offset, header.metadata_offset] {
        if offset < CHUNK_HEADER_SIZE as u64 || offset >= size {
            return Err(at_start(Problem::OffsetOutOfChunk {
                offset,
                chunk_size: size,
            }));
        }
    }
    Ok(header)
}

pub(crate) struct Chunk<'a> {
    pub(crate) index: usize,
    pub(crate) header: ChunkHeader,
    pub(crate) types: Types,
    pub(crate) pools: Pools,
    data: &'a [u8],
    base: u64,
    max_value_depth: usize,
}

fn malformed(chunk: usize, part: impl Into<String>, error: ReadError) -> JfrError {
    JfrError::Malformed {
        chunk,
        offset: error.offset,
        part: part.into(),
        problem: error.problem,
    }
}

impl<'a> Chunk<'a> {
    /// Reads the chunk starting at `base` in `input` (header, metadata,
    /// pools); answers it and its size.
    pub(crate) fn read(
        input: &'a [u8],
        base: usize,
        index: usize,
        limits: &Limits,
    ) -> Result<Self, JfrError> {
        let rest = input.get(base..).unwrap_or_default();
        let mut cursor = Cursor::new(rest, base as u64, true);
        let header = read_header(&mut cursor, rest.len() as u64)
            .map_err(|e| malformed(index, "chunk header", e))?;
        // read_header checked that the size fits in `rest`.
        let data = rest.get(..header.size as usize).unwrap_or_default();
        let mut cursor = Cursor::new(data, base as u64, header.compressed_integers);
        cursor
            .seek(header.metadata_offset as usize)
            .map_err(|e| malformed(index, "chunk header", e))?;
        let types =
            read_metadata(&mut cursor, limits).map_err(|e| malformed(index, "metadata", e))?;
        let pools = read_pools(
            &mut cursor,
            header.constant_pool_offset as usize,
            &types,
            limits,
        )
        .map_err(|e| malformed(index, e.table, e.error))?;
        Ok(Self {
            index,
            header,
            types,
            pools,
            data,
            base: base as u64,
            max_value_depth: limits.max_value_depth,
        })
    }

    /// Calls `on_event` with the fields of every event whose type is in
    /// `wanted`, in the order written; skips the others by their size.
    pub(crate) fn for_each_event(
        &self,
        wanted: &FxHashSet<i64>,
        mut on_event: impl FnMut(&ClassDef, &[Value]) -> Result<(), JfrError>,
    ) -> Result<(), JfrError> {
        let mut cursor = Cursor::new(self.data, self.base, self.header.compressed_integers);
        let events = |e| malformed(self.index, "event header", e);
        cursor.seek(CHUNK_HEADER_SIZE).map_err(events)?;
        while cursor.remaining() > 0 {
            let start = cursor.pos();
            let size = cursor.int().map_err(events)?;
            let type_id = cursor.long().map_err(events)?;
            let body_len = usize::try_from(size)
                .ok()
                .and_then(|size| size.checked_sub(cursor.pos() - start))
                .filter(|len| *len <= cursor.remaining())
                .ok_or_else(|| {
                    events(ReadError {
                        offset: self.base + start as u64,
                        problem: Problem::BadEventSize {
                            size: i64::from(size),
                        },
                    })
                })?;
            let mut body = cursor.split(body_len).map_err(events)?;
            if !wanted.contains(&type_id) {
                continue;
            }
            let mut reader = ValueReader::new(&self.types, self.max_value_depth, body_len);
            let class = reader.class(type_id, &body).map_err(events)?;
            let fields = reader
                .object(&mut body, class, 0)
                .map_err(|e| malformed(self.index, format!("event {}", class.name), e))?;
            on_event(class, &fields)?;
        }
        Ok(())
    }
}
