//! A tansu broker on a loopback port, killed on drop.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{missing_prerequisite, programs, TempDir};

/// Names the tansu binary (the only one tried when set); else
/// `tools/tansu-0.6.0-libsql` or
/// `tools/tansu-0.6.0` in the cache folder (`.ci/run` builds the first),
/// else `tansu` on the PATH.
pub const TANSU_VAR: &str = "PROFBRIDGE_TANSU";
/// The binaries in the cache folder, the one with both storage engines
/// first.
const CACHED_BINARIES: [&str; 2] = ["tools/tansu-0.6.0-libsql", "tools/tansu-0.6.0"];

/// How long a broker may take to answer its first request; it is ready in
/// milliseconds, this only bounds a broken start.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// Tries with a fresh port when another process took the chosen one
/// between choosing it and the broker binding it.
pub(super) const PORT_ATTEMPTS: usize = 5;

/// Where the broker keeps topics, messages and committed offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// In memory (`memory://`, tansu's dynostore engine): ready in
    /// milliseconds and every compression codec, but it loses everything
    /// when stopped and keeps record batches whole, so a consumer cannot
    /// start inside one and the high watermark is wrong for batches of
    /// several records (see the module's documentation).
    Memory,
    /// A SQLite file in the broker's temporary folder (`sqlite://`, the
    /// `libsql` engine): survives [`Broker::stop`] and
    /// [`Broker::restart`] with its topics, messages, committed offsets
    /// and producer ids, and keeps records one by one (fetching from any
    /// offset, a true high watermark). It cannot serve snappy-compressed
    /// batches (it accepts them, then fails every fetch of their
    /// partition). Needs a tansu built with the `libsql` feature.
    Sqlite,
}

/// A tansu broker listening on `127.0.0.1:PORT`.
pub struct Broker {
    program: PathBuf,
    storage: Storage,
    port: u16,
    /// The broker's output, kept for failure messages, and its SQLite
    /// database.
    dir: TempDir,
    child: Option<Child>,
}

impl Broker {
    /// Starts a broker with memory storage on a free loopback port and
    /// waits until it answers Kafka requests. `None` (after a loud note)
    /// without tansu, or a panic when interop is required.
    pub fn start(label: &str) -> Option<Self> {
        Self::start_with(label, Storage::Memory)
    }

    /// [`Broker::start`] with the storage chosen.
    pub fn start_with(label: &str, storage: Storage) -> Option<Self> {
        let program = tansu_program(label, storage)?;
        let mut broker = Self {
            program,
            storage,
            port: 0,
            dir: TempDir::new(&format!("tansu-{label}")),
            child: None,
        };
        for _ in 0..PORT_ATTEMPTS {
            broker.port = free_port();
            match broker.spawn_and_wait() {
                Start::Ready => return Some(broker),
                Start::PortTaken => continue,
            }
        }
        panic!(
            "tansu found no free port in {PORT_ATTEMPTS} attempts; its log:\n{}",
            broker.log()
        );
    }

    /// `127.0.0.1:PORT`, for a client's `bootstrap.servers` / `brokers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the broker (SIGKILL): an outage. Connections are refused
    /// until [`Broker::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the broker again on the same port (stopping it first if it
    /// runs) and waits until it answers. With [`Storage::Sqlite`] it comes
    /// back with everything it had. With [`Storage::Memory`] it comes back
    /// empty: no topics (create them again), no messages, no committed
    /// offsets, no producer ids (an idempotent producer that wrote before
    /// then fails with UNKNOWN_PRODUCER_ID until its messages time out),
    /// and the offsets of a topic created again start at 0.
    pub fn restart(&mut self) {
        self.stop();
        // The port was ours a moment ago; another process taking it in
        // between is possible but rare, and then this fails loudly.
        if let Start::PortTaken = self.spawn_and_wait() {
            panic!(
                "port {} was taken while tansu was stopped; its log:\n{}",
                self.port,
                self.log()
            );
        }
    }

    /// Whether the broker process runs (it may have exited by itself).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Creates `topic` with `partitions` partitions (replication factor
    /// 1), with tansu's own CLI; panics when it fails, as when the topic
    /// exists (after restarting a SQLite broker, say).
    pub fn create_topic(&self, topic: &str, partitions: u32) {
        let output = Command::new(&self.program)
            .args(["topic", "create", "--broker"])
            .arg(format!("tcp://{}", self.bootstrap()))
            .arg("--partitions")
            .arg(partitions.to_string())
            .arg(topic)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program.display()));
        assert!(
            output.status.success(),
            "`tansu topic create {topic}` failed: {}{}\nthe broker's log:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }

    /// What the broker printed so far (every run since it started).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn storage(&self) -> Storage {
        self.storage
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("tansu.log")
    }

    /// Spawns the broker and waits until it says it is ready and answers
    /// an ApiVersions request. tansu does not exit when its port is
    /// taken (a worker thread panics), and what answers on that port is
    /// then another process, perhaps another test's broker: its log tells.
    fn spawn_and_wait(&mut self) -> Start {
        let log_path = self.log_path();
        let log_start = std::fs::metadata(&log_path).map_or(0, |meta| meta.len() as usize);
        let log = open_log(&log_path);
        let listener = format!("tcp://{}", self.bootstrap());
        let child = Command::new(&self.program)
            .arg("broker")
            .args(["--listener-url", &listener])
            .args(["--advertised-listener-url", &listener])
            .args([
                "--storage-engine",
                match self.storage {
                    Storage::Memory => "memory://tansu/",
                    // Relative to the working folder: tansu 0.6.0 joins even
                    // an absolute path to it.
                    Storage::Sqlite => "sqlite://tansu.db",
                },
            ])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program.display()));
        self.child = Some(child);
        await_start(&mut self.child, self.port, &log_path, log_start)
    }
}

pub(super) enum Start {
    Ready,
    PortTaken,
}

/// Waits until the tansu just started as `child` answers on `port`, reading
/// its log at `log_path` from `log_start`: ready, or its port was taken (it
/// is stopped then). Panics when it exits or does not answer in time.
pub(super) fn await_start(
    child: &mut Option<Child>,
    port: u16,
    log_path: &Path,
    log_start: usize,
) -> Start {
    let log = || std::fs::read_to_string(log_path).unwrap_or_default();
    let deadline = Instant::now() + READY_WITHIN;
    while Instant::now() < deadline {
        let output = log().get(log_start..).unwrap_or_default().to_owned();
        let running = child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)));
        if output.contains("AddrInUse") {
            if let Some(mut child) = child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            return Start::PortTaken;
        }
        if !running {
            panic!("tansu exited on start; its log:\n{}", log());
        }
        if output.contains("ready in") && answers_api_versions(port) {
            return Start::Ready;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "tansu on port {port} did not answer within {READY_WITHIN:?}; its log:\n{}",
        log()
    );
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The tansu binary that has the storage engine, or `None` after a loud
/// note (a panic when interop is required).
pub(super) fn tansu_program(label: &str, storage: Storage) -> Option<PathBuf> {
    let engine = match storage {
        Storage::Memory => "dynostore",
        Storage::Sqlite => "libsql",
    };
    let cache = programs::cache_dir();
    let candidates: Vec<PathBuf> = match std::env::var_os(TANSU_VAR) {
        Some(program) => vec![PathBuf::from(program)],
        None => CACHED_BINARIES
            .iter()
            .map(|name| cache.join(name))
            .chain([PathBuf::from("tansu")])
            .collect(),
    };
    let found = candidates.into_iter().find(|program| {
        // `--help` ends with "Storage engines: dynostore, libsql".
        Command::new(program)
            .arg("--help")
            .output()
            .is_ok_and(|out| {
                out.status.success()
                    && String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .any(|line| line.starts_with("Storage engines:") && line.contains(engine))
            })
    });
    if found.is_none() {
        missing_prerequisite(
            &format!(
                "tansu 0.6.0 with the {engine} storage engine, a Kafka-protocol broker \
                 ({TANSU_VAR}, {} in the cache folder, or `tansu` on the PATH; .ci/run \
                 builds it with `cargo install tansu --version 0.6.0 --features \
                 dynostore,libsql`)",
                CACHED_BINARIES.join(" or ")
            ),
            &format!("a Kafka broker for {label}"),
        );
    }
    found
}

pub(super) fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("bind a loopback port")
}

pub(super) fn open_log(path: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Sends ApiVersions v0 and reads an answer without error: the broker
/// serves Kafka requests, not only accepts connections.
fn answers_api_versions(port: u16) -> bool {
    const API_VERSIONS: i16 = 18;
    const CORRELATION_ID: i32 = 0x7072_6f62;
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) else {
        return false;
    };
    let timeout = Some(Duration::from_secs(2));
    if stream.set_read_timeout(timeout).is_err() || stream.set_write_timeout(timeout).is_err() {
        return false;
    }
    let client_id = b"profbridge-testkit";
    let mut body = Vec::new();
    body.extend_from_slice(&API_VERSIONS.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    body.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    body.extend_from_slice(client_id);
    let mut request = (body.len() as i32).to_be_bytes().to_vec();
    request.extend_from_slice(&body);
    if stream.write_all(&request).is_err() {
        return false;
    }
    // Size, correlation id, error code.
    let mut head = [0u8; 10];
    if stream.read_exact(&mut head).is_err() {
        return false;
    }
    let correlation = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let error = i16::from_be_bytes([head[8], head[9]]);
    correlation == CORRELATION_ID && error == 0
}
