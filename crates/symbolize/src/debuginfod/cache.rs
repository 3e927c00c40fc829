//! The folder of fetched files, `DIR/HEX/executable` and
//! `DIR/HEX/debuginfo`, bounded in bytes, and the markers
//! `DIR/HEX/KIND.missing` of files no server had.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Debuginfod, Kind};

pub(super) struct Cache<'a> {
    dir: &'a Path,
    max_bytes: u64,
    miss_ttl: Duration,
}

impl<'a> Cache<'a> {
    pub fn new(config: &'a Debuginfod) -> Self {
        Self {
            dir: &config.cache_dir,
            max_bytes: config.cache_max_bytes,
            miss_ttl: config.miss_ttl,
        }
    }

    /// Where the file `kind` of build id `id` is kept.
    pub fn place(&self, id: &str, kind: Kind) -> PathBuf {
        self.dir.join(id).join(kind.as_str())
    }

    /// The file, when it is in the cache.
    pub fn file(&self, id: &str, kind: Kind) -> Option<PathBuf> {
        Some(self.place(id, kind)).filter(|path| path.is_file())
    }

    fn miss_marker(&self, id: &str, kind: Kind) -> PathBuf {
        self.dir.join(id).join(format!("{}.missing", kind.as_str()))
    }

    /// Whether every server answered 404 for the file within the miss TTL.
    pub fn remembers_miss(&self, id: &str, kind: Kind) -> bool {
        fs::metadata(self.miss_marker(id, kind))
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|when| SystemTime::now().duration_since(when).ok())
            .is_some_and(|age| age < self.miss_ttl)
    }

    pub fn remember_miss(&self, id: &str, kind: Kind) {
        if fs::create_dir_all(self.dir.join(id)).is_ok() {
            let _ = File::create(self.miss_marker(id, kind));
        }
    }

    pub fn forget_miss(&self, id: &str, kind: Kind) {
        let _ = fs::remove_file(self.miss_marker(id, kind));
    }

    /// Removes the miss markers past the miss TTL, then the oldest files
    /// until the cache holds at most its bound, never `keep` (the file
    /// just fetched).
    pub fn evict(&self, keep: &Path) {
        let mut files = Vec::new();
        for folder in fs::read_dir(self.dir).into_iter().flatten().flatten() {
            for file in fs::read_dir(folder.path()).into_iter().flatten().flatten() {
                let Ok(metadata) = file.metadata() else {
                    continue;
                };
                if !metadata.is_file() {
                    continue;
                }
                let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let expired = SystemTime::now()
                    .duration_since(modified)
                    .is_ok_and(|age| age >= self.miss_ttl);
                if expired && file.file_name().to_string_lossy().ends_with(".missing") {
                    let _ = fs::remove_file(file.path());
                    let _ = fs::remove_dir(folder.path());
                    continue;
                }
                files.push((modified, metadata.len(), file.path()));
            }
        }
        let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
        files.sort_unstable();
        for (_, size, path) in files {
            if total <= self.max_bytes {
                break;
            }
            if path != keep && fs::remove_file(&path).is_ok() {
                total -= size;
                if let Some(folder) = path.parent() {
                    let _ = fs::remove_dir(folder);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_files_are_evicted_first() {
        let dir = std::env::temp_dir().join(format!("profbridge-evict-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut paths = Vec::new();
        for (index, id) in ["aa", "bb", "cc"].into_iter().enumerate() {
            let folder = dir.join(id);
            fs::create_dir_all(&folder).unwrap();
            let path = folder.join("executable");
            fs::write(&path, [0u8; 100]).unwrap();
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + index as u64);
            File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
            paths.push(path);
        }
        let mut config = Debuginfod::new(Vec::new(), dir.clone());
        config.cache_max_bytes = 200;
        Cache::new(&config).evict(&paths[2]);
        let left: Vec<bool> = paths.iter().map(|p| p.is_file()).collect();
        assert_eq!(left, [false, true, true]);
        config.cache_max_bytes = 50;
        Cache::new(&config).evict(&paths[2]);
        let left: Vec<bool> = paths.iter().map(|p| p.is_file()).collect();
        assert_eq!(left, [false, false, true]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn expired_miss_markers_and_their_folders_go_at_the_next_eviction() {
        let dir = std::env::temp_dir().join(format!("profbridge-misses-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let config = Debuginfod::new(Vec::new(), dir.clone());
        let cache = Cache::new(&config);
        cache.remember_miss("aa", Kind::Executable);
        cache.remember_miss("bb", Kind::Executable);
        let old = SystemTime::now() - config.miss_ttl - Duration::from_secs(1);
        File::options()
            .write(true)
            .open(cache.miss_marker("aa", Kind::Executable))
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(!cache.remembers_miss("aa", Kind::Executable));
        cache.evict(&dir.join("none"));
        assert!(!dir.join("aa").exists());
        assert!(cache.remembers_miss("bb", Kind::Executable));
        fs::remove_dir_all(&dir).unwrap();
    }
}
