//! What the file receiver has done with each file, kept on disk so that a
//! restart neither sends a file again nor retries one that failed. The
//! file is JSON, replaced atomically (written beside, fsynced, renamed).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A version of a file: the same path with another identity is a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct FileIdentity {
    pub size: u64,
    pub mtime_ns: i64,
    pub inode: u64,
    pub device: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Disposition {
    /// Every pipeline took it.
    Sent,
    /// It could not be read or was invalid; it is not read again.
    Failed,
    /// It was there at the first start with `start_at: end`.
    Skipped,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    path: String,
    #[serde(flatten)]
    identity: FileIdentity,
    state: Disposition,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    files: Vec<Entry>,
}

const VERSION: u32 = 1;

/// A checkpoint file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot read checkpoint {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("checkpoint {} is damaged: {error}", path.display())]
    Damaged {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("checkpoint {} has version {version}; this profbridge reads version {VERSION}", path.display())]
    Version { path: PathBuf, version: u32 },
}

pub(super) struct Checkpoint {
    path: PathBuf,
    entries: BTreeMap<String, (FileIdentity, Disposition)>,
    changed: bool,
}

impl Checkpoint {
    /// The checkpoint at `path`, and whether it existed.
    pub fn load(path: &Path) -> Result<(Self, bool), CheckpointError> {
        let mut checkpoint = Self {
            path: path.to_path_buf(),
            entries: BTreeMap::new(),
            changed: false,
        };
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok((checkpoint, false))
            }
            Err(error) => {
                return Err(CheckpointError::Read {
                    path: path.to_path_buf(),
                    error,
                })
            }
        };
        let stored: Stored =
            serde_json::from_slice(&text).map_err(|error| CheckpointError::Damaged {
                path: path.to_path_buf(),
                error,
            })?;
        if stored.version != VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                version: stored.version,
            });
        }
        for entry in stored.files {
            checkpoint
                .entries
                .insert(entry.path, (entry.identity, entry.state));
        }
        Ok((checkpoint, true))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn get(&self, key: &str) -> Option<(FileIdentity, Disposition)> {
        self.entries.get(key).copied()
    }

    pub fn record(&mut self, key: &str, identity: FileIdentity, state: Disposition) {
        self.entries.insert(key.to_owned(), (identity, state));
        self.changed = true;
    }

    pub fn forget(&mut self, key: &str) {
        self.changed |= self.entries.remove(key).is_some();
    }

    /// Forgets the files `keep` says no.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let before = self.entries.len();
        self.entries.retain(|key, _| keep(key));
        self.changed |= self.entries.len() != before;
    }

    /// Writes the checkpoint if it changed since the last save.
    pub fn save(&mut self) -> std::io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        let stored = Stored {
            version: VERSION,
            files: self
                .entries
                .iter()
                .map(|(path, (identity, state))| Entry {
                    path: path.clone(),
                    identity: *identity,
                    state: *state,
                })
                .collect(),
        };
        let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        write_atomically(&self.path, &text)?;
        self.changed = false;
        Ok(())
    }
}

/// Where a new checkpoint is written before it replaces the old one.
pub(super) fn temporary_path(path: &Path) -> PathBuf {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    PathBuf::from(temporary)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let temporary = temporary_path(path);
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    std::fs::File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_checkpoint_loads_back() {
        let dir =
            std::env::temp_dir().join(format!("profbridge-checkpoint-{}", std::process::id()));
        let path = dir.join("state").join("file.checkpoint.json");
        let (mut checkpoint, existed) = Checkpoint::load(&path).unwrap();
        assert!(!existed);
        let identity = FileIdentity {
            size: 10,
            mtime_ns: 1_700_000_000_000_000_000,
            inode: 42,
            device: 7,
        };
        checkpoint.record("/p/a.pb.gz", identity, Disposition::Sent);
        checkpoint.record("/p/b.txt", identity, Disposition::Failed);
        checkpoint.retain(|key| key != "/p/b.txt");
        checkpoint.save().unwrap();
        let (loaded, existed) = Checkpoint::load(&path).unwrap();
        assert!(existed);
        assert_eq!(
            loaded.get("/p/a.pb.gz"),
            Some((identity, Disposition::Sent))
        );
        assert_eq!(loaded.get("/p/b.txt"), None);
        std::fs::write(&path, b"{\"version\": 1, \"files\": [").unwrap();
        assert!(Checkpoint::load(&path)
            .err()
            .unwrap()
            .to_string()
            .contains("is damaged"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
