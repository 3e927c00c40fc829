//! Runs `profbridge serve` for a test: writes its configuration, reads the
//! addresses it prints, and kills it if the test ends early, so that no
//! collector outlives its test. Each test binary uses part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};

use profbridge_testkit::TempDir;

pub struct Collector {
    child: Option<Child>,
    pub grpc: Option<SocketAddr>,
    pub http: Option<SocketAddr>,
    pub telemetry: Option<SocketAddr>,
    /// Every `WHAT listening on ADDRESS` line, as (WHAT, ADDRESS).
    pub listening: Vec<(String, SocketAddr)>,
    /// `{data}` in the configuration: a folder for file exporters.
    pub data: PathBuf,
    dir: Option<TempDir>,
}

impl Collector {
    /// Starts the collector on `config`, in which `{data}` stands for a
    /// fresh data folder; returns once it prints `ready`.
    pub fn start(label: &str, config: &str) -> Self {
        let dir = TempDir::new(label);
        let data = dir.path().join("data");
        let path = dir.path().join("profbridge.yaml");
        std::fs::write(&path, config.replace("{data}", data.to_str().unwrap())).unwrap();
        Self::launch(dir)
    }

    /// Starts the collector again in the folder of one that was stopped
    /// ([`Self::kill`]): the same configuration and data folder.
    pub fn restart(dir: TempDir) -> Self {
        Self::launch(dir)
    }

    /// [`Self::start`], with the collector's log (stderr) going to a file
    /// that [`Self::log`] reads.
    pub fn start_logged(label: &str, config: &str) -> Self {
        let dir = TempDir::new(label);
        let data = dir.path().join("data");
        let path = dir.path().join("profbridge.yaml");
        std::fs::write(&path, config.replace("{data}", data.to_str().unwrap())).unwrap();
        Self::spawn(dir, true)
    }

    /// [`Self::restart`] for a collector started with [`Self::start_logged`];
    /// the log goes on in the same file.
    pub fn restart_logged(dir: TempDir) -> Self {
        Self::spawn(dir, true)
    }

    /// What the collector logged so far, when started with
    /// [`Self::start_logged`].
    pub fn log(&self) -> String {
        let dir = self.dir.as_ref().unwrap();
        std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// The address printed on the `… listening on ADDRESS` line whose
    /// description contains `what`.
    pub fn address(&self, what: &str) -> SocketAddr {
        self.listening
            .iter()
            .find(|(description, _)| description.contains(what))
            .map(|(_, address)| *address)
            .unwrap_or_else(|| panic!("nothing listens as {what:?}: {:?}", self.listening))
    }

    /// Runs `serve` on `dir/profbridge.yaml`; returns once it is ready.
    fn launch(dir: TempDir) -> Self {
        Self::spawn(dir, false)
    }

    /// [`Self::start`] under a limit of `open_files` file descriptors
    /// (RLIMIT_NOFILE, set by util-linux's `prlimit`, which then execs
    /// the collector: the process keeps its id).
    pub fn start_with_open_files(label: &str, config: &str, open_files: u64) -> Self {
        let dir = TempDir::new(label);
        let data = dir.path().join("data");
        let path = dir.path().join("profbridge.yaml");
        std::fs::write(&path, config.replace("{data}", data.to_str().unwrap())).unwrap();
        Self::spawn_with(dir, false, Some((open_files, open_files)))
    }

    /// [`Self::start_logged`] under a soft and a hard limit of file
    /// descriptors, as `prlimit --nofile=SOFT:HARD` sets them.
    pub fn start_logged_with_open_files(label: &str, config: &str, soft: u64, hard: u64) -> Self {
        let dir = TempDir::new(label);
        let data = dir.path().join("data");
        let path = dir.path().join("profbridge.yaml");
        std::fs::write(&path, config.replace("{data}", data.to_str().unwrap())).unwrap();
        Self::spawn_with(dir, true, Some((soft, hard)))
    }

    /// The collector's process id, for /proc/PID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn spawn(dir: TempDir, log_to_file: bool) -> Self {
        Self::spawn_with(dir, log_to_file, None)
    }

    fn spawn_with(dir: TempDir, log_to_file: bool, open_files: Option<(u64, u64)>) -> Self {
        let data = dir.path().join("data");
        let path = dir.path().join("profbridge.yaml");
        let stderr = if log_to_file {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.path().join("stderr.log"))
                .unwrap();
            Stdio::from(log)
        } else {
            Stdio::inherit()
        };
        let binary = env!("CARGO_BIN_EXE_profbridge");
        let serve = ["serve", "--config", path.to_str().unwrap()];
        let mut command = match open_files {
            None => Command::new(binary),
            Some((soft, hard)) => {
                let mut command = Command::new("prlimit");
                command.arg(format!("--nofile={soft}:{hard}")).arg(binary);
                command
            }
        };
        let mut child = command
            .args(serve)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut collector = Self {
            child: Some(child),
            grpc: None,
            http: None,
            telemetry: None,
            listening: Vec::new(),
            data,
            dir: Some(dir),
        };
        for line in stdout.lines() {
            let line = line.unwrap();
            let address = || {
                line.rsplit(' ')
                    .next()
                    .and_then(|a| a.parse::<SocketAddr>().ok())
            };
            if !line.contains("listening on") {
                if line.ends_with("ready") {
                    return collector;
                }
                continue;
            }
            if let (Some((what, _)), Some(address)) = (line.split_once(" listening on "), address())
            {
                let what = what.trim_start_matches("profbridge: ").to_owned();
                collector.listening.push((what, address));
            }
            if line.contains("OTLP gRPC") {
                collector.grpc = address();
            } else if line.contains("OTLP HTTP") {
                collector.http = address();
            } else if line.contains("telemetry") {
                collector.telemetry = address();
            }
        }
        panic!("the collector exited before it was ready");
    }

    /// SIGTERM, then the exit status; the data stays until the returned
    /// folder is dropped.
    pub fn terminate(mut self) -> (ExitStatus, TempDir) {
        let mut child = self.child.take().unwrap();
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        (status, self.dir.take().unwrap())
    }
}

impl Collector {
    /// SIGKILL: no shutdown at all, as in a crash. Returns the folder,
    /// for [`Self::restart`].
    pub fn kill(mut self) -> TempDir {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        self.dir.take().unwrap()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
