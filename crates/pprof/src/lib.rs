//! pprof profiles for profbridge.
//!
//! - [`decode`] and [`encode`]: gzip or raw protobuf, with size limits on
//!   input and on decompressed output. Strings that are not UTF-8 are read
//!   with U+FFFD in place of invalid sequences; [`decode_keeping_raw`]
//!   also gives their original bytes ([`RawStrings`]), which
//!   [`encode_keeping_raw`] and [`dump_bytes`] write back.
//! - [`validate`]: every invariant of the format, with errors that name the
//!   table, the entry and the index at fault.
//! - [`canonicalize`] and [`canonical_eq`]: the canonical form that
//!   round-trip tests compare (docs/mapping.md).
//! - [`dump`]: the text google/pprof's `Profile.String()` prints.
//! - [`parse_legacy`]: the legacy formats google/pprof reads (gperftools
//!   CPU, heap, contention, thread, Go and Java text), parsed as it does.
//! - [`parse_folded`] and [`write_folded`]: folded stacks.
//! - [`detect_format`] and [`parse_any`]: any of the above from bytes.
//! - [`DeltaTracker`]: the differences between scrapes of cumulative
//!   profiles (Go's heap, allocs, mutex and block).

mod any;
mod canonical;
mod codec;
pub mod delta;
mod detect;
mod dump;
pub mod folded;
pub mod legacy;
mod strings;
mod validate;

/// The prost types generated from proto/pprof/profile.proto.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
}

pub use any::{
    load_profile, parse_any, parse_any_keeping_raw, parse_unzipped, InputKind, ParseError,
};
pub use canonical::{canonical_diff, canonical_eq, canonicalize};
pub use codec::wire;
pub use codec::{
    compress, decode, decode_keeping_raw, decode_packed_gunzipped, decode_packed_keeping_raw,
    decode_unvalidated, decode_unvalidated_keeping_raw, encode, encode_keeping_raw, encode_packed,
    gunzip, gunzip_into, gzip_trailer_size, is_gzip, Compression, DecodeError, DecodeOptions,
    EncodeOptions, GunzipError, GzipCompressor, PackedProfile, RawStrings, SampleSource,
    DEFAULT_GZIP_LEVEL, DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_INPUT_BYTES,
};
pub use delta::{DeltaError, DeltaOutcome, DeltaTracker, ResetReason};
pub use detect::{detect_format, unzip, DetectError, Detected, Format, Unzipped};
pub use dump::{dump, dump_bytes};
pub use folded::{
    default_sample_type_index, parse_folded, sample_type_index, write_folded, FoldedError,
    DEFAULT_FOLDED_SAMPLE_TYPE,
};
pub use legacy::{parse_legacy, sniff_legacy, LegacyError, LegacyKind};
pub use proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
pub use strings::StringInterner;
pub use validate::ids::{IdIndex, IdProblem};
pub use validate::{validate, validate_source, ValidationError};
