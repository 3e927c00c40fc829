//! A bounded JFR reader: chunks, metadata, constant pools, and the fields
//! of the events asked for (docs/jfr.md, "The reader").

mod chunk;
mod cursor;
mod error;
mod metadata;
mod pools;
mod stacks;
mod value;

pub(crate) use chunk::Chunk;
pub(crate) use cursor::JfrString;
pub use error::Problem;
pub(crate) use metadata::ClassDef;
pub(crate) use stacks::RawFrame;
pub(crate) use value::Value;

use crate::{JfrError, Limits};

/// Reads every chunk of `input` in turn (several recordings may be
/// concatenated), handing each to `on_chunk`.
pub(crate) fn for_each_chunk(
    input: &[u8],
    limits: &Limits,
    mut on_chunk: impl FnMut(&Chunk<'_>) -> Result<(), JfrError>,
) -> Result<(), JfrError> {
    let mut base = 0usize;
    let mut index = 0usize;
    while base < input.len() {
        if index >= limits.max_chunks {
            return Err(JfrError::TooManyChunks {
                limit: limits.max_chunks,
            });
        }
        let chunk = Chunk::read(input, base, index, limits)?;
        on_chunk(&chunk)?;
        base = base.saturating_add(chunk.header.size as usize);
        index += 1;
    }
    Ok(())
}
