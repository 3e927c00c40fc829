use serde::Deserialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// One line per request.
    #[default]
    Basic,
    /// Also one line per profile.
    Normal,
    /// Also every sample.
    Detailed,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugExporterConfig {
    pub verbosity: Verbosity,
}
