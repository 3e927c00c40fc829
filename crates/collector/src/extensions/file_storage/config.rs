//! `extensions: file_storage:` options, as contrib's filestorage
//! extension has them. The keys that tune its bbolt database are read and
//! ignored: the persistent queue keeps segment files of its own
//! (docs/configuration.md says which and why).

use std::path::Path;

use serde::Deserialize;

use crate::settings::units::Duration;
use crate::settings::{ExtensionRole, Options, Problem};

/// The Collector's default directory outside Windows.
pub const DEFAULT_DIRECTORY: &str = "/var/lib/otelcol/file_storage";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileStorageConfig {
    /// Where each exporter's queue gets a directory of its own.
    pub directory: String,
    /// The Collector's wait for its database's file lock; ignored.
    pub timeout: Duration,
    /// The Collector's fsync after each write; the queue always fsyncs.
    pub fsync: bool,
    /// Create `directory` at start when it is missing.
    pub create_directory: bool,
    /// The mode (octal, minus the umask) of directories it creates.
    pub directory_permissions: String,
    /// The Collector's database compaction; ignored.
    pub compaction: CompactionConfig,
    /// The Collector's recreation of a corrupt database; ignored.
    pub recreate: bool,
}

impl Default for FileStorageConfig {
    fn default() -> Self {
        Self {
            directory: DEFAULT_DIRECTORY.to_owned(),
            timeout: Duration::from_secs(1),
            fsync: false,
            create_directory: false,
            directory_permissions: "0750".to_owned(),
            compaction: CompactionConfig::default(),
            recreate: false,
        }
    }
}

/// `compaction`: read, checked for type, and ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    pub directory: Option<String>,
    pub on_start: bool,
    pub on_rebound: bool,
    pub max_transaction_size: u64,
    pub cleanup_on_start: bool,
    pub rebound_needed_threshold_mib: u64,
    pub rebound_trigger_threshold_mib: u64,
    pub check_interval: Duration,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            directory: None,
            on_start: false,
            on_rebound: false,
            max_transaction_size: 65_536,
            cleanup_on_start: false,
            rebound_needed_threshold_mib: 100,
            rebound_trigger_threshold_mib: 10,
            check_interval: Duration::from_secs(5),
        }
    }
}

impl FileStorageConfig {
    /// The mode of created directories, when `directory_permissions` is
    /// octal permission bits.
    pub fn mode(&self) -> Option<u32> {
        u32::from_str_radix(self.directory_permissions.trim_start_matches("0o"), 8)
            .ok()
            .filter(|mode| *mode <= 0o7777)
    }
}

impl Options for FileStorageConfig {
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.directory.trim().is_empty() {
            problems.push(Problem::new("directory", "is empty; name a directory"));
        } else if !self.create_directory {
            let path = Path::new(&self.directory);
            match std::fs::metadata(path) {
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => problems.push(Problem::new(
                    "directory",
                    format!("{} is not a directory", self.directory),
                )),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    problems.push(Problem::new(
                        "directory",
                        format!(
                            "{} does not exist; create it, or set create_directory: true",
                            self.directory
                        ),
                    ));
                }
                Err(error) => problems.push(Problem::new(
                    "directory",
                    format!("cannot use {}: {error}", self.directory),
                )),
            }
        }
        if self.mode().is_none() {
            problems.push(Problem::new(
                "directory_permissions",
                format!(
                    "{:?} is not octal permission bits, like \"0750\"",
                    self.directory_permissions
                ),
            ));
        }
        problems
    }

    fn roles(&self) -> &'static [ExtensionRole] {
        &[ExtensionRole::Storage]
    }
}
