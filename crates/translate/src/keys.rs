//! Attribute keys and reserved pprof labels of the mapping (docs/mapping.md).

pub const FRAME_TYPE: &str = "profile.frame.type";
pub const IS_FOLDED: &str = "pprof.location.is_folded";
pub const HAS_FUNCTIONS: &str = "pprof.mapping.has_functions";
pub const HAS_FILENAMES: &str = "pprof.mapping.has_filenames";
pub const HAS_LINE_NUMBERS: &str = "pprof.mapping.has_line_numbers";
pub const HAS_INLINE_FRAMES: &str = "pprof.mapping.has_inline_frames";
pub const COMMENT: &str = "pprof.profile.comment";
pub const DROP_FRAMES: &str = "pprof.profile.drop_frames";
pub const KEEP_FRAMES: &str = "pprof.profile.keep_frames";
pub const DOC_URL: &str = "pprof.profile.doc_url";
pub const DEFAULT_SAMPLE_TYPE: &str = "pprof.scope.default_sample_type";
pub const SAMPLE_TYPE_ORDER: &str = "pprof.scope.sample_type_order";
pub const BUILD_ID_GNU: &str = "process.executable.build_id.gnu";
pub const BUILD_ID_GO: &str = "process.executable.build_id.go";
pub const BUILD_ID_HTLHASH: &str = "process.executable.build_id.htlhash";

/// Reserved pprof labels, decoded rather than copied.
pub const FRAME_TYPES_LABEL: &str = "profile.frame.types";
pub const TRACE_ID_LABEL: &str = "trace_id";
pub const SPAN_ID_LABEL: &str = "span_id";
pub const TIMESTAMP_LABEL: &str = "timestamp_ns";
pub const ATTR_TYPES_LABEL: &str = "otel.attr_types";

/// The mapping `has_*` flags, in pprof's field order.
pub const MAPPING_FLAGS: [&str; 4] = [
    HAS_FUNCTIONS,
    HAS_FILENAMES,
    HAS_LINE_NUMBERS,
    HAS_INLINE_FRAMES,
];
