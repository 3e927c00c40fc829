//! debuginfod servers (`DEBUGINFOD_URLS` style): `/buildid/HEX/executable`
//! and `/buildid/HEX/debuginfo` over HTTP or HTTPS, kept in an on-disk
//! cache bounded in bytes (oldest files evicted first), with misses
//! remembered for a while so that a file no server has is not asked for
//! again.

mod cache;
mod download;

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

use crate::elf::hex;
use crate::error::FileError;

/// How long a whole request may take, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long resolving the name and connecting (TLS included) may take, by
/// default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one read may wait for bytes, by default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a file that no server has is not asked for again, by default.
pub const DEFAULT_MISS_TTL: Duration = Duration::from_secs(600);
/// How many bytes the cache folder holds, by default.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 2 << 30;
/// How long a server that failed is not asked again: a server that hangs
/// costs one timeout per this period, not one per file.
pub const SERVER_BACKOFF: Duration = Duration::from_secs(30);

/// Where and how files are fetched from debuginfod servers.
#[derive(Debug, Clone)]
pub struct Debuginfod {
    /// Servers, asked in order: `http://host:port[/prefix]` or `https://…`.
    pub urls: Vec<String>,
    /// How long one request to one server may take, from resolving its
    /// name to the last byte.
    pub timeout: Duration,
    /// How long resolving the name and connecting (TLS handshake
    /// included) may take, within `timeout`.
    pub connect_timeout: Duration,
    /// How long one read may wait for bytes (the answer's head or the next
    /// part of the body), within `timeout`.
    pub read_timeout: Duration,
    /// Fetched files, `DIR/HEX/executable` and `DIR/HEX/debuginfo`.
    pub cache_dir: PathBuf,
    /// The bytes the cache folder may hold; the oldest files go first. A
    /// larger file is not downloaded.
    pub cache_max_bytes: u64,
    /// How long a file that every server answered 404 for is not asked for.
    pub miss_ttl: Duration,
    /// How long a server that failed is not asked again, and a file it
    /// failed to give is not looked for again ([`SERVER_BACKOFF`]).
    pub rest: Duration,
}

impl Debuginfod {
    /// A configuration with the default timeouts, cache bound and miss TTL.
    pub fn new(urls: Vec<String>, cache_dir: PathBuf) -> Self {
        Self {
            urls,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            cache_dir,
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            miss_ttl: DEFAULT_MISS_TTL,
            rest: SERVER_BACKOFF,
        }
    }
}

/// A server URL that is not `http://` or `https://` with a host.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an http:// or https:// URL with a host")]
pub struct UnsupportedUrl(pub String);

/// The servers of a `DEBUGINFOD_URLS`-style list: URLs separated by
/// spaces, each checked.
pub fn server_urls(list: &str) -> Result<Vec<String>, UnsupportedUrl> {
    list.split_whitespace()
        .map(|url| check_url(url).map(|()| url.to_owned()))
        .collect()
}

fn check_url(url: &str) -> Result<(), UnsupportedUrl> {
    let usable = url.parse::<ureq::http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https"))
            && uri.host().is_some_and(|host| !host.is_empty())
            && uri.query().is_none()
    });
    if usable {
        Ok(())
    } else {
        Err(UnsupportedUrl(url.to_owned()))
    }
}

/// Why a request to a server failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    UnsupportedUrl(#[from] UnsupportedUrl),
    #[error("no answer in time ({0} timeout)")]
    TimedOut(ureq::Timeout),
    #[error("status {0}")]
    Status(u16),
    #[error("the file is larger than the cache ({0} bytes)")]
    TooLarge(u64),
    #[error(transparent)]
    Request(ureq::Error),
    #[error("cannot write into the cache: {0}")]
    Cache(#[source] std::io::Error),
}

impl From<ureq::Error> for FetchError {
    fn from(error: ureq::Error) -> Self {
        match error {
            ureq::Error::Timeout(which) => FetchError::TimedOut(which),
            ureq::Error::BodyExceedsLimit(limit) => FetchError::TooLarge(limit),
            other => FetchError::Request(other),
        }
    }
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
    /// The request's time budget ran out before or while a server was asked.
    OutOfTime,
}

/// The servers of a [`Debuginfod`] configuration, with one HTTP agent
/// (its connection pool and TLS configuration) for all requests, and the
/// servers that failed lately.
pub(crate) struct Client {
    config: Debuginfod,
    agent: ureq::Agent,
    /// When each server that failed may be asked again.
    resting: Mutex<FxHashMap<String, Instant>>,
}

impl Client {
    pub fn new(config: Debuginfod) -> Self {
        let agent = download::agent(&config);
        Self {
            config,
            agent,
            resting: Mutex::new(FxHashMap::default()),
        }
    }

    /// Whether `url` failed less than the rest period ago.
    fn is_resting(&self, url: &str) -> bool {
        let resting = self.resting.lock().unwrap_or_else(PoisonError::into_inner);
        resting
            .get(url)
            .is_some_and(|until| Instant::now() < *until)
    }

    /// How long a server that failed, and a file it failed to give, rest.
    pub fn rest_period(&self) -> Duration {
        self.config.rest
    }

    fn rest(&self, url: &str) {
        let mut resting = self.resting.lock().unwrap_or_else(PoisonError::into_inner);
        resting.insert(url.to_owned(), Instant::now() + self.config.rest);
    }

    /// The file `kind` of `build_id`, from the cache or else from the
    /// servers in order; failures are added to `problems`. A server that
    /// failed is skipped for the rest period (counted as failed, not
    /// reported again), unless the file was too large for the cache.
    ///
    /// A server is given what is left of the time until `deadline` when
    /// that is less than its timeout; running out of that time is the
    /// request's doing, not the server's: neither reported nor rested.
    pub fn fetch(
        &self,
        build_id: &[u8],
        kind: Kind,
        problems: &mut Vec<FileError>,
        deadline: Option<Instant>,
    ) -> Fetched {
        // GNU build ids are 16 or 20 bytes, at most 64 (a SHA-512); a longer
        // one from a client would only make a path and a URL of its size.
        if !(2..=64).contains(&build_id.len()) {
            return Fetched::Missing;
        }
        let id = hex(build_id);
        let cache = cache::Cache::new(&self.config);
        if let Some(path) = cache.file(&id, kind) {
            return Fetched::File(path);
        }
        if cache.remembers_miss(&id, kind) {
            return Fetched::Missing;
        }
        let mut failed = false;
        for url in &self.config.urls {
            if self.is_resting(url) {
                failed = true;
                continue;
            }
            let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
            let timeout = left.map_or(self.config.timeout, |left| left.min(self.config.timeout));
            if timeout.is_zero() {
                return Fetched::OutOfTime;
            }
            let fetched = check_url(url).map_err(FetchError::from).and_then(|()| {
                download::fetch(
                    &self.agent,
                    &download::file_url(url, &id, kind.as_str()),
                    timeout,
                    self.config.cache_max_bytes,
                    &cache.place(&id, kind),
                )
            });
            let cut_short = timeout < self.config.timeout;
            match fetched {
                Err(FetchError::TimedOut(ureq::Timeout::Global)) if cut_short => {
                    return Fetched::OutOfTime
                }
                Ok(Some(path)) => {
                    cache.forget_miss(&id, kind);
                    cache.evict(&path);
                    return Fetched::File(path);
                }
                Ok(None) => {}
                Err(source) => {
                    failed = true;
                    // A refusal of this one file (4xx) says nothing of the
                    // server.
                    let about_the_file = matches!(
                        source,
                        FetchError::TooLarge(_)
                            | FetchError::Cache(_)
                            | FetchError::Status(400..=499)
                    );
                    if !about_the_file {
                        self.rest(url);
                    }
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
        cache.remember_miss(&id, kind);
        Fetched::Missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_split_on_spaces_and_each_url_is_checked() {
        assert_eq!(
            server_urls(" http://127.0.0.1:8002  https://debuginfod.example/mirror/\n").unwrap(),
            [
                "http://127.0.0.1:8002",
                "https://debuginfod.example/mirror/"
            ]
        );
        assert!(server_urls("").unwrap().is_empty());
        for bad in [
            "ftp://d.example",
            "debuginfod.example",
            "http://",
            "http://d?x=1",
        ] {
            assert!(server_urls(bad).is_err(), "{bad}");
        }
    }
}
