//! A faster `ExportProfilesServiceRequest::decode`: the same value as
//! prost's, with every table and nested list allocated at its exact size.
//! Tables are counted first by a scan that skips over their entries' bodies;
//! packed integers are counted by their bytes; a location's lines are
//! gathered in a reused buffer.
//!
//! It reads the encodings that encoders produce (prost's, Go's, the OTel
//! eBPF profiler's), plus unknown fields and unpacked repeated integers.
//! Anything else, valid or not (a singular message given twice, which prost
//! merges; attribute values nested more than 16 deep; groups; wrong wire
//! types; bad UTF-8; truncation), hands the whole input to prost, so results
//! and errors are prost's.

mod common;
mod dictionary;
mod profile;
mod request;
mod wire;

use prost::Message;

use crate::otlp::ExportProfilesServiceRequest;

/// Decodes an OTLP profiles export request; equal to
/// `ExportProfilesServiceRequest::decode(bytes)`, in Ok and in Err.
pub fn decode_request(bytes: &[u8]) -> Result<ExportProfilesServiceRequest, prost::DecodeError> {
    match decode_fast(bytes) {
        Some(request) => Ok(request),
        None => ExportProfilesServiceRequest::decode(bytes),
    }
}

/// The request, when the fast path reads all of `bytes`; `None` when it
/// leaves them to prost.
pub(crate) fn decode_fast(bytes: &[u8]) -> Option<ExportProfilesServiceRequest> {
    request::request(bytes).ok()
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

#[cfg(test)]
mod tests;
