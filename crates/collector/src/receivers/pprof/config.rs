//! `receivers: pprof:` in the shape of the OpenTelemetry Collector's pprof
//! receiver: four sources, each optional, each running only when written:
//! `server` (profiles pushed to `POST /v1/pprof`), `remote` (pulled over
//! HTTP), `file` (read from files) and `self` (profbridge's own). The
//! push server's keys written beside the receiver's own, as before these
//! sources, still work, with a deprecation warning.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::remote::config::RemoteConfig;
use crate::receivers::watched_files::settings::{
    default_checkpoint, pattern_problems, AfterSuccess, InputFormat, ServiceNameFrom, StartAt,
    WatchSettings,
};
use crate::settings::server::{HttpListener, ListenerCap};
use crate::settings::units::Duration;
use crate::settings::{deserialize_embedding, options_key_paths};
use crate::settings::{ExtensionRef, NestedSection, Options, OwnedFile, Problem};

/// Where the push server listens when nothing says otherwise.
const DEFAULT_ENDPOINT: &str = "127.0.0.1:4041";
/// The path profiles are pushed to (the Collector's).
const DEFAULT_PATH: &str = "/v1/pprof";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PprofReceiverConfig {
    pub server: Option<ServerSource>,
    pub remote: Option<RemoteConfig>,
    pub file: Option<FileSource>,
    #[serde(rename = "self")]
    pub own: Option<SelfSource>,
    /// Deprecated: `server.path`, written beside the sources.
    pub path: String,
    /// Deprecated: `server`'s listener keys, written beside the sources.
    #[serde(skip)]
    pub listener: HttpListener,
}

impl Default for PprofReceiverConfig {
    fn default() -> Self {
        Self {
            server: None,
            remote: None,
            file: None,
            own: None,
            path: DEFAULT_PATH.to_owned(),
            listener: HttpListener::at(DEFAULT_ENDPOINT),
        }
    }
}

/// `server:` — pprof and legacy profiles POSTed over HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSource {
    /// The path profiles are POSTed to.
    pub path: String,
    /// `endpoint` (127.0.0.1:4041 by default), `max_request_body_size`
    /// (as sent, after Content-Encoding, and a gzipped profile after
    /// gunzip), `read_timeout`, `tls`, `auth`, `read_header_timeout`,
    /// `idle_timeout` and `max_connections`, beside `path`.
    #[serde(skip)]
    pub listener: HttpListener,
}

impl Default for ServerSource {
    fn default() -> Self {
        Self {
            path: DEFAULT_PATH.to_owned(),
            listener: HttpListener::at(DEFAULT_ENDPOINT),
        }
    }
}

impl Options for ServerSource {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if !self.path.starts_with('/') {
            problems.push(Problem::new(
                "path",
                format!("{:?} must start with /, like /v1/pprof", self.path),
            ));
        }
        problems.extend(self.listener.problems());
        problems
    }

    fn http_listener(&self) -> Option<&HttpListener> {
        Some(&self.listener)
    }

    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        Some(&mut self.listener)
    }
}

/// `file:` — profiles read from the files a glob matches, each once per
/// change, by the file receiver's engine.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileSource {
    /// A glob pattern (the Collector's); a list of them is taken too.
    pub include: Patterns,
    pub collection_interval: Duration,
    pub initial_delay: Duration,
    /// profbridge's: where what was delivered is recorded; default
    /// `./profbridge-state/ID.checkpoint.json`, as the file receiver's.
    pub checkpoint: Option<String>,
}

impl Default for FileSource {
    fn default() -> Self {
        Self {
            include: Patterns::One(String::new()),
            collection_interval: Duration::from_secs(10),
            initial_delay: Duration::from_secs(1),
            checkpoint: None,
        }
    }
}

impl FileSource {
    /// The checkpoint file of the pprof receiver with id `id`.
    pub fn checkpoint_path(&self, id: &str) -> PathBuf {
        self.checkpoint
            .as_ref()
            .map_or_else(|| default_checkpoint(id), PathBuf::from)
    }

    /// The file receiver's engine as this source runs it: every file in
    /// any format profbridge reads, kept where it is after delivery.
    pub fn watch_settings(&self, id: &str) -> WatchSettings {
        WatchSettings {
            include: self.include.to_vec(),
            exclude: Vec::new(),
            poll_interval: self.collection_interval.0,
            initial_delay: self.initial_delay.0,
            start_at: StartAt::Beginning,
            checkpoint: self.checkpoint_path(id),
            after_success: AfterSuccess::Keep,
            move_to: None,
            failed_dir: None,
            format: InputFormat::Auto,
            resource_attributes: BTreeMap::new(),
            service_name_from: ServiceNameFrom::None,
        }
    }

    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.include.to_vec().is_empty() {
            problems.push(Problem::new(
                "include",
                "names no file; give a glob pattern",
            ));
        }
        problems.extend(match &self.include {
            Patterns::One(pattern) => pattern_problems("include", std::slice::from_ref(pattern))
                .into_iter()
                .map(|problem| Problem::new("include", problem.message))
                .collect(),
            Patterns::Many(patterns) => pattern_problems("include", patterns),
        });
        if self.collection_interval.0.is_zero() {
            problems.push(Problem::new("collection_interval", "must be more than 0"));
        }
        if self
            .checkpoint
            .as_deref()
            .is_some_and(|path| path.trim().is_empty())
        {
            problems.push(Problem::new(
                "checkpoint",
                "is empty; name a path or leave the key out",
            ));
        }
        problems
    }
}

/// One glob pattern or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    One(String),
    Many(Vec<String>),
}

impl Patterns {
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Self::One(pattern) if pattern.is_empty() => Vec::new(),
            Self::One(pattern) => vec![pattern.clone()],
            Self::Many(patterns) => patterns.clone(),
        }
    }
}

/// `self:` — profbridge's own CPU profile, sent every interval.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfSource {
    pub collection_interval: Duration,
    pub initial_delay: Duration,
    /// The Collector's Go runtime settings: taken, without effect here.
    pub block_profile_fraction: Option<i64>,
    pub mutex_profile_fraction: Option<i64>,
}

impl Default for SelfSource {
    fn default() -> Self {
        Self {
            collection_interval: Duration::from_secs(10),
            initial_delay: Duration::from_secs(1),
            block_profile_fraction: None,
            mutex_profile_fraction: None,
        }
    }
}

impl PprofReceiverConfig {
    /// The push server, if it runs: `server:`, or the keys beside the
    /// sources when no source is written.
    pub fn push_server(&self) -> Option<(&HttpListener, &str)> {
        match &self.server {
            Some(server) => Some((&server.listener, server.path.as_str())),
            None if !self.any_source() => Some((&self.listener, self.path.as_str())),
            None => None,
        }
    }

    fn any_source(&self) -> bool {
        self.server.is_some() || self.remote.is_some() || self.file.is_some() || self.own.is_some()
    }

    /// Whether the deprecated keys beside the sources were written (told
    /// by a value other than their default).
    fn flat_keys_written(&self) -> bool {
        self.path != DEFAULT_PATH || self.listener != HttpListener::at(DEFAULT_ENDPOINT)
    }

    /// Key paths of the push server's settings, under the receiver.
    fn server_prefix(&self) -> &'static str {
        if self.server.is_some() {
            "server"
        } else {
            ""
        }
    }
}

impl Options for PprofReceiverConfig {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.any_source() && self.flat_keys_written() {
            problems.push(Problem::new(
                "",
                "the push server's keys (endpoint, path, …) are written beside server:, remote:, file: or self:; move them under server:",
            ));
        }
        if let Some(server) = &self.server {
            problems.extend(prefixed("server", server.problems()));
        } else if !self.any_source() {
            let flat = ServerSource {
                path: self.path.clone(),
                listener: self.listener.clone(),
            };
            problems.extend(flat.problems());
        }
        if let Some(remote) = &self.remote {
            problems.extend(prefixed("remote", remote.problems()));
        }
        if let Some(file) = &self.file {
            problems.extend(prefixed("file", file.problems()));
        }
        if let Some(own) = &self.own {
            if own.collection_interval.0.is_zero() {
                problems.push(Problem::new(
                    "self.collection_interval",
                    "must be more than 0",
                ));
            }
        }
        problems
    }

    fn warnings(&self) -> Vec<Problem> {
        let mut warnings = Vec::new();
        if !self.any_source() && self.flat_keys_written() {
            warnings.push(Problem::new(
                "",
                "the push server's keys beside pprof's own are deprecated: write them under server: (docs/receivers.md, \"pprof\")",
            ));
        }
        if let Some(own) = &self.own {
            if own.block_profile_fraction.is_some() || own.mutex_profile_fraction.is_some() {
                warnings.push(Problem::new(
                    "self",
                    "block_profile_fraction and mutex_profile_fraction set Go's runtime; profbridge samples CPU only and ignores them",
                ));
            }
        }
        warnings
    }

    fn listeners(&self) -> Vec<(String, String)> {
        self.push_server()
            .map(|(listener, _)| {
                (
                    under(self.server_prefix(), "endpoint"),
                    listener.server.endpoint.clone(),
                )
            })
            .into_iter()
            .collect()
    }

    fn connection_caps(&self) -> Vec<ListenerCap> {
        self.push_server()
            .map(|(listener, _)| {
                ListenerCap::at(self.server_prefix(), listener.connection.max_connections)
            })
            .into_iter()
            .collect()
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        let server = self
            .push_server()
            .and_then(|(listener, _)| listener.server.extension_ref(self.server_prefix()));
        let remote = self.remote.iter().flat_map(|remote| {
            remote
                .extension_refs()
                .into_iter()
                .map(|reference| ExtensionRef {
                    key: under("remote", &reference.key),
                    ..reference
                })
        });
        server.into_iter().chain(remote).collect()
    }

    fn owned_file(&self, id: &str) -> Option<OwnedFile> {
        Some(OwnedFile {
            key: "file.checkpoint",
            path: self.file.as_ref()?.checkpoint_path(id),
            owner: "pprof receiver's file source",
        })
    }

    fn http_listener(&self) -> Option<&HttpListener> {
        Some(&self.listener)
    }

    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        Some(&mut self.listener)
    }

    fn nested_sections() -> Vec<NestedSection<Self>> {
        vec![
            NestedSection {
                path: &["server"],
                fill: |options, value, path| {
                    options.server = Some(deserialize_embedding(value, path)?);
                    Ok(())
                },
                key_paths: options_key_paths::<ServerSource>,
            },
            NestedSection {
                path: &["remote"],
                fill: |options, value, path| {
                    options.remote = Some(deserialize_embedding(value, path)?);
                    Ok(())
                },
                key_paths: options_key_paths::<RemoteConfig>,
            },
        ]
    }
}

/// `problems` with their paths under `prefix`.
fn prefixed(prefix: &str, problems: Vec<Problem>) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|problem| Problem::new(under(prefix, &problem.path), problem.message))
        .collect()
}

/// `path` under `prefix`, either of which may be empty.
fn under(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (_, true) => prefix.to_owned(),
        _ => format!("{prefix}.{path}"),
    }
}
