//! Lossless pprof ⇄ OTLP Profiles (v1.11.0) translation, as
//! docs/mapping.md specifies, with OTLP validation, OTLP/JSON and the
//! linear dictionary merge.

pub mod canonical;
mod dictionary;
mod jfr;
pub mod json;
pub mod keys;
mod load;
mod merge;
pub mod otlp;
mod otlp_decode;
mod reserved;
mod to_otlp;
mod to_pprof;
pub mod validate;

pub use dictionary::DictionaryBuilder;
pub use jfr::{jfr_to_otlp, JFR_PAYLOAD_FORMAT, PYROSCOPE_PROFILE_NAME};
pub use load::{load_any, load_any_detected, load_any_packed, JsonNotes, LoadError, Loaded};
pub use merge::merge_requests;
pub use otlp_decode::field as otlp_field;
pub use otlp_decode::{decode_request, decode_request_reusing};
pub use reserved::frame_types::label_frame_types;
pub use to_otlp::{pprof_to_otlp, PprofInput, PprofToOtlp, ToOtlpError, ToOtlpOptions};
pub use to_pprof::{
    otlp_to_pprof, otlp_to_unassembled_pprof, OtlpToPprof, PprofConverter, PprofOutput,
    ToPprofOptions, UnassembledPprof,
};
pub use validate::{
    validate_request, EntryError, OtlpError, ProfileRef, Validated, ZeroEntryError,
};
