#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test-only code: failing loudly is its job.

//! Helpers shared by profbridge's tests: where the corpus is, whether an
//! interop tool is present (and whether its absence is fatal), a seeded
//! random source, generated legacy profiles for benchmarks, proptest
//! strategies for OTLP requests, Go and C helper programs built once, a Go
//! program serving `net/http/pprof` to scrape with `go tool pprof` as the
//! oracle, Java Flight Recorder recordings of a Java workload with the
//! JDK's `jfr` as their oracle, a Kafka-protocol broker with Python's
//! confluent-kafka on its other side, and sweeps that run whole or as a
//! seeded sample.

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod c;
pub mod debuginfod;
mod ebpf;
pub mod ebpf_profiler;
pub mod go;
mod gperftools;
pub mod jdk;
pub mod jfr_writer;
pub mod kafka;
pub mod kernel;
pub mod native;
pub mod otlp_strategies;
pub mod pprof_oracle;
pub mod pprof_target;
mod producers;
pub mod programs;
pub mod schema;
pub mod sweep;

pub use ebpf::{
    ebpf_like_request, ebpf_profiler_request, generated_request, profiler_like_request, StackShape,
};
pub use gperftools::{gperftools_cpu_profile, GPERFTOOLS_PERIOD_US};
pub use producers::{
    async_profiler_otlp, async_profiler_recording, pdata_encode, AsyncProfilerRecording,
    AsyncProfilerTrace,
};

/// Set to 1 (as `.ci/run` does) to make a missing interop tool a failure.
pub const REQUIRE_INTEROP_VAR: &str = "PROFBRIDGE_REQUIRE_INTEROP";
/// Overrides where the corpus is; the default is `../shared/corpus`.
pub const CORPUS_VAR: &str = "PROFBRIDGE_CORPUS";

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The corpus folder, or `None` after saying loudly on stderr why not.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(CORPUS_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/corpus"));
    if dir.join("pprof").is_dir() {
        Some(dir)
    } else {
        say_loudly(&format!(
            "SKIPPED: no corpus at {} (set {CORPUS_VAR} to google/pprof's test profiles)",
            dir.display()
        ));
        None
    }
}

/// Writes to stderr directly: the test harness captures `eprintln!` of
/// passing tests, and a skip must be seen.
fn say_loudly(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** {message} ***\n");
}

/// A file of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusFile {
    pub name: String,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl CorpusFile {
    /// What google/pprof's `Profile.String()` prints for this file, if known.
    pub fn expected_string(&self) -> Option<String> {
        std::fs::read_to_string(self.path.with_file_name(format!("{}.string", self.name))).ok()
    }

    pub fn is_gzip(&self) -> bool {
        self.bytes.starts_with(&[0x1f, 0x8b])
    }
}

/// Every profile in the corpus's pprof folder (not the `.string` files),
/// sorted by name. Empty, after a loud note, when the corpus is absent.
pub fn corpus_files() -> Vec<CorpusFile> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    let mut files: Vec<CorpusFile> = std::fs::read_dir(dir.join("pprof"))
        .expect("corpus folder is readable")
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.extension().is_none_or(|ext| ext != "string"))
        .map(|path| CorpusFile {
            name: path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned(),
            bytes: std::fs::read(&path).expect("corpus file is readable"),
            path,
        })
        .collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!files.is_empty(), "the corpus folder has no profiles");
    files
}

/// One named corpus file, or `None` when the corpus is absent.
pub fn corpus_file(name: &str) -> Option<CorpusFile> {
    let dir = corpus_dir()?;
    let path = dir.join("pprof").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(CorpusFile {
        name: name.to_owned(),
        path,
        bytes,
    })
}

/// Whether interop tools must be present (`PROFBRIDGE_REQUIRE_INTEROP=1`).
pub fn interop_required() -> bool {
    std::env::var(REQUIRE_INTEROP_VAR).is_ok_and(|v| v == "1")
}

/// Finds an external tool by running `probe` (e.g. `go version`). When it is
/// missing, skips loudly, or panics when interop is required.
pub fn require_tool(program: &str, probe_args: &[&str], purpose: &str) -> Option<PathBuf> {
    let works = Command::new(program)
        .args(probe_args)
        .output()
        .is_ok_and(|out| out.status.success());
    if works {
        return Some(PathBuf::from(program));
    }
    missing_prerequisite(&format!("`{program}`"), purpose);
    None
}

/// The files below `dir`, in every folder, whose names end with
/// `suffix`, sorted.
pub fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Names the venv's Python.
pub const PYTHON_VAR: &str = "PROFBRIDGE_PYTHON";

/// The Python of the interop tests' virtual environment that can import
/// `module` (from the PyPI package `package`): `PROFBRIDGE_PYTHON`, or
/// `venv/bin/python` in the cache folder, where `.ci/run` makes it. When
/// there is none, skips loudly, or panics when interop is required.
pub fn venv_python(module: &str, package: &str, purpose: &str) -> Option<PathBuf> {
    let python = std::env::var_os(PYTHON_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| programs::cache_dir().join("venv/bin/python"));
    let works = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|out| out.status.success());
    if works {
        return Some(python);
    }
    missing_prerequisite(
        &format!(
            "a Python with {package} ({PYTHON_VAR}, or the venv under the cache folder, \
             which .ci/run creates)"
        ),
        purpose,
    );
    None
}

/// Reports a missing prerequisite that [`require_tool`] cannot probe by
/// running it, such as a library (`what` names it and the package that
/// provides it): skips loudly, or panics when interop is required.
pub fn missing_prerequisite(what: &str, purpose: &str) {
    let message = format!("{what} is not available; it is needed for {purpose}");
    if interop_required() {
        panic!("{message} and {REQUIRE_INTEROP_VAR}=1");
    }
    say_loudly(&format!(
        "SKIPPED: {message}. Install it, or set {REQUIRE_INTEROP_VAR}=1 to fail instead."
    ));
}

/// A temporary folder removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "profbridge-{label}-{}-{}",
            std::process::id(),
            SeededRng::from_time().next_u64()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// splitmix64: small, fast, and the same sequence for the same seed.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn from_time() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self(nanos)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// A copy of `data` with 1 to 8 random edits: flipped bits, random bytes,
    /// inserted or deleted bytes.
    pub fn mutate(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = data.to_vec();
        for _ in 0..=self.below(8) {
            let at = self.below(out.len().max(1));
            match self.below(4) {
                0 if !out.is_empty() => out[at] ^= 1 << self.below(8),
                1 if !out.is_empty() => out[at] = self.next_u64() as u8,
                2 => out.insert(at.min(out.len()), self.next_u64() as u8),
                _ if !out.is_empty() => {
                    out.remove(at);
                }
                _ => {}
            }
        }
        out
    }
}

/// A tmpfs of a few MiB mounted for one test, for what happens when a disk
/// is full; unmounted on drop.
pub struct SmallDisk {
    mount: TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `bytes` (rounded up to pages). Mounting needs
    /// root: elsewhere this skips loudly, or panics when interop is
    /// required.
    pub fn mount(label: &str, bytes: u64, purpose: &str) -> Option<Self> {
        let mount = TempDir::new(label);
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(mount.path())
            .output()
            .is_ok_and(|out| out.status.success());
        if !mounted {
            missing_prerequisite("mounting a tmpfs (root is needed)", purpose);
            return None;
        }
        Some(Self { mount })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }

    /// Fills what is free with one file, returned so that the test can
    /// remove it to make room again.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let taken = std::fs::read_dir(self.path()).map_or(0, Iterator::count);
        let path = self.path().join(format!("filler-{taken}"));
        let mut file = std::fs::File::create(&path).expect("create the filler");
        let block = vec![0u8; 64 << 10];
        while file.write_all(&block).is_ok() {}
        // What did not fit in a block, a byte at a time.
        while file.write_all(&[0]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: files a failed test left open (an exporter's queue, say)
        // would otherwise keep it mounted.
        let _ = Command::new("umount")
            .arg("--lazy")
            .arg(self.mount.path())
            .status();
    }
}
