//! A real Go program to scrape: it serves `net/http/pprof` on loopback and
//! works (allocates, contends a mutex, blocks on a channel, burns CPU) in
//! named functions only when a test asks, each request answering once the
//! work is done and visible in the profiles. Between two scrapes, a test
//! knows exactly what the program did. Its source is `go/pprof_target.go`,
//! which says what each function does and why the profiles count it
//! exactly; [`crate::pprof_oracle`] reads the scrapes with `go tool pprof`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// The program's source: `package main`, standard library only.
pub const SOURCE: &str = include_str!("../go/pprof_target.go");

/// The function that [`PprofTarget::alloc`] allocates in.
pub const ALLOCATE: &str = "main.allocateForTest";
/// The function that [`PprofTarget::retain`] allocates in.
pub const RETAIN: &str = "main.retainForTest";
/// The function whose unlocks [`PprofTarget::contend`] makes contended
/// (the mutex profile counts on the unlocker's stack).
pub const CONTEND: &str = "main.contendForTest";
/// The goroutine that sleeps in `sync.Mutex.Lock` for
/// [`PprofTarget::contend`] (the block profile counts on its stack).
pub const LOCK_WAITER: &str = "main.lockWaiter";
/// The function that [`PprofTarget::block`] blocks in.
pub const BLOCK: &str = "main.blockForTest";
/// The function that [`PprofTarget::burn`] burns CPU in.
pub const BURN: &str = "main.burnForTest";

/// The size of each block [`PprofTarget::retain`] keeps: a size class of
/// its own, so retained bytes are exact.
pub const RETAINED_BLOCK_BYTES: u64 = 64;

const PURPOSE: &str = "the Go net/http/pprof target of the scrape tests";

/// A running Go program serving `net/http/pprof`, killed on drop.
pub struct PprofTarget {
    program: PathBuf,
    address: SocketAddr,
    running: Option<Running>,
}

struct Running {
    child: Child,
    // Kept open: a Go program that writes to a closed stdout dies of
    // SIGPIPE (it writes nothing after the address, but a crash report
    // must not be cut short by that).
    _stdout: BufReader<ChildStdout>,
}

impl PprofTarget {
    /// Builds the program (once, cached like the other helper programs)
    /// and starts it on `address`, a loopback address whose port may be 0.
    /// Without Go, skips loudly (`None`), or panics when interop is
    /// required.
    pub fn start(address: SocketAddr) -> Option<Self> {
        assert!(
            address.ip().is_loopback(),
            "the pprof target serves on loopback only, not {address}"
        );
        crate::require_tool("go", &["version"], PURPOSE)?;
        let program = crate::go::build_once("pprof-target", SOURCE)
            .unwrap_or_else(|failed| panic!("building the pprof target: {failed}"));
        let (running, address) = spawn(&program, address);
        Some(Self {
            program,
            address,
            running: Some(running),
        })
    }

    /// Where it serves (the bound port, when it was started on port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://ADDRESS` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(|running| running.child.id())
    }

    /// `n` allocations of `size` bytes (at least 1) in [`ALLOCATE`], all
    /// dropped at once. Every allocation is counted (alloc_objects grows by
    /// exactly `n`); alloc_space grows by `n` times `size` rounded up to
    /// Go's size class (64 stays 64, 100 counts as 112); once this returns
    /// the objects are freed and their frees published, so [`ALLOCATE`]'s
    /// inuse values are back to 0.
    pub fn alloc(&self, n: u64, size: u64) {
        self.work(&format!("/work/alloc?n={n}&size={size}"));
    }

    /// `n` blocks of [`RETAINED_BLOCK_BYTES`] allocated in [`RETAIN`] and
    /// kept until the program ends: its inuse_objects and alloc_objects
    /// both grow by exactly `n`.
    pub fn retain(&self, n: u64) {
        self.work(&format!("/work/retain?n={n}"));
    }

    /// `n` contended unlocks in [`CONTEND`]: the mutex profile's
    /// contentions for it grow by exactly `n`, and the block profile's for
    /// [`LOCK_WAITER`] too; the delays, by some positive amount.
    pub fn contend(&self, n: u64) {
        self.work(&format!("/work/mutex?n={n}"));
    }

    /// `n` channel receives that sleep, in [`BLOCK`]: the block profile's
    /// contentions for it grow by exactly `n`; the delay, by some positive
    /// amount.
    pub fn block(&self, n: u64) {
        self.work(&format!("/work/block?n={n}"));
    }

    /// Burns one CPU for `duration` (whole milliseconds, at least 1) in
    /// [`BURN`].
    pub fn burn(&self, duration: Duration) {
        let ms = duration.as_millis();
        assert!(ms >= 1, "burn at least a millisecond, not {duration:?}");
        self.work(&format!("/work/cpu?ms={ms}"));
    }

    fn work(&self, path: &str) {
        let (status, body) = self
            .request("POST", path)
            .unwrap_or_else(|e| panic!("POST {}: {e}", self.url(path)));
        assert_eq!(
            status,
            200,
            "POST {}: {}",
            self.url(path),
            String::from_utf8_lossy(&body)
        );
    }

    /// The body of a GET of `path` (e.g. `/debug/pprof/allocs` or
    /// `/debug/pprof/profile?seconds=1`), which must answer 200: the raw
    /// bytes that [`crate::pprof_oracle`] reads.
    pub fn scrape(&self, path: &str) -> Vec<u8> {
        let (status, body) = self
            .get(path)
            .unwrap_or_else(|e| panic!("GET {}: {e}", self.url(path)));
        assert_eq!(
            status,
            200,
            "GET {}: {}",
            self.url(path),
            String::from_utf8_lossy(&body)
        );
        body
    }

    /// A GET of `path`: the status and the body, or why there was no
    /// answer (connection refused once killed).
    pub fn get(&self, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
        self.request("GET", path)
    }

    /// An HTTP/1.0 request (so the body ends where the connection does).
    fn request(&self, method: &str, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
        let mut stream = TcpStream::connect(self.address)?;
        // The longest request is a CPU profile of a few seconds.
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            self.address
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let invalid = |what: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{what}: {:?}", String::from_utf8_lossy(&answer)),
            )
        };
        let head_end = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| invalid("no end of the head"))?;
        let status = std::str::from_utf8(&answer[..head_end])
            .ok()
            .and_then(|head| head.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid("no status"))?;
        Ok((status, answer[head_end + 4..].to_vec()))
    }

    /// Kills the program (SIGKILL) and waits for it: its port is free and
    /// everything its profiles had counted is gone.
    pub fn kill(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }

    /// Kills the program if it runs and starts it again on the same
    /// address, with empty profiles.
    pub fn restart_on_same_port(&mut self) {
        self.kill();
        let (running, address) = spawn(&self.program, self.address);
        assert_eq!(address, self.address, "restarted on another address");
        self.running = Some(running);
    }
}

impl Drop for PprofTarget {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the program on `address`; it and the address it bound.
fn spawn(program: &PathBuf, address: SocketAddr) -> (Running, SocketAddr) {
    let mut child = Command::new(program)
        .arg("-listen")
        .arg(address.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("read the pprof target's address");
    let bound = line.trim().parse().unwrap_or_else(|_| {
        let status = child.wait().expect("wait for the pprof target");
        panic!(
            "the pprof target did not print its address on {address} (it printed {line:?}, \
             then {status}; its error is above)"
        )
    });
    (
        Running {
            child,
            _stdout: stdout,
        },
        bound,
    )
}
