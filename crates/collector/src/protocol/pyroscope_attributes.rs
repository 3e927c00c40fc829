//! The resource attributes Pyroscope labels become, which the Pyroscope
//! receiver writes and the Pyroscope exporter reads.

/// The resource attribute `__name__` becomes.
pub const PROFILE_NAME_ATTRIBUTE: &str = profbridge_translate::PYROSCOPE_PROFILE_NAME;
/// The resource attribute `__delta__` becomes.
pub const DELTA_ATTRIBUTE: &str = "pyroscope.delta";
/// The resource attribute `__session_id__` becomes.
pub const SESSION_ID_ATTRIBUTE: &str = "pyroscope.session_id";
