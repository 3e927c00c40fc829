//! A faster `ExportProfilesServiceRequest::decode`: the same value as
//! prost's, with every table and nested list allocated at its exact size.
//! Tables are counted first by a scan that skips over their entries' bodies;
//! packed integers are counted by their bytes; a location's lines are
//! gathered in a reused buffer. [`decode_request_reusing`] decodes into the
//! memory of a request that is no longer needed, so that a collector
//! decoding one request after another allocates (and faults in) almost
//! nothing.
//!
//! It reads the encodings that encoders produce (prost's, Go's, the OTel
//! eBPF profiler's), plus unknown fields and unpacked repeated integers.
//! Anything else, valid or not (a singular message given twice, which prost
//! merges; attribute values nested more than 16 deep; groups; wrong wire
//! types; bad UTF-8; truncation), hands the whole input to prost, so results
//! and errors are prost's.

mod common;
mod dictionary;
pub mod field;
mod profile;
mod request;
mod wire;

use prost::Message;

use crate::otlp::ExportProfilesServiceRequest;

/// Decodes an OTLP profiles export request; equal to
/// `ExportProfilesServiceRequest::decode(bytes)`, in Ok and in Err.
pub fn decode_request(bytes: &[u8]) -> Result<ExportProfilesServiceRequest, prost::DecodeError> {
    decode_request_reusing(bytes, ExportProfilesServiceRequest::default())
}

/// [`decode_request`] in the memory of `spare`, a request that is no longer
/// needed: its tables, lists and strings are overwritten in place. The
/// result is the same whatever `spare` holds.
pub fn decode_request_reusing(
    bytes: &[u8],
    spare: ExportProfilesServiceRequest,
) -> Result<ExportProfilesServiceRequest, prost::DecodeError> {
    match request::request(bytes, spare) {
        Ok(request) => Ok(request),
        Err(Unsupported) => ExportProfilesServiceRequest::decode(bytes),
    }
}

/// The request, when the fast path reads all of `bytes`; `None` when it
/// leaves them to prost.
#[cfg(test)]
pub(crate) fn decode_fast(bytes: &[u8]) -> Option<ExportProfilesServiceRequest> {
    request::request(bytes, ExportProfilesServiceRequest::default()).ok()
}

/// The input is for prost to decode: invalid, or valid in a way that the
/// fast path does not reproduce.
#[derive(Debug)]
struct Unsupported;

type Fast<T> = Result<T, Unsupported>;

/// Sets a singular message field. A second occurrence is `Unsupported`:
/// prost merges it into the first.
fn set_once<T>(slot: &mut Option<T>, value: T) -> Fast<()> {
    if slot.is_some() {
        return Err(Unsupported);
    }
    *slot = Some(value);
    Ok(())
}

/// Fills a repeated message field in the memory of the entries it held:
/// the n-th entry decoded overwrites the n-th one kept, and those left
/// over are dropped with the `Refill`.
struct Refill<'a, T> {
    entries: &'a mut Vec<T>,
    filled: usize,
}

impl<'a, T: Default> Refill<'a, T> {
    /// For `count` entries: a fresh vector gets exactly that capacity.
    fn new(entries: &'a mut Vec<T>, count: usize) -> Self {
        if let Some(more) = count.checked_sub(entries.len()) {
            entries.reserve_exact(more);
        }
        Self { entries, filled: 0 }
    }

    /// The next entry to overwrite: a kept one, or a new default one.
    fn next(&mut self) -> Fast<&mut T> {
        if self.filled == self.entries.len() {
            self.entries.push(T::default());
        }
        let entry = self.entries.get_mut(self.filled).ok_or(Unsupported)?;
        self.filled += 1;
        Ok(entry)
    }
}

impl<T> Drop for Refill<'_, T> {
    fn drop(&mut self) {
        self.entries.truncate(self.filled);
    }
}

/// `vector`'s memory, emptied, leaving an empty vector in its place.
fn emptied<T>(vector: &mut Vec<T>) -> Vec<T> {
    let mut kept = std::mem::take(vector);
    kept.clear();
    kept
}

#[cfg(test)]
mod tests;
