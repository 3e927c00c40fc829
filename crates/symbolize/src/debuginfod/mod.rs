//! debuginfod servers (`DEBUGINFOD_URLS` style): `/buildid/HEX/executable`
//! and `/buildid/HEX/debuginfo`, kept in an on-disk cache bounded in bytes
//! (oldest files evicted first), with misses remembered for a while so
//! that a file no server has is not asked for again.

mod http;

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::elf::hex;
use crate::error::FileError;

/// How long a request may take, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a file that no server has is not asked for again, by default.
pub const DEFAULT_MISS_TTL: Duration = Duration::from_secs(600);
/// How many bytes the cache folder holds, by default.
pub const DEFAULT_MAX_CACHE_BYTES: u64 = 2 << 30;

/// Where and how files are fetched from debuginfod servers.
#[derive(Debug, Clone)]
pub struct Debuginfod {
    /// Servers, asked in order: `http://host:port[/prefix]`.
    pub urls: Vec<String>,
    /// How long one request to one server may take, from connecting to the
    /// last byte.
    pub timeout: Duration,
    /// Fetched files, `DIR/HEX/executable` and `DIR/HEX/debuginfo`.
    pub cache_dir: PathBuf,
    /// The bytes the cache folder may hold; the oldest files go first.
    pub max_cache_bytes: u64,
    /// How long a file that every server answered 404 for is not asked for.
    pub miss_ttl: Duration,
}

impl Debuginfod {
    /// A configuration with the default timeout, cache bound and miss TTL.
    pub fn new(urls: Vec<String>, cache_dir: PathBuf) -> Self {
        Self {
            urls,
            timeout: DEFAULT_TIMEOUT,
            cache_dir,
            max_cache_bytes: DEFAULT_MAX_CACHE_BYTES,
            miss_ttl: DEFAULT_MISS_TTL,
        }
    }
}

/// Why a request to a server failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0:?} is not an http:// URL")]
    UnsupportedUrl(String),
    #[error("no answer within the timeout")]
    TimedOut,
    #[error("status {0}")]
    Status(u16),
    #[error("the file is larger than the cache ({0} bytes)")]
    TooLarge(u64),
    #[error("a malformed answer: {0}")]
    BadResponse(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Which file of a build id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Executable,
    Debuginfo,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Executable => "executable",
            Kind::Debuginfo => "debuginfo",
        }
    }
}

/// What fetching one file gave.
pub(crate) enum Fetched {
    File(PathBuf),
    /// Every server answered 404, now or within the miss TTL.
    Missing,
    /// A server failed (see the problems) and none had the file.
    Failed,
}

/// The file `kind` of `build_id`, from the cache or else from the servers
/// in order; failures are added to `problems`.
pub(crate) fn fetch(
    config: &Debuginfod,
    build_id: &[u8],
    kind: Kind,
    problems: &mut Vec<FileError>,
) -> Fetched {
    let id = hex(build_id);
    let folder = config.cache_dir.join(&id);
    let cached = folder.join(kind.as_str());
    if cached.is_file() {
        return Fetched::File(cached);
    }
    let miss_marker = folder.join(format!("{}.missing", kind.as_str()));
    let remembered_miss = fs::metadata(&miss_marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|when| SystemTime::now().duration_since(when).ok())
        .is_some_and(|age| age < config.miss_ttl);
    if remembered_miss {
        return Fetched::Missing;
    }
    let mut failed = false;
    for url in &config.urls {
        match fetch_from(config, url, &id, kind, &folder) {
            Ok(Some(path)) => {
                let _ = fs::remove_file(&miss_marker);
                evict(&config.cache_dir, config.max_cache_bytes, &path);
                return Fetched::File(path);
            }
            Ok(None) => {}
            Err(source) => {
                failed = true;
                problems.push(FileError::Debuginfod {
                    url: url.clone(),
                    build_id: id.clone(),
                    source,
                });
            }
        }
    }
    if failed {
        return Fetched::Failed;
    }
    if fs::create_dir_all(&folder).is_ok() {
        let _ = File::create(&miss_marker);
    }
    Fetched::Missing
}

/// The file from one server: `Some(path in the cache)`, or `None` on 404.
fn fetch_from(
    config: &Debuginfod,
    url: &str,
    id: &str,
    kind: Kind,
    folder: &Path,
) -> Result<Option<PathBuf>, FetchError> {
    let server = http::ServerUrl::parse(url)?;
    fs::create_dir_all(folder)?;
    let partial = folder.join(format!(".{}.{}.partial", kind.as_str(), std::process::id()));
    let mut out = BufWriter::new(File::create(&partial)?);
    let answer = http::get(
        &server,
        &format!("/buildid/{id}/{}", kind.as_str()),
        config.timeout,
        config.max_cache_bytes,
        &mut out,
    )
    .and_then(|answer| {
        out.into_inner()
            .map_err(|e| FetchError::Io(e.into_error()))?;
        Ok(answer)
    });
    match answer {
        Ok(http::Answer::Found) => {
            let path = folder.join(kind.as_str());
            fs::rename(&partial, &path)?;
            Ok(Some(path))
        }
        Ok(http::Answer::NotFound) => {
            let _ = fs::remove_file(&partial);
            Ok(None)
        }
        Err(error) => {
            let _ = fs::remove_file(&partial);
            Err(error)
        }
    }
}

/// Removes the oldest files of the cache until it holds at most
/// `max_bytes`, never `keep` (the file just fetched).
fn evict(cache_dir: &Path, max_bytes: u64, keep: &Path) {
    let mut files = Vec::new();
    for folder in fs::read_dir(cache_dir).into_iter().flatten().flatten() {
        for file in fs::read_dir(folder.path()).into_iter().flatten().flatten() {
            let Ok(metadata) = file.metadata() else {
                continue;
            };
            if metadata.is_file() {
                let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                files.push((modified, metadata.len(), file.path()));
            }
        }
    }
    let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
    files.sort_unstable();
    for (_, size, path) in files {
        if total <= max_bytes {
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
        evict(&dir, 200, &paths[2]);
        let left: Vec<bool> = paths.iter().map(|p| p.is_file()).collect();
        assert_eq!(left, [false, true, true]);
        evict(&dir, 50, &paths[2]);
        let left: Vec<bool> = paths.iter().map(|p| p.is_file()).collect();
        assert_eq!(left, [false, false, true]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
