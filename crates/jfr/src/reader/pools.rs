//! Constant pool events: a chain, walked backwards from the header's
//! offset by each event's delta, of (type, id, value) entries.

use rustc_hash::{FxHashMap, FxHashSet};

use super::cursor::Cursor;
use super::error::{Problem, ReadError};
use super::metadata::Types;
use super::stacks::{RawFrame, StackTraceLayout};
use super::value::{Value, ValueReader};
use crate::Limits;

/// The pools the converter looks entries up in; the others are read
/// past.
pub(crate) const KEPT_POOLS: [&str; 8] = [
    "java.lang.Thread",
    "java.lang.Class",
    "java.lang.String",
    "jdk.types.Method",
    "jdk.types.Symbol",
    "jdk.types.StackTrace",
    "jdk.types.FrameType",
    "jdk.types.ThreadState",
];

const CONSTANT_POOL_EVENT: i64 = 1;

/// Entries by type id, then by entry id; stack traces apart.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    by_type: FxHashMap<i64, FxHashMap<i64, Value>>,
    stack_traces: FxHashMap<i64, Box<[RawFrame]>>,
}

impl Pools {
    pub(crate) fn get(&self, type_id: i64, id: i64) -> Option<&Value> {
        self.by_type.get(&type_id)?.get(&id)
    }

    /// A stack trace's frames, leaf first.
    pub(crate) fn stack_trace(&self, id: i64) -> Option<&[RawFrame]> {
        self.stack_traces.get(&id).map(|frames| &**frames)
    }

    fn insert(
        &mut self,
        type_id: i64,
        id: i64,
        value: Value,
        stack_traces: Option<&StackTraceLayout>,
        limit: usize,
    ) -> bool {
        if let Some(layout) = stack_traces.filter(|layout| layout.type_id == type_id) {
            if self.stack_traces.len() >= limit {
                return false;
            }
            self.stack_traces.insert(id, layout.compact(&value));
            return true;
        }
        let entries = self.by_type.entry(type_id).or_default();
        if entries.len() >= limit {
            return false;
        }
        entries.insert(id, value);
        true
    }
}

/// Where a pool error happened: the table being read.
pub(crate) struct PoolError {
    pub(crate) table: String,
    pub(crate) error: ReadError,
}

impl From<ReadError> for PoolError {
    fn from(error: ReadError) -> Self {
        Self {
            table: "constant pool event".to_owned(),
            error,
        }
    }
}

pub(crate) fn read_pools(
    chunk: &mut Cursor<'_>,
    first: usize,
    types: &Types,
    limits: &Limits,
) -> Result<Pools, PoolError> {
    let kept: FxHashSet<i64> = KEPT_POOLS
        .iter()
        .filter_map(|name| types.id_of(name))
        .collect();
    let mut pools = Pools::default();
    let mut visited = FxHashSet::default();
    let mut position = first;
    loop {
        if !visited.insert(position) {
            return Err(chunk.error(Problem::PoolChainLoop(position as u64)).into());
        }
        chunk.seek(position)?;
        let delta = read_pool_event(chunk, types, &kept, limits, &mut pools)?;
        if delta == 0 {
            return Ok(pools);
        }
        let next = i64::try_from(position)
            .ok()
            .and_then(|p| p.checked_add(delta))
            .and_then(|p| usize::try_from(p).ok())
            .filter(|p| *p < chunk.len());
        position = next.ok_or_else(|| {
            chunk.error(Problem::OffsetOutOfChunk {
                offset: (position as i64).wrapping_add(delta) as u64,
                chunk_size: chunk.len() as u64,
            })
        })?;
    }
}

/// Reads one constant pool event; answers its delta to the previous one.
fn read_pool_event(
    chunk: &mut Cursor<'_>,
    types: &Types,
    kept: &FxHashSet<i64>,
    limits: &Limits,
    pools: &mut Pools,
) -> Result<i64, PoolError> {
    let start = chunk.pos();
    let size = chunk.int()?;
    let body_len = usize::try_from(size)
        .ok()
        .and_then(|size| size.checked_sub(chunk.pos() - start))
        .filter(|len| *len <= chunk.remaining())
        .ok_or_else(|| {
            chunk.error(Problem::BadEventSize {
                size: i64::from(size),
            })
        })?;
    let mut event = chunk.split(body_len)?;
    let event_type = event.long()?;
    if event_type != CONSTANT_POOL_EVENT {
        return Err(event
            .error(Problem::WrongEventType {
                expected: CONSTANT_POOL_EVENT,
                found: event_type,
            })
            .into());
    }
    let _start_time = event.long()?;
    let _duration = event.long()?;
    let delta = event.long()?;
    let _checkpoint_kind = event.int()?;
    let pool_count = event.count()?;
    let stack_traces = StackTraceLayout::new(types);
    let mut reader = ValueReader::new(types, limits.max_value_depth, event.remaining());
    for _ in 0..pool_count {
        let type_id = event.long()?;
        let class = reader.class(type_id, &event)?;
        let table = |error: ReadError| PoolError {
            table: format!("constant pool {}", class.name),
            error,
        };
        let entry_count = event.count().map_err(table)?;
        let keep = kept.contains(&type_id);
        for _ in 0..entry_count {
            let id = event.long().map_err(table)?;
            let value = reader.value(&mut event, type_id, 0).map_err(table)?;
            if keep
                && !pools.insert(
                    type_id,
                    id,
                    value,
                    stack_traces.as_ref(),
                    limits.max_pool_entries,
                )
            {
                return Err(table(event.error(Problem::LimitExceeded {
                    what: "entries in one constant pool",
                    limit: limits.max_pool_entries,
                })));
            }
        }
    }
    Ok(delta)
}
