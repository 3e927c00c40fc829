//! Retention: removing the oldest files under the exporter's directory.
//!
//! A sweep lists every regular file under the root (never following
//! symbolic links, never leaving the root), oldest first by modification
//! time and then by path, and removes those older than `max_age` and the
//! oldest beyond `max_files`. Directories are left in place, even empty
//! ones, so a concurrent export never loses the directory it just created.
//! Temporary files are skipped unless a crash left them behind long ago.
//!
//! Listing the tree costs one `readdir` per directory, so it does not run
//! after every export: the first export and every
//! [`SWEEP_EVERY_EXPORTS`]-th one sweep, and a sweep already under way is
//! not doubled. Between sweeps the directory may hold up to that many
//! exports' files beyond `max_files`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::config;
use super::write::TEMP_PREFIX;

/// How many exports run between two sweeps.
pub const SWEEP_EVERY_EXPORTS: u64 = 16;

/// A temporary file this old was left by a crash.
const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug)]
pub struct RetentionSweeper {
    root: PathBuf,
    max_files: Option<u64>,
    max_age: Option<Duration>,
    exports: AtomicU64,
    sweeping: Mutex<()>,
}

impl RetentionSweeper {
    pub fn new(root: &Path, retention: &config::Retention) -> Self {
        Self {
            root: root.to_path_buf(),
            max_files: retention.max_files,
            max_age: retention.max_age.map(|age| age.0),
            exports: AtomicU64::new(0),
            sweeping: Mutex::new(()),
        }
    }

    fn is_enabled(&self) -> bool {
        self.max_files.is_some() || self.max_age.is_some()
    }

    /// Counts an export and sweeps when it is time to and no other sweep
    /// is running. A failed sweep is logged: the export itself succeeded.
    pub fn after_export(&self) {
        if !self.is_enabled() {
            return;
        }
        if self.exports.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY_EXPORTS != 0 {
            return;
        }
        let Ok(_sweeping) = self.sweeping.try_lock() else {
            return;
        };
        if let Err(error) = self.sweep_now() {
            tracing::warn!(root = %self.root.display(), %error, "file exporter retention sweep failed");
        }
    }

    /// Sweeps now, waiting for a running sweep to end first; returns how
    /// many files were removed.
    pub fn sweep(&self) -> io::Result<usize> {
        let _sweeping = self.sweeping.lock().unwrap_or_else(PoisonError::into_inner);
        self.sweep_now()
    }

    fn sweep_now(&self) -> io::Result<usize> {
        if !self.is_enabled() {
            return Ok(0);
        }
        let now = SystemTime::now();
        let listing = list_files(&self.root)?;
        let mut doomed = self.oldest_to_remove(listing.files, now);
        doomed.extend(
            listing
                .temp_files
                .into_iter()
                .filter(|(modified, _)| is_older_than(*modified, now, STALE_TEMP_AGE))
                .map(|(_, path)| path),
        );
        Ok(doomed.iter().filter(|path| remove_file(path)).count())
    }

    /// `files` that are too old or too many, oldest first.
    fn oldest_to_remove(
        &self,
        mut files: Vec<(SystemTime, PathBuf)>,
        now: SystemTime,
    ) -> Vec<PathBuf> {
        files.sort();
        let expired = self.max_age.map_or(0, |age| {
            files.partition_point(|(modified, _)| is_older_than(*modified, now, age))
        });
        let beyond_count = self.max_files.map_or(0, |max| {
            files
                .len()
                .saturating_sub(usize::try_from(max).unwrap_or(usize::MAX))
        });
        files.truncate(expired.max(beyond_count));
        files.into_iter().map(|(_, path)| path).collect()
    }
}

fn is_older_than(modified: SystemTime, now: SystemTime, age: Duration) -> bool {
    now.duration_since(modified)
        .is_ok_and(|elapsed| elapsed > age)
}

/// Removes a file; one already gone is not an error, others are logged.
fn remove_file(path: &Path) -> bool {
    match fs::remove_file(path) {
        Ok(()) => true,
        Err(error) if error.kind() == io::ErrorKind::NotFound => false,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "file exporter retention could not remove a file");
            false
        }
    }
}

/// Regular files under a root, with their modification times.
#[derive(Default)]
pub(super) struct Listing {
    pub files: Vec<(SystemTime, PathBuf)>,
    pub temp_files: Vec<(SystemTime, PathBuf)>,
}

/// Walks `root` without following links. Only an unreadable root is an
/// error: entries that vanish or cannot be read meanwhile are skipped.
pub(super) fn list_files(root: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let entries = match fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) if directory == root => return Err(error),
            Err(_) => continue,
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            let is_temp = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
            let list = if is_temp {
                &mut listing.temp_files
            } else {
                &mut listing.files
            };
            list.push((modified, entry.path()));
        }
    }
    Ok(listing)
}
