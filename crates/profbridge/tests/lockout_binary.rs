//! Issue 27, "no lock-out", against a spawned `profbridge serve`: the
//! server's sockets and the test's are in separate processes, and the
//! clients that must still get in are real ones, a Python `grpcio`
//! channel and `curl`.
//!
//! - Silent TCP connections (connected, never a byte sent, held open),
//!   1,100 and then 3,000 to each of the OTLP gRPC, OTLP HTTP and
//!   telemetry ports, more than each listener's default `max_connections`:
//!   grpcio's export, curl's export and curl's `GET /metrics` all succeed
//!   within the clients' own 10 s deadlines, round after round, with the
//!   default connection settings, and what they sent is in the exporter's
//!   files and counted by the receiver's metrics. The same over TLS, where
//!   part of the flood also completes its TLS handshake before falling
//!   silent.
//! - A gRPC connection that never sends the HTTP/2 preface is closed at
//!   `connection_timeout`, long before `keepalive.max_connection_idle`;
//!   one that sent the preface and SETTINGS is closed at the idle limit,
//!   not the preface limit. An HTTP connection that never sends a request
//!   head is closed at `read_header_timeout`.
//! - A request in flight is never the connection evicted to make room: an
//!   upload sent a byte at a time through a flood at `max_connections: 4`
//!   is answered 200 and its profiles arrive.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use profbridge_testkit::{ebpf_like_request, require_tool, venv_python, TempDir};
use profbridge_translate::otlp::{
    any_value, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use prost::Message;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tokio_rustls::rustls;

use crate::support::collector::Collector;

const PURPOSE: &str =
    "the lock-out tests (issue 27): real gRPC and HTTP clients beside floods of silent connections";
const EXPORT_METHOD: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
const PROFILES_PATH: &str = "/v1development/profiles";
/// The documented defaults (docs/configuration.md) that the floods exceed:
/// every OTLP listener's `max_connections`, and the telemetry endpoint's.
const RECEIVER_MAX_CONNECTIONS: usize = 1024;
const TELEMETRY_MAX_CONNECTIONS: usize = 64;
/// Silent connections per port: just over a receiver's cap, then far over.
const FLOODS: [usize; 2] = [1100, 3000];
/// Connections per TLS port that finish their handshake, then fall silent.
const HANDSHAKEN: usize = 1100;
/// Exports by each client at each flood size.
const ROUNDS: usize = 3;
/// The deadline each client is given (grpcio's `timeout=`, curl's
/// `--max-time`): the only time the floods are judged by.
const CLIENT_DEADLINE_SECS: u64 = 10;
/// How long a client process may run before the test kills it, and how
/// long exported data may take to reach the files: generous, for a loaded
/// machine. Nothing is timed against them.
const PATIENCE: Duration = Duration::from_secs(60);
/// The two flood tests hold up to 9,000 client sockets each; one at a
/// time keeps the test process under its descriptor limit.
static FLOOD_LOCK: Mutex<()> = Mutex::new(());

// ------------------------------------------------------------- prerequisites

/// The real clients: curl, and a Python with grpcio.
struct Clients {
    curl: PathBuf,
    python: PathBuf,
}

fn clients() -> Option<Clients> {
    let curl = require_tool("curl", &["--version"], PURPOSE)?;
    let python = venv_python("grpc", "grpcio", PURPOSE)?;
    Some(Clients { curl, python })
}

/// Raises this process's soft limit on open files to its hard limit, which
/// must leave room for `sockets` client sockets and the test's own files.
fn raise_open_files(sockets: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let needed = sockets as u64 + 1024;
    let limit = getrlimit(Resource::Nofile);
    if let Some(hard) = limit.maximum {
        assert!(
            hard >= needed,
            "this test holds {sockets} client sockets at once and needs a limit of {needed} open files, \
             but the hard limit (RLIMIT_NOFILE) is {hard}: raise it (`ulimit -Hn`, LimitNOFILE=, \
             or nofile in /etc/security/limits.conf) to at least {needed}"
        );
    }
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .unwrap_or_else(|error| panic!("cannot raise RLIMIT_NOFILE to {limit:?}: {error}"));
    }
}

// ------------------------------------------------------------ configuration

/// OTLP gRPC and HTTP on free ports with default connection settings, a
/// file exporter writing one OTLP request per file, and the telemetry
/// endpoint; `grpc_extra` and `http_extra` are lines for each protocol
/// (a `tls:` block), or empty.
fn otlp_config(grpc_extra: &str, http_extra: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n{grpc_extra}\
         \x20     http:\n        endpoint: 127.0.0.1:0\n{http_extra}\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n"
    )
}

/// A CA, and a certificate for `localhost` it signed: the server's.
struct Certificates {
    dir: TempDir,
    ca: rustls::pki_types::CertificateDer<'static>,
}

impl Certificates {
    fn new(label: &str) -> Self {
        let dir = TempDir::new(label);
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "lock-out test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), server.pem()).unwrap();
        std::fs::write(dir.path().join("server.key"), key.serialize_pem()).unwrap();
        Self {
            ca: ca.der().clone(),
            dir,
        }
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The `tls:` block of a protocol, indented under it.
    fn tls_block(&self) -> String {
        format!(
            "        tls:\n          cert_file: {}\n          key_file: {}\n",
            self.dir.path().join("server.pem").display(),
            self.dir.path().join("server.key").display()
        )
    }

    /// A rustls client trusting the CA, offering `alpn`.
    fn connector(&self, alpn: &[u8]) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

// ------------------------------------------------------------------ floods

/// A listener under a flood.
#[derive(Debug, Clone, Copy)]
struct Port {
    what: &'static str,
    address: SocketAddr,
    /// Its `max_connections`.
    cap: usize,
}

/// How flood connections behave once connected: send nothing at all, or
/// finish a TLS handshake (offering an ALPN protocol) and then send
/// nothing.
#[derive(Clone)]
enum Kind {
    Silent,
    Handshaken(tokio_rustls::TlsConnector),
}

/// A flood connection, held open until dropped.
enum Held {
    Plain {
        _open: std::net::TcpStream,
    },
    Tls {
        _open: Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>,
    },
}

/// What a flood of one port got, for the test's log.
#[derive(Debug, Default)]
#[allow(dead_code)] // read through Debug
struct Opened {
    /// Connections established, as the client sees them.
    established: usize,
    /// Why the others were not, by kind, with how many.
    failures: BTreeMap<String, usize>,
    /// Connections the collector had accepted on the port once the flood
    /// was in: its `max_connections` when the listener is full.
    held_by_server: usize,
}

/// Flood connections up to a listener's cap are opened this many at a
/// time, so that the kernel's accept queue (128) never overflows and the
/// collector takes every one of them; past the cap, as many as connect.
const PACED_IN_FLIGHT: usize = 32;
const FAST_IN_FLIGHT: usize = 512;
/// How long one flood connection may take to connect (or to finish its
/// handshake) before it counts as refused: a listener that stopped
/// accepting leaves connections past its accept queue unanswered.
const FLOOD_CONNECT_WAIT: Duration = Duration::from_secs(2);

/// Connections that never send a byte after connecting (or after their
/// TLS handshake), held until dropped.
struct Floods {
    held: Vec<Held>,
    runtime: tokio::runtime::Runtime,
    /// What tops a port up to its cap, when not a silent TCP connection:
    /// on a TLS listener, silent TCP connections are handshakes in
    /// progress, which `tls.max_concurrent_handshakes` (64) keeps from
    /// ever filling it.
    fillers: BTreeMap<SocketAddr, Kind>,
}

impl Floods {
    fn new() -> Self {
        Self {
            held: Vec::new(),
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            fillers: BTreeMap::new(),
        }
    }

    /// Tops `port` up with `kind` rather than with silent TCP connections.
    fn fill_with(&mut self, port: SocketAddr, kind: Kind) {
        self.fillers.insert(port, kind);
    }

    /// Opens `count` connections to every port at once, each of its
    /// kind, the first up to each listener's cap paced
    /// ([`PACED_IN_FLIGHT`]), the rest as fast as they connect; then tops
    /// the ports up until the collector holds `cap` connections on each
    /// ([`Self::fill`]).
    fn flood(&mut self, targets: &[(Port, Kind)], count: usize) -> Vec<Opened> {
        let plans: Vec<(SocketAddr, usize, usize, Kind)> = targets
            .iter()
            .map(|(port, kind)| {
                let room = port.cap.saturating_sub(held_by_server(port.address));
                let paced = count.min(room);
                (port.address, paced, count - paced, kind.clone())
            })
            .collect();
        let opened = self.runtime.block_on(async {
            let floods: Vec<_> = plans
                .into_iter()
                .map(|(address, paced, fast, kind)| {
                    tokio::spawn(async move {
                        let (mut held, mut failures) =
                            open(address, paced, PACED_IN_FLIGHT, &kind).await;
                        let (more, more_failures) =
                            open(address, fast, FAST_IN_FLIGHT, &kind).await;
                        held.extend(more);
                        for (why, count) in more_failures {
                            *failures.entry(why).or_default() += count;
                        }
                        (held, failures)
                    })
                })
                .collect();
            let mut opened = Vec::new();
            for flood in floods {
                opened.push(flood.await.unwrap());
            }
            opened
        });
        let mut results = Vec::new();
        for (held, failures) in opened {
            results.push(Opened {
                established: held.len(),
                failures,
                held_by_server: 0,
            });
            self.held.extend(held);
        }
        let ports: Vec<Port> = targets.iter().map(|(port, _)| *port).collect();
        for (result, held) in results.iter_mut().zip(self.fill(&ports)) {
            result.held_by_server = held;
        }
        results
    }

    /// Opens silent connections to each port until the collector holds
    /// `cap` connections on it (a connection a client saw established may
    /// still wait in the kernel's queue, or have been dropped from a full
    /// one), and asserts that it does: the listener is full. Returns what
    /// it holds on each port.
    fn fill(&mut self, ports: &[Port]) -> Vec<usize> {
        ports
            .iter()
            .map(|port| {
                let mut held = held_by_server(port.address);
                for attempt in 0..40 {
                    if held >= port.cap {
                        break;
                    }
                    // Give connections in flight time to be taken, then
                    // add what is missing.
                    if attempt % 5 == 4 {
                        let filler = self
                            .fillers
                            .get(&port.address)
                            .cloned()
                            .unwrap_or(Kind::Silent);
                        let (more, _) = self.runtime.block_on(open(
                            port.address,
                            port.cap - held,
                            PACED_IN_FLIGHT,
                            &filler,
                        ));
                        self.held.extend(more);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    held = held_by_server(port.address);
                }
                assert!(
                    held >= port.cap,
                    "{}: the collector holds {held} connections, fewer than max_connections ({}), \
                     after {} flood connections: the listener was never full",
                    port.what,
                    port.cap,
                    self.held.len()
                );
                held
            })
            .collect()
    }
}

/// Opens `count` connections of `kind` to `address`, `in_flight` at a
/// time: the ones established, and why the others were not.
async fn open(
    address: SocketAddr,
    count: usize,
    in_flight: usize,
    kind: &Kind,
) -> (Vec<Held>, BTreeMap<String, usize>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let mut connects = tokio::task::JoinSet::new();
    for _ in 0..count {
        let gate = Arc::clone(&gate);
        let kind = kind.clone();
        connects.spawn(async move {
            let _turn = gate.acquire_owned().await.unwrap();
            let connect = async {
                let tcp = tokio::net::TcpStream::connect(address)
                    .await
                    .map_err(|e| e.to_string())?;
                match kind {
                    Kind::Silent => tcp
                        .into_std()
                        .map(|open| Held::Plain { _open: open })
                        .map_err(|e| e.to_string()),
                    Kind::Handshaken(connector) => {
                        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                        connector
                            .connect(name, tcp)
                            .await
                            .map(|tls| Held::Tls {
                                _open: Box::new(tls),
                            })
                            .map_err(|e| format!("TLS handshake: {e}"))
                    }
                }
            };
            match tokio::time::timeout(FLOOD_CONNECT_WAIT, connect).await {
                Ok(result) => result,
                Err(_) => Err(format!("not established within {FLOOD_CONNECT_WAIT:?}")),
            }
        });
    }
    let mut held = Vec::new();
    let mut failures = BTreeMap::new();
    while let Some(result) = connects.join_next().await {
        match result.unwrap() {
            Ok(connection) => held.push(connection),
            Err(why) => *failures.entry(why).or_default() += 1,
        }
    }
    (held, failures)
}

impl Drop for Floods {
    fn drop(&mut self) {
        let _inside = self.runtime.enter();
        self.held.clear();
    }
}

/// Connections the collector has accepted on the listener at `address`
/// and holds open, from /proc/net/tcp: its end of each (the listener's
/// local port), established, with a socket inode (connections still in
/// the kernel's accept queue have none).
fn held_by_server(address: SocketAddr) -> usize {
    let local = format!("0100007F:{:04X}", address.port());
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.get(1) == Some(&local.as_str())
                && fields.get(3) == Some(&"01")
                && fields.get(9).is_some_and(|inode| *inode != "0")
        })
        .count()
}

// ------------------------------------------------------------------ clients

/// One generic unary call from grpcio: the request's bytes in, the
/// response's out, as generated stubs would send them.
const GRPCIO_EXPORT: &str = r#"
import json, sys, time
import grpc

target, method, request_path, deadline, ca_path = sys.argv[1:6]
with open(request_path, "rb") as f:
    request = f.read()
options = [("grpc.enable_http_proxy", 0), ("grpc.enable_retries", 0)]
if ca_path:
    with open(ca_path, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    options.append(("grpc.ssl_target_name_override", "localhost"))
    channel = grpc.secure_channel(target, credentials, options=options)
else:
    channel = grpc.insecure_channel(target, options=options)
export = channel.unary_unary(method)
started = time.monotonic()
try:
    response = export(request, timeout=float(deadline))
    outcome = {"ok": True, "response": response.hex()}
except grpc.RpcError as error:
    outcome = {"ok": False, "code": str(error.code()), "details": error.details()}
outcome["seconds"] = time.monotonic() - started
channel.close()
print(json.dumps(outcome))
"#;

/// Runs `command` to its end, killing it after [`PATIENCE`].
fn run_bounded(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{command:?} ran longer than {PATIENCE:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// How one client's exchange went: `Ok(what it got)` or `Err(why not)`,
/// with the time it took.
#[derive(Debug)]
struct Outcome {
    result: Result<Vec<u8>, String>,
    seconds: f64,
}

/// grpcio exports the request in `request_file` to `target`
/// (`127.0.0.1:PORT`), over TLS trusting `ca` when given.
fn grpcio_export(
    python: &Path,
    target: SocketAddr,
    request_file: &Path,
    ca: Option<&Path>,
) -> Outcome {
    let mut command = Command::new(python);
    command
        .args(["-c", GRPCIO_EXPORT])
        .arg(target.to_string())
        .arg(EXPORT_METHOD)
        .arg(request_file)
        .arg(CLIENT_DEADLINE_SECS.to_string())
        .arg(ca.map(Path::as_os_str).unwrap_or_default());
    let output = run_bounded(command);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Ok(outcome) = serde_json::from_str::<serde_json::Value>(stdout.trim()) else {
        return Outcome {
            result: Err(format!(
                "grpcio said nothing readable: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )),
            seconds: f64::NAN,
        };
    };
    let seconds = outcome["seconds"].as_f64().unwrap_or(f64::NAN);
    let result = if outcome["ok"].as_bool() == Some(true) {
        Ok(hex_decode(outcome["response"].as_str().unwrap()))
    } else {
        Err(format!("{} {}", outcome["code"], outcome["details"]))
    };
    Outcome { result, seconds }
}

fn hex_decode(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// One request by curl, `--max-time` [`CLIENT_DEADLINE_SECS`]: a POST of
/// `body` (OTLP protobuf) when given, else a GET. `Ok(body)` on 200.
fn curl(
    curl: &Path,
    url: &str,
    body: Option<&Path>,
    ca: Option<&Path>,
    dir: &Path,
    name: &str,
) -> Outcome {
    let out = dir.join(format!("{name}.response"));
    let mut command = Command::new(curl);
    command
        .args(["--silent", "--show-error", "--noproxy", "*", "--max-time"])
        .arg(CLIENT_DEADLINE_SECS.to_string())
        .args(["--write-out", "%{http_code} %{time_total}", "--output"])
        .arg(&out);
    if let Some(body) = body {
        command
            .args([
                "--header",
                "Content-Type: application/x-protobuf",
                "--data-binary",
            ])
            .arg(format!("@{}", body.display()));
    }
    if let Some(ca) = ca {
        // localhost is the certificate's name; it resolves to the IPv4
        // address the collector listens on, not to ::1.
        let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
        command
            .arg("--cacert")
            .arg(ca)
            .arg("--resolve")
            .arg(format!("localhost:{port}:127.0.0.1"));
    }
    command.arg(url);
    let output = run_bounded(command);
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    let (status, seconds) = said.split_once(' ').unwrap_or(("", ""));
    let seconds = seconds.parse().unwrap_or(f64::NAN);
    let result = if output.status.success() && status == "200" {
        Ok(std::fs::read(&out).unwrap())
    } else {
        Err(format!(
            "curl exited with {}, HTTP status {status:?}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    };
    Outcome { result, seconds }
}

/// A request of its own: `service.name` is `service`.
fn request_for(service: &str, seed: u64) -> ExportProfilesServiceRequest {
    let mut request = ebpf_like_request(40, seed);
    for resource_profiles in &mut request.resource_profiles {
        for attribute in &mut resource_profiles.resource.as_mut().unwrap().attributes {
            if attribute.key == "service.name" {
                attribute.value = Some(profbridge_translate::otlp::string_value(service));
            }
        }
    }
    request
}

fn service_names(request: &ExportProfilesServiceRequest) -> Vec<String> {
    request
        .resource_profiles
        .iter()
        .filter_map(|r| r.resource.as_ref())
        .flat_map(|r| &r.attributes)
        .filter(|a| a.key == "service.name")
        .filter_map(|a| match a.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(name) => Some(name.clone()),
            _ => None,
        })
        .collect()
}

fn profiles_and_samples(request: &ExportProfilesServiceRequest) -> (usize, usize) {
    let profiles = request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles);
    (
        profiles.clone().count(),
        profiles.map(|p| p.samples.len()).sum(),
    )
}

/// An OTLP response that rejected nothing.
fn assert_all_accepted(what: &str, response: &[u8]) {
    let response = ExportProfilesServiceResponse::decode(response)
        .unwrap_or_else(|e| panic!("{what}: the response is not an OTLP response: {e}"));
    if let Some(partial) = response.partial_success {
        assert_eq!(partial.rejected_profiles, 0, "{what}: {partial:?}");
    }
}

/// Waits for the request the file exporter wrote for `service` and checks
/// it holds what `sent` held.
fn assert_arrived(data: &Path, service: &str, sent: &ExportProfilesServiceRequest) {
    let dir = data.join(service);
    let deadline = Instant::now() + PATIENCE;
    let written = loop {
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().path())
                    .filter(|path| path.to_string_lossy().ends_with(".otlp.pb"))
                    .collect()
            })
            .unwrap_or_default();
        if let [file] = files.as_slice() {
            break ExportProfilesServiceRequest::decode(std::fs::read(file).unwrap().as_slice())
                .unwrap();
        }
        assert!(
            files.len() <= 1,
            "{service}: written more than once: {files:?}"
        );
        assert!(
            Instant::now() < deadline,
            "{service}: answered OK, but nothing was written under {} within {PATIENCE:?}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(service_names(&written), vec![service.to_owned()]);
    assert_eq!(
        profiles_and_samples(&written),
        profiles_and_samples(sent),
        "{service}: profiles and samples written"
    );
}

/// The sum of a counter's samples for the OTLP receiver over `transport`.
fn accepted(metrics: &str, transport: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("profbridge_receiver_accepted_profiles_total{"))
        .filter(|line| {
            line.contains("receiver=\"otlp\"")
                && line.contains(&format!("transport=\"{transport}\""))
        })
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// The collector under a flood, and what was sent to it.
struct Target<'a> {
    clients: &'a Clients,
    collector: &'a Collector,
    /// The CA to trust, for TLS receivers.
    ca: Option<PathBuf>,
    dir: &'a TempDir,
    /// (service name, request) of every export answered OK, by transport.
    sent: BTreeMap<&'static str, Vec<(String, ExportProfilesServiceRequest)>>,
}

impl Target<'_> {
    /// [`ROUNDS`] rounds, each with grpcio's export, curl's export and
    /// curl's GET of /metrics at once; every one must succeed within its
    /// deadline. Then everything exported is in the files and counted.
    fn rounds(&mut self, label: &str, floods: &mut Floods, ports: &[Port]) {
        let grpc = self.collector.grpc.unwrap();
        let http = self.collector.http.unwrap();
        let telemetry = self.collector.telemetry.unwrap();
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        let host = if self.ca.is_some() {
            "localhost".to_owned()
        } else {
            "127.0.0.1".to_owned()
        };
        let ca = self.ca.as_deref();
        for round in 0..ROUNDS {
            // The previous round's clients made room; an attacker fills it.
            let held = floods.fill(ports);
            eprintln!(
                "{label}, round {round}: the collector holds {held:?} connections on {ports:?}"
            );
            let name = |transport: &str| format!("{label}-round-{round}-{transport}");
            let requests = ["grpc", "http"].map(|transport| {
                let service = name(transport);
                let request = request_for(&service, round as u64);
                let file = self.dir.path().join(format!("{service}.pb"));
                std::fs::write(&file, request.encode_to_vec()).unwrap();
                (service, request, file)
            });
            let dir = self.dir.path();
            let clients = self.clients;
            let (grpc_outcome, http_outcome, metrics_outcome) = std::thread::scope(|scope| {
                let grpc_call =
                    scope.spawn(|| grpcio_export(&clients.python, grpc, &requests[0].2, ca));
                let http_call = scope.spawn(|| {
                    curl(
                        &clients.curl,
                        &format!("{scheme}://{host}:{}{PROFILES_PATH}", http.port()),
                        Some(&requests[1].2),
                        ca,
                        dir,
                        &requests[1].0,
                    )
                });
                let metrics_call = scope.spawn(|| {
                    curl(
                        &clients.curl,
                        &format!("http://{telemetry}/metrics"),
                        None,
                        None,
                        dir,
                        &name("metrics"),
                    )
                });
                (
                    grpc_call.join().unwrap(),
                    http_call.join().unwrap(),
                    metrics_call.join().unwrap(),
                )
            });
            eprintln!(
                "{label}, round {round}: grpcio {:.2} s, curl export {:.2} s, curl /metrics {:.2} s",
                grpc_outcome.seconds, http_outcome.seconds, metrics_outcome.seconds
            );
            let all_ok = grpc_outcome.result.is_ok()
                && http_outcome.result.is_ok()
                && metrics_outcome.result.is_ok();
            let short = |outcome: &Outcome| match &outcome.result {
                Ok(_) => format!("ok after {:.2} s", outcome.seconds),
                Err(why) => format!("FAILED after {:.2} s: {why}", outcome.seconds),
            };
            assert!(
                all_ok,
                "{label}, round {round} of {ROUNDS}: every client must get in within its {CLIENT_DEADLINE_SECS} s deadline\n  \
                 grpcio export to {grpc}: {}\n  curl export to {http}: {}\n  curl GET /metrics on {telemetry}: {}",
                short(&grpc_outcome),
                short(&http_outcome),
                short(&metrics_outcome)
            );
            let exposition = String::from_utf8_lossy(metrics_outcome.result.as_ref().unwrap());
            assert!(
                exposition.contains("profbridge_receiver_accepted_profiles_total{"),
                "{label}, round {round}: /metrics: {exposition}"
            );
            assert_all_accepted(&requests[0].0, grpc_outcome.result.as_ref().unwrap());
            assert_all_accepted(&requests[1].0, http_outcome.result.as_ref().unwrap());
            let [(grpc_service, grpc_request, _), (http_service, http_request, _)] = requests;
            self.sent
                .entry("grpc")
                .or_default()
                .push((grpc_service, grpc_request));
            self.sent
                .entry("http")
                .or_default()
                .push((http_service, http_request));
        }
        self.assert_delivered(label);
    }

    /// Every export answered OK is in the exporter's files, and the
    /// receiver's counters (read by curl, past the flood too) count them.
    fn assert_delivered(&self, label: &str) {
        for sent in self.sent.values() {
            for (service, request) in sent {
                assert_arrived(&self.collector.data, service, request);
            }
        }
        let telemetry = self.collector.telemetry.unwrap();
        let metrics = curl(
            &self.clients.curl,
            &format!("http://{telemetry}/metrics"),
            None,
            None,
            self.dir.path(),
            &format!("{label}-metrics"),
        );
        let metrics = String::from_utf8(
            metrics
                .result
                .unwrap_or_else(|why| panic!("{label}: GET /metrics after the rounds: {why}")),
        )
        .unwrap();
        for (transport, sent) in &self.sent {
            let profiles: usize = sent.iter().map(|(_, r)| profiles_and_samples(r).0).sum();
            assert_eq!(
                accepted(&metrics, transport),
                profiles as f64,
                "{label}: profbridge_receiver_accepted_profiles_total over {transport}"
            );
        }
    }
}

// -------------------------------------------------------------------- tests

/// Silent floods of 1,100 and then 3,000 connections on each of the gRPC,
/// HTTP and telemetry ports (over the caps of 1,024 and 64) keep neither
/// grpcio, nor curl's export, nor curl's GET of /metrics out.
#[test]
fn silent_floods_keep_no_client_out_of_any_listener() {
    let Some(clients) = clients() else {
        return;
    };
    let _one_flood = FLOOD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    raise_open_files(3 * FLOODS[1]);
    let collector = Collector::start("lockout-plain", &otlp_config("", ""));
    let dir = TempDir::new("lockout-plain-requests");
    let mut target = Target {
        clients: &clients,
        collector: &collector,
        ca: None,
        dir: &dir,
        sent: BTreeMap::new(),
    };
    let ports = [
        Port {
            what: "OTLP gRPC",
            address: collector.grpc.unwrap(),
            cap: RECEIVER_MAX_CONNECTIONS,
        },
        Port {
            what: "OTLP HTTP",
            address: collector.http.unwrap(),
            cap: RECEIVER_MAX_CONNECTIONS,
        },
        Port {
            what: "telemetry",
            address: collector.telemetry.unwrap(),
            cap: TELEMETRY_MAX_CONNECTIONS,
        },
    ];
    let silent = ports.map(|port| (port, Kind::Silent));
    let mut floods = Floods::new();
    let mut sent = 0;
    for size in FLOODS {
        let started = Instant::now();
        let opened = floods.flood(&silent, size - sent);
        sent = size;
        eprintln!(
            "lockout-plain: {size} silent connections per port after {:.2} s: {opened:?}",
            started.elapsed().as_secs_f64()
        );
        target.rounds(&format!("lockout-plain-{size}"), &mut floods, &ports);
    }
}

/// The same over TLS: 1,100 connections per TLS port that finish their
/// handshake (ALPN h2 for gRPC, http/1.1 for HTTP) and fall silent, then
/// 1,100 and 3,000 silent TCP connections, keep neither grpcio nor curl
/// out. Before each round the listeners are topped up to their cap with
/// handshaken connections, so that each round needs an eviction.
#[test]
fn silent_floods_keep_no_client_out_over_tls() {
    let Some(clients) = clients() else {
        return;
    };
    let _one_flood = FLOOD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    raise_open_files(2 * (HANDSHAKEN + FLOODS[1]));
    let certificates = Certificates::new("lockout-tls-certificates");
    let tls = certificates.tls_block();
    let collector = Collector::start("lockout-tls", &otlp_config(&tls, &tls));
    let dir = TempDir::new("lockout-tls-requests");
    let mut target = Target {
        clients: &clients,
        collector: &collector,
        ca: Some(certificates.ca_file()),
        dir: &dir,
        sent: BTreeMap::new(),
    };
    let grpc = Port {
        what: "OTLP gRPC over TLS",
        address: collector.grpc.unwrap(),
        cap: RECEIVER_MAX_CONNECTIONS,
    };
    let http = Port {
        what: "OTLP HTTP over TLS",
        address: collector.http.unwrap(),
        cap: RECEIVER_MAX_CONNECTIONS,
    };
    let mut floods = Floods::new();
    floods.fill_with(
        grpc.address,
        Kind::Handshaken(certificates.connector(b"h2")),
    );
    floods.fill_with(
        http.address,
        Kind::Handshaken(certificates.connector(b"http/1.1")),
    );
    let started = Instant::now();
    let handshaken = floods.flood(
        &[
            (grpc, Kind::Handshaken(certificates.connector(b"h2"))),
            (http, Kind::Handshaken(certificates.connector(b"http/1.1"))),
        ],
        HANDSHAKEN,
    );
    eprintln!(
        "lockout-tls: {HANDSHAKEN} handshaken silent connections per port after {:.2} s: {handshaken:?}",
        started.elapsed().as_secs_f64()
    );
    let mut sent = 0;
    for size in FLOODS {
        let started = Instant::now();
        let opened = floods.flood(&[(grpc, Kind::Silent), (http, Kind::Silent)], size - sent);
        sent = size;
        eprintln!(
            "lockout-tls: {size} silent connections per port after {:.2} s: {opened:?}",
            started.elapsed().as_secs_f64()
        );
        target.rounds(&format!("lockout-tls-{size}"), &mut floods, &[grpc, http]);
    }
}

/// How long until the server closed `stream` (EOF or an error), counted
/// from `since` and waiting until `since + limit`; `None` when it was still
/// open then. Everything the server sent is appended to `received`.
fn closed_at(
    stream: &mut TcpStream,
    since: Instant,
    limit: Duration,
    received: &mut Vec<u8>,
) -> Option<Duration> {
    let mut buffer = [0u8; 4096];
    loop {
        let left = (since + limit).checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return Some(since.elapsed()),
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(since.elapsed()),
        }
    }
}

/// The preface limit under test and the idle limit it must come well
/// before.
const PREFACE_LIMIT: Duration = Duration::from_secs(1);
const IDLE_LIMIT: Duration = Duration::from_secs(6);
/// How much later than its limit a close may come on a loaded machine:
/// the preface limit's close must still be well before the idle limit.
const LATE: Duration = Duration::from_secs(3);

/// A plaintext gRPC connection that never sends the HTTP/2 preface is
/// closed at `connection_timeout` (1 s), well before
/// `keepalive.max_connection_idle` (6 s); one that sent the preface and an
/// empty SETTINGS frame and then idles is closed at the idle limit, not at
/// the preface limit.
#[test]
fn a_grpc_connection_without_the_preface_is_closed_at_connection_timeout() {
    let collector = Collector::start(
        "lockout-preface",
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
             \x20       connection_timeout: {}s\n        keepalive:\n          max_connection_idle: {}s\n\
             exporters:\n  nop:\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
             \x20 telemetry:\n    metrics:\n      address: \"\"\n",
            PREFACE_LIMIT.as_secs(),
            IDLE_LIMIT.as_secs()
        ),
    );
    let grpc = collector.grpc.unwrap();
    let started = Instant::now();
    let mut silent = TcpStream::connect(grpc).unwrap();
    let mut spoke = TcpStream::connect(grpc).unwrap();
    // The client connection preface: the magic, then an empty SETTINGS
    // frame (length 0, type 4, flags 0, stream 0).
    spoke
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .unwrap();
    let patience = IDLE_LIMIT + Duration::from_secs(10);
    let silent_close = std::thread::spawn(move || {
        let mut received = Vec::new();
        (
            closed_at(&mut silent, started, patience, &mut received),
            received,
        )
    });
    let mut from_server = Vec::new();
    let spoke_closed = closed_at(&mut spoke, started, patience, &mut from_server);
    let (silent_closed, _) = silent_close.join().unwrap();

    let silent_closed = silent_closed.unwrap_or_else(|| {
        panic!("a connection that never sent the preface was still open after {patience:?}")
    });
    eprintln!("lockout-preface: the silent connection was closed after {silent_closed:?}");
    assert!(
        silent_closed >= PREFACE_LIMIT - Duration::from_millis(100)
            && silent_closed < PREFACE_LIMIT + LATE,
        "a connection that never sent the preface must be closed at connection_timeout \
         ({PREFACE_LIMIT:?}), well before max_connection_idle ({IDLE_LIMIT:?}); it was closed after {silent_closed:?}"
    );

    // The server answered the preface with its own SETTINGS frame.
    assert!(
        from_server.len() >= 9 && from_server[3] == 4,
        "the server did not answer the preface with SETTINGS: {from_server:?}"
    );
    let spoke_closed = spoke_closed.unwrap_or_else(|| {
        panic!("an idle connection that sent the preface was still open after {patience:?}, past max_connection_idle ({IDLE_LIMIT:?})")
    });
    eprintln!(
        "lockout-preface: the connection that sent the preface was closed after {spoke_closed:?}"
    );
    assert!(
        spoke_closed >= IDLE_LIMIT - Duration::from_millis(500),
        "a connection that sent the preface and SETTINGS must be closed at max_connection_idle \
         ({IDLE_LIMIT:?}), not at the preface limit ({PREFACE_LIMIT:?}); it was closed after {spoke_closed:?}"
    );
}

/// An HTTP connection that never sends a request head is closed at
/// `read_header_timeout` (1 s) after it connected, well before
/// `idle_timeout` (6 s), while a request on another connection is
/// answered.
#[test]
fn an_http_connection_without_a_request_head_is_closed_at_read_header_timeout() {
    let collector = Collector::start(
        "lockout-head",
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
             \x20       read_header_timeout: {}s\n        idle_timeout: {}s\n\
             exporters:\n  nop:\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [nop]\n\
             \x20 telemetry:\n    metrics:\n      address: \"\"\n",
            PREFACE_LIMIT.as_secs(),
            IDLE_LIMIT.as_secs()
        ),
    );
    let http = collector.http.unwrap();
    let started = Instant::now();
    let mut silent = TcpStream::connect(http).unwrap();
    let mut served = TcpStream::connect(http).unwrap();
    let body = request_for("lockout-head", 1).encode_to_vec();
    served
        .write_all(
            format!(
                "POST {PROFILES_PATH} HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    served.write_all(&body).unwrap();
    let patience = IDLE_LIMIT + Duration::from_secs(10);
    let mut response = Vec::new();
    closed_at(&mut served, started, patience, &mut response);
    let answered = String::from_utf8_lossy(&response).into_owned();
    assert!(
        answered.starts_with("HTTP/1.1 200"),
        "the request on the other connection: {answered}"
    );
    let silent_closed =
        closed_at(&mut silent, started, patience, &mut Vec::new()).unwrap_or_else(|| {
            panic!("a connection that never sent a request head was still open after {patience:?}")
        });
    eprintln!("lockout-head: the silent connection was closed after {silent_closed:?}");
    assert!(
        silent_closed >= PREFACE_LIMIT - Duration::from_millis(100)
            && silent_closed < PREFACE_LIMIT + LATE,
        "a connection that never sent a request head must be closed at read_header_timeout \
         ({PREFACE_LIMIT:?}), well before idle_timeout ({IDLE_LIMIT:?}); it was closed after {silent_closed:?}"
    );
}

/// At `max_connections: 4`, an upload sent a byte at a time is in flight
/// while keep-alive connections that made one request and idle arrive
/// faster than it progresses, and curl exports: curl gets in (an idle
/// connection made room), and the upload, never the one evicted, is
/// answered 200 and its profiles arrive.
#[test]
fn a_request_in_flight_is_never_evicted() {
    let Some(curl_path) = require_tool("curl", &["--version"], PURPOSE) else {
        return;
    };
    let collector = Collector::start(
        "lockout-in-flight",
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n        max_connections: 4\n\
         exporters:\n  file:\n    path: {data}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n\
         \x20 telemetry:\n    metrics:\n      address: \"\"\n",
    );
    let http = collector.http.unwrap();
    let dir = TempDir::new("lockout-in-flight-requests");

    // The slow upload: its head and a first byte of its body, then a byte
    // every 200 ms until told to finish.
    let upload_request = request_for("lockout-slow-upload", 3);
    let body = upload_request.encode_to_vec();
    let mut upload = TcpStream::connect(http).unwrap();
    upload
        .write_all(
            format!(
                "POST {PROFILES_PATH} HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    upload.write_all(&body[..1]).unwrap();
    let finish = Arc::new(AtomicBool::new(false));
    let uploader = {
        let finish = Arc::clone(&finish);
        let mut upload = upload.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut sent = 1;
            // At most a minute of bytes, under the default read_timeout.
            while !finish.load(Ordering::Relaxed) && sent < body.len() - 1 && sent < 300 {
                std::thread::sleep(Duration::from_millis(200));
                if let Err(error) = upload.write_all(&body[sent..sent + 1]) {
                    return Err(format!(
                        "the upload was cut off after {sent} bytes: {error}"
                    ));
                }
                sent += 1;
            }
            upload
                .write_all(&body[sent..])
                .map_err(|error| format!("the upload was cut off after {sent} bytes: {error}"))?;
            Ok(sent)
        })
    };

    // The flood: a connection every 50 ms for 2 s, each making one
    // keep-alive request (a 404) and then idling, all held; the upload
    // sends a byte every 200 ms meanwhile. Each of them ended its request
    // after the upload's connection was accepted, so the upload is the
    // longest idle but for its request in flight: it is what would give
    // way if requests in flight were not spared.
    let mut flood = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..40 {
        match TcpStream::connect_timeout(&http, FLOOD_CONNECT_WAIT) {
            Ok(mut stream) => {
                let asked = stream.write_all(
                    format!("GET /nothing-here HTTP/1.1\r\nHost: {http}\r\n\r\n").as_bytes(),
                );
                match asked {
                    Ok(()) => flood.push(stream),
                    Err(error) => refused.push(error.to_string()),
                }
            }
            Err(error) => refused.push(error.to_string()),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The listener is full: the upload and idle keep-alive connections.
    let held = held_by_server(http);
    assert!(
        held >= 4,
        "the collector holds {held} connections at max_connections 4 after the flood"
    );
    // A real client exports while the listener is full of silent
    // connections and the upload.
    let export = request_for("lockout-beside-upload", 4);
    let export_file = dir.path().join("export.pb");
    std::fs::write(&export_file, export.encode_to_vec()).unwrap();
    let curl_outcome = curl(
        &curl_path,
        &format!("http://{http}{PROFILES_PATH}"),
        Some(&export_file),
        None,
        dir.path(),
        "export",
    );
    finish.store(true, Ordering::Relaxed);
    let uploaded = uploader.join().unwrap();
    let mut response = Vec::new();
    let _ = upload.set_read_timeout(Some(PATIENCE));
    let _ = upload.read_to_end(&mut response);
    let answered = String::from_utf8_lossy(&response).into_owned();
    eprintln!(
        "lockout-in-flight: {} flood connections ({refused:?} refused), curl {:?}, upload {uploaded:?}",
        flood.len(),
        curl_outcome
            .result
            .as_ref()
            .map(|_| format!("ok after {:.2} s", curl_outcome.seconds))
    );

    assert!(
        curl_outcome.result.is_ok(),
        "at max_connections 4, with the upload in flight and {} idle connections, curl must get in \
         within {CLIENT_DEADLINE_SECS} s (an idle connection evicted): {:?}; the upload: {uploaded:?}, answered {answered:?}",
        flood.len(),
        curl_outcome.result
    );
    assert_all_accepted(
        "curl beside the upload",
        curl_outcome.result.as_ref().unwrap(),
    );
    let sent_slowly =
        uploaded.unwrap_or_else(|why| panic!("the upload in flight was evicted: {why}"));
    assert!(
        answered.starts_with("HTTP/1.1 200"),
        "the upload in flight ({sent_slowly} bytes sent one at a time) must be answered 200: {answered:?}"
    );
    assert_arrived(&collector.data, "lockout-slow-upload", &upload_request);
    assert_arrived(&collector.data, "lockout-beside-upload", &export);
    drop(flood);
}

/// The flood the issue describes, an attacker that "simply reconnects":
/// from 127.0.0.2, connections to both receivers opened as fast as they
/// connect and dropped once 64 are held, at `max_connections: 16`, while
/// grpcio and curl export from 127.0.0.1. The flood's client holds the
/// most connections, so it makes room from itself however fast it
/// churns: every export gets in, round after round.
#[test]
fn a_reconnecting_flood_makes_room_from_its_own_connections() {
    let Some(clients) = clients() else {
        return;
    };
    let _one_flood = FLOOD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let cap = "        max_connections: 16\n";
    let collector = Collector::start("lockout-churn", &otlp_config(cap, cap));
    let (grpc, http) = (collector.grpc.unwrap(), collector.http.unwrap());
    let dir = TempDir::new("lockout-churn-requests");
    let stop = Arc::new(AtomicBool::new(false));
    let churn: Vec<_> = [grpc, http]
        .into_iter()
        .map(|target| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || churn_from_another_address(target, &stop))
        })
        .collect();
    // Let the churn fill both listeners first.
    std::thread::sleep(Duration::from_millis(500));
    let mut outcomes = Vec::new();
    for round in 0..ROUNDS {
        let requests = ["grpc", "http"].map(|transport| {
            let service = format!("lockout-churn-{round}-{transport}");
            let request = request_for(&service, round as u64);
            let file = dir.path().join(format!("{service}.pb"));
            std::fs::write(&file, request.encode_to_vec()).unwrap();
            (service, request, file)
        });
        let grpc_outcome = grpcio_export(&clients.python, grpc, &requests[0].2, None);
        let http_outcome = curl(
            &clients.curl,
            &format!("http://{http}{PROFILES_PATH}"),
            Some(&requests[1].2),
            None,
            dir.path(),
            &requests[1].0,
        );
        outcomes.push((requests, grpc_outcome, http_outcome));
    }
    stop.store(true, Ordering::Relaxed);
    let connects: Vec<usize> = churn.into_iter().map(|c| c.join().unwrap()).collect();
    eprintln!("lockout-churn: {connects:?} flood connections to gRPC and HTTP");
    assert!(
        connects.iter().all(|&count| count > 2 * 64),
        "the flood must churn through the listeners, not only fill them: {connects:?}"
    );
    for (requests, grpc_outcome, http_outcome) in outcomes {
        eprintln!(
            "lockout-churn: grpcio {:.2} s {:?}, curl {:.2} s {:?}",
            grpc_outcome.seconds,
            grpc_outcome.result.as_ref().err(),
            http_outcome.seconds,
            http_outcome.result.as_ref().err()
        );
        let [(grpc_service, grpc_request, _), (http_service, http_request, _)] = requests;
        assert_all_accepted(&grpc_service, grpc_outcome.result.as_ref().unwrap());
        assert_all_accepted(&http_service, http_outcome.result.as_ref().unwrap());
        assert_arrived(&collector.data, &grpc_service, &grpc_request);
        assert_arrived(&collector.data, &http_service, &http_request);
    }
}

/// Connects to `target` from 127.0.0.2 as fast as connections complete,
/// holding the newest 64 and dropping older ones, until `stop`; returns
/// how many connected.
fn churn_from_another_address(target: SocketAddr, stop: &AtomicBool) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let source: SocketAddr = "127.0.0.2:0".parse().unwrap();
        let mut held = std::collections::VecDeque::new();
        let mut connected = 0;
        while !stop.load(Ordering::Relaxed) {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(source).unwrap();
            if let Ok(Ok(stream)) =
                tokio::time::timeout(FLOOD_CONNECT_WAIT, socket.connect(target)).await
            {
                connected += 1;
                held.push_back(stream);
                if held.len() > 64 {
                    held.pop_front();
                }
            }
        }
        connected
    })
}
