//! A tansu broker that makes its clients log in with SASL/SCRAM, with TLS
//! in front of it, killed on drop.
//!
//! What tansu 0.6.0 offers, read in its source (tansu-auth, tansu-cli,
//! tansu-broker, tansu-storage) and checked against the binary:
//! - with `--authentication`, the SASL mechanisms SCRAM-SHA-256 and
//!   SCRAM-SHA-512 (and OAUTHBEARER, not tried here); not PLAIN, which it
//!   refuses at the handshake by closing the connection;
//! - SCRAM credentials are kept by its SQL storage engines only: its
//!   memory storage takes them and keeps nothing, so that nobody can log
//!   in. This broker runs on `sqlite://` storage, which needs tansu built
//!   with the `libsql` feature;
//! - with `--authentication` every request but ApiVersions and the SASL
//!   ones is refused before a client logged in, those of tansu's own CLI
//!   too (it cannot log in): users and topics are made first, by the
//!   broker started without it on the same database;
//! - a login lasts 60 s (its SaslAuthenticate answer says so); librdkafka
//!   2.x then logs in again on the same connection, which tansu refuses
//!   ("Unsupported SASL mechanism"): the client logs an error, reconnects
//!   and logs in afresh, and nothing is lost. Long tests see such lines
//!   about once a minute;
//! - no TLS: `--cert` and `--key` exclude each other (one clap group),
//!   and the TLS acceptor they would configure is never used. A TLS
//!   terminator (rustls) in front of the broker, whose port the broker
//!   advertises, stands in for it, and can ask for client certificates.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::broker::{
    await_start, free_port, open_log, tansu_program, Start, Storage, PORT_ATTEMPTS,
};
use super::tls_front::{FrontSocket, TlsFront};
use crate::TempDir;

/// How a [`SecureBroker`] makes its clients prove who they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct BrokerSecurity<'a> {
    /// (name, password) of each user, with a SCRAM-SHA-256 and a
    /// SCRAM-SHA-512 credential. When there are users, every client must
    /// log in as one of them (SASL/SCRAM); with none, nobody logs in.
    pub scram_users: &'a [(&'a str, &'a str)],
    /// (name, partitions) of the topics to create: tansu creates none
    /// by itself, and its CLI cannot log in once users must.
    pub topics: &'a [(&'a str, u32)],
    /// TLS, when clients must connect with it.
    pub tls: Option<BrokerTls<'a>>,
}

/// The broker's side of TLS, PEM files.
#[derive(Debug, Clone, Copy)]
pub struct BrokerTls<'a> {
    /// The broker's certificate chain, its own certificate first.
    pub cert_file: &'a Path,
    pub key_file: &'a Path,
    /// When set, every client must present a certificate that one of
    /// these CA certificates signed.
    pub client_ca_file: Option<&'a Path>,
}

/// A tansu broker on loopback with SQLite storage, as
/// [`BrokerSecurity`] says.
pub struct SecureBroker {
    program: PathBuf,
    /// The database and the broker's log.
    dir: TempDir,
    /// Where tansu listens, in plaintext.
    port: u16,
    front: Option<TlsFront>,
    child: Option<Child>,
}

impl SecureBroker {
    /// Makes the users and topics, starts the broker as `security` says
    /// and waits until it answers. `None` (after a loud note) without a
    /// tansu that has SQLite storage, or a panic when interop is
    /// required.
    pub fn start(label: &str, security: &BrokerSecurity<'_>) -> Option<Self> {
        let program = tansu_program(label, Storage::Sqlite)?;
        let mut broker = Self {
            program,
            dir: TempDir::new(&format!("tansu-secure-{label}")),
            port: 0,
            front: None,
            child: None,
        };
        let front = security.tls.map(|_| FrontSocket::bind());
        let mut ready = false;
        for _ in 0..PORT_ATTEMPTS {
            broker.port = free_port();
            if let Start::Ready = broker.spawn_and_wait(broker.port, false) {
                ready = true;
                break;
            }
        }
        assert!(
            ready,
            "tansu found no free port in {PORT_ATTEMPTS} attempts; its log:\n{}",
            broker.log()
        );
        for (name, password) in security.scram_users {
            for mechanism in ["scram256", "scram512"] {
                broker.run_cli(&["user", "create", name, password, "--mechanism", mechanism]);
            }
        }
        for (topic, partitions) in security.topics {
            broker.run_cli(&[
                "topic",
                "create",
                "--partitions",
                &partitions.to_string(),
                topic,
            ]);
        }
        broker.stop();
        let advertised = front.as_ref().map_or(broker.port, FrontSocket::port);
        let authentication = !security.scram_users.is_empty();
        match broker.spawn_and_wait(advertised, authentication) {
            Start::Ready => {}
            Start::PortTaken => panic!(
                "tansu did not start again on port {}; its log:\n{}",
                broker.port,
                broker.log()
            ),
        }
        if let (Some(socket), Some(tls)) = (front, &security.tls) {
            broker.front = Some(TlsFront::start(socket, tls, broker.port));
        }
        Some(broker)
    }

    /// `127.0.0.1:PORT`, for a client's `bootstrap.servers` / `brokers`:
    /// the TLS front when there is one.
    pub fn bootstrap(&self) -> String {
        let port = self.front.as_ref().map_or(self.port, TlsFront::port);
        format!("127.0.0.1:{port}")
    }

    /// What the broker printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Why the TLS front refused each handshake it refused (a client
    /// without a certificate, or one it does not trust), as rustls says.
    pub fn refused_handshakes(&self) -> Vec<String> {
        self.front
            .as_ref()
            .map(TlsFront::refused)
            .unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("tansu.log")
    }

    /// Runs tansu's CLI against the broker, which must not ask for a login.
    fn run_cli(&self, args: &[&str]) {
        let output = Command::new(&self.program)
            .args(args)
            .arg("--broker")
            .arg(format!("tcp://127.0.0.1:{}", self.port))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program.display()));
        assert!(
            output.status.success(),
            "`tansu {}` failed: {}{}\nthe broker's log:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }

    /// Starts tansu on `self.port`, advertising `advertised`, and waits
    /// until it answers ApiVersions (which needs no login).
    fn spawn_and_wait(&mut self, advertised: u16, authentication: bool) -> Start {
        let log_path = self.log_path();
        let log_start = std::fs::metadata(&log_path).map_or(0, |meta| meta.len() as usize);
        let log = open_log(&log_path);
        let mut command = Command::new(&self.program);
        command
            .current_dir(self.dir.path())
            .arg("broker")
            .args(["--listener-url", &format!("tcp://127.0.0.1:{}", self.port)])
            .args([
                "--advertised-listener-url",
                &format!("tcp://127.0.0.1:{advertised}"),
            ])
            // Relative to the working directory.
            .args(["--storage-engine", "sqlite://tansu.db"]);
        if authentication {
            command.arg("--authentication");
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program.display()));
        self.child = Some(child);
        await_start(&mut self.child, self.port, &log_path, log_start)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for SecureBroker {
    fn drop(&mut self) {
        self.stop();
    }
}
