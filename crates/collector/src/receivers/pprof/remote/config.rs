//! `receivers: pprof: remote:` — profiles pulled over HTTP, in the shape
//! of the OpenTelemetry Collector's (`endpoint`, the full URL of one
//! profile, scraped every `collection_interval`, with confighttp's client
//! settings) and with what Grafana Alloy's `pyroscope.scrape` users need:
//! many `targets` with labels, `file_sd_configs`, the Go profile types by
//! name, and deltas for cumulative ones.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::settings::client::ClientSettings;
use crate::settings::units::{ByteSize, Duration};
use crate::settings::{EmbeddedPart, ExtensionRef, Options, Problem};

/// How often each target's profiles are pulled, by default (the
/// Collector's pprof receiver's default).
pub const DEFAULT_COLLECTION_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemoteConfig {
    pub collection_interval: Duration,
    /// How long after start the first scrape waits (scraperhelper's).
    pub initial_delay: Duration,
    /// How long one scrape may take; `0s`: the collection interval (a CPU
    /// profile's `seconds` plus 5 s for `cpu`).
    pub timeout: Duration,
    /// Targets with labels, as Prometheus' `static_configs`.
    pub targets: Vec<StaticTargets>,
    /// Files listing targets, re-read when they change.
    pub file_sd_configs: Vec<FileSdConfig>,
    /// The profiles pulled from each target; the Go types by name
    /// (`cpu`, `heap`, `allocs`, `goroutine`, `mutex`, `block`,
    /// `threadcreate`) or `{name, path}`.
    pub profiles: Vec<ProfileEntry>,
    /// Whether cumulative profiles (allocs, heap's alloc_* values, mutex,
    /// block) are sent as deltas between scrapes.
    pub delta: bool,
    /// `http` or `https`, for targets written as host:port.
    pub scheme: String,
    /// Scrapes in progress at once, across all targets.
    pub max_concurrent_scrapes: u32,
    /// Largest profile taken, as sent and after gunzip.
    pub max_profile_size: ByteSize,
    /// `endpoint` (one profile's full URL), `tls`, `headers`, `auth`.
    #[serde(skip)]
    pub client: ClientSettings,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        Self {
            collection_interval: DEFAULT_COLLECTION_INTERVAL,
            initial_delay: Duration::from_secs(1),
            timeout: Duration::from_secs(0),
            targets: Vec::new(),
            file_sd_configs: Vec::new(),
            profiles: Vec::new(),
            delta: true,
            scheme: "http".to_owned(),
            max_concurrent_scrapes: 16,
            max_profile_size: ByteSize(16 << 20),
            client: ClientSettings::default(),
        }
    }
}

/// `targets:` entries: addresses (`host:port`, or a base URL) and the
/// labels they share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StaticTargets {
    pub targets: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

/// `file_sd_configs:` entries, as Prometheus reads them: JSON or YAML
/// files holding lists of `{targets: [...], labels: {...}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileSdConfig {
    /// Paths or glob patterns.
    pub files: Vec<String>,
    /// How often the files are re-read even when they seem unchanged.
    pub refresh_interval: Duration,
}

impl Default for FileSdConfig {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            refresh_interval: Duration::from_secs(300),
        }
    }
}

/// One profile to pull: a Go type by name, or any path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ProfileEntry {
    Name(String),
    Custom(CustomProfile),
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomProfile {
    pub name: String,
    /// The path (and query) on the target; a Go type's by default.
    #[serde(default)]
    pub path: Option<String>,
    /// A CPU profile's length (`?seconds=`); by default the collection
    /// interval less a second.
    #[serde(default)]
    pub seconds: Option<Duration>,
    /// Whether it is sent as deltas; by default, when it is cumulative.
    #[serde(default)]
    pub delta: Option<bool>,
}

/// What a profile's values are between scrapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulation {
    /// Each scrape stands alone (CPU over its seconds, goroutines now).
    Snapshot,
    /// Counts since the process started (allocs, heap's alloc_*, mutex,
    /// block): sent as deltas.
    Cumulative,
}

/// A profile to pull, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSpec {
    pub name: String,
    /// Path and query.
    pub path: String,
    /// For `cpu`: the `seconds` asked for.
    pub seconds: Option<std::time::Duration>,
    pub delta: bool,
}

/// The Go types `net/http/pprof` serves: name, path, whether cumulative.
const GO_PROFILES: [(&str, &str, Accumulation); 7] = [
    ("cpu", "/debug/pprof/profile", Accumulation::Snapshot),
    ("heap", "/debug/pprof/heap", Accumulation::Cumulative),
    ("allocs", "/debug/pprof/allocs", Accumulation::Cumulative),
    (
        "goroutine",
        "/debug/pprof/goroutine",
        Accumulation::Snapshot,
    ),
    ("mutex", "/debug/pprof/mutex", Accumulation::Cumulative),
    ("block", "/debug/pprof/block", Accumulation::Cumulative),
    (
        "threadcreate",
        "/debug/pprof/threadcreate",
        Accumulation::Snapshot,
    ),
];

/// Pulled from targets when `profiles` is left out. Not `allocs`: Go
/// serves the same data as `heap` there (only the default sample type
/// differs), so pulling both would count every allocation twice.
const DEFAULT_PROFILES: [&str; 5] = ["cpu", "heap", "goroutine", "mutex", "block"];

fn go_profile(name: &str) -> Option<(&'static str, Accumulation)> {
    GO_PROFILES
        .iter()
        .find(|(known, ..)| *known == name)
        .map(|(_, path, accumulation)| (*path, *accumulation))
}

/// Why a `profiles` entry cannot be pulled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("{0:?} is not a Go profile type ({known}); give it a path: {{name: {0}, path: /…}}", known = known_names())]
    Unknown(String),
    #[error("path {0:?} must start with /")]
    Path(String),
    #[error("seconds ({seconds}s) must be shorter than collection_interval ({interval}s)")]
    Seconds { seconds: f64, interval: f64 },
}

fn known_names() -> String {
    GO_PROFILES
        .iter()
        .map(|(name, ..)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl RemoteConfig {
    /// The profiles pulled from each target.
    pub fn profile_specs(&self) -> Result<Vec<ProfileSpec>, ProfileError> {
        let entries: Vec<ProfileEntry> = if self.profiles.is_empty() {
            DEFAULT_PROFILES
                .iter()
                .map(|name| ProfileEntry::Name((*name).to_owned()))
                .collect()
        } else {
            self.profiles.clone()
        };
        entries.iter().map(|entry| self.resolve(entry)).collect()
    }

    pub(crate) fn resolve(&self, entry: &ProfileEntry) -> Result<ProfileSpec, ProfileError> {
        let custom = match entry {
            ProfileEntry::Name(name) => CustomProfile {
                name: name.clone(),
                path: None,
                seconds: None,
                delta: None,
            },
            ProfileEntry::Custom(custom) => custom.clone(),
        };
        let known = go_profile(&custom.name);
        let path = match (&custom.path, known) {
            (Some(path), _) => path.clone(),
            (None, Some((path, _))) => path.to_owned(),
            (None, None) => return Err(ProfileError::Unknown(custom.name)),
        };
        if !path.starts_with('/') {
            return Err(ProfileError::Path(path));
        }
        let cumulative =
            known.is_some_and(|(_, accumulation)| accumulation == Accumulation::Cumulative);
        let interval = self.collection_interval.0;
        let seconds = match (custom.seconds, custom.name.as_str()) {
            (Some(seconds), _) => Some(seconds.0),
            (None, "cpu") => Some(
                interval
                    .saturating_sub(std::time::Duration::from_secs(1))
                    .max(std::time::Duration::from_secs(1)),
            ),
            (None, _) => None,
        };
        if let Some(seconds) = seconds.filter(|seconds| *seconds >= interval) {
            return Err(ProfileError::Seconds {
                seconds: seconds.as_secs_f64(),
                interval: interval.as_secs_f64(),
            });
        }
        Ok(ProfileSpec {
            name: custom.name,
            path,
            seconds,
            delta: custom.delta.unwrap_or(self.delta && cumulative),
        })
    }
}

impl Options for RemoteConfig {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.client.endpoint.is_empty()
            && self.targets.iter().all(|group| group.targets.is_empty())
            && self.file_sd_configs.is_empty()
        {
            problems.push(Problem::new(
                "",
                "nothing to scrape: give endpoint (one profile's URL), targets or file_sd_configs",
            ));
        }
        let endpoint = self.client.endpoint.as_str();
        let is_url = endpoint.starts_with("http://") || endpoint.starts_with("https://");
        if !endpoint.is_empty() && !is_url {
            problems.push(Problem::new(
                "endpoint",
                format!(
                    "{:?} must be a profile's full URL, like http://localhost:6060/debug/pprof/heap",
                    self.client.endpoint
                ),
            ));
        }
        if self.collection_interval.0.is_zero() {
            problems.push(Problem::new("collection_interval", "must be more than 0"));
        }
        if !matches!(self.scheme.as_str(), "http" | "https") {
            problems.push(Problem::new(
                "scheme",
                format!("{:?} must be http or https", self.scheme),
            ));
        }
        if self.max_concurrent_scrapes == 0 {
            problems.push(Problem::new(
                "max_concurrent_scrapes",
                "must be more than 0",
            ));
        }
        if self.max_profile_size.0 == 0 {
            problems.push(Problem::new("max_profile_size", "must be more than 0"));
        }
        for (at, group) in self.file_sd_configs.iter().enumerate() {
            if group.files.is_empty() {
                problems.push(Problem::new(
                    format!("file_sd_configs[{at}].files"),
                    "lists no file",
                ));
            }
        }
        if let Err(error) = self.profile_specs() {
            problems.push(Problem::new("profiles", error.to_string()));
        }
        problems
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.client.extension_refs()
    }

    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        vec![&mut self.client]
    }
}
