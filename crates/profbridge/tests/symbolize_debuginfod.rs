//! debuginfod through the built binary: `profbridge symbolize --debuginfod`
//! and the `symbolize` processor's `debuginfod:` section in
//! `profbridge serve`. A server that never answers costs a profile nothing
//! but its frames (it is delivered, the server named once, the file asked
//! for once); files come over https from a server whose certificate the
//! platform's roots (`SSL_CERT_FILE`) trust, resolve as llvm-symbolizer
//! says, and are not asked for again.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use profbridge_testkit::native::{
    add_build_id, assert_matches_oracle, build_id, gperftools_cpu_profile_of, locations_of,
    native_programs,
};
use profbridge_testkit::{files_under, venv_python, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::support::collector::Collector;
use crate::support::http::{exchange, get};
use crate::symbolize::pprof_bytes_as_request;

const PURPOSE: &str = "the debuginfod tests of `profbridge symbolize` and `serve`";

/// The OTLP form of a gperftools CPU profile of `program`, whose mappings
/// carry its GNU build id (as the eBPF profiler sends them); the other
/// mappings have none.
fn profile_with_build_id(program: &Path, dir: &Path) -> ExportProfilesServiceRequest {
    let mut request = pprof_bytes_as_request(&gperftools_cpu_profile_of(program, dir), &[]);
    add_build_id(&mut request, program, &build_id(program));
    request
}

/// `profbridge symbolize ARGS`, for options to add (environment).
fn symbolize(args: &[&Path]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_profbridge"));
    command.arg("symbolize").args(args);
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_unsymbolized(request: &ExportProfilesServiceRequest, program: &Path) {
    let locations = locations_of(request, program);
    assert!(!locations.is_empty());
    assert!(locations.iter().all(|(_, lines)| lines.is_empty()));
}

/// How many connections wait in `listener`'s backlog (it never accepts
/// while the test runs): how many requests were started.
fn connections_made(listener: &TcpListener) -> usize {
    listener.set_nonblocking(true).unwrap();
    std::iter::from_fn(|| listener.accept().ok()).count()
}

#[test]
fn a_debuginfod_server_that_never_answers_is_named_and_the_profile_is_still_written() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize-debuginfod-hang");
    let program = &programs.pie;
    let input = dir.path().join("in.otlp.pb");
    let request = profile_with_build_id(program, dir.path());
    std::fs::write(&input, request.encode_to_vec()).unwrap();
    // Connections complete in the kernel's backlog; nothing ever answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let out = dir.path().join("out.otlp.pb");
    let run = symbolize(&[
        &input,
        Path::new("-o"),
        &out,
        Path::new("--root"),
        &dir.path().join("empty-root"),
        Path::new("--debuginfod"),
        Path::new(&url),
        Path::new("--debuginfod-read-timeout"),
        Path::new("0.3"),
        Path::new("--debuginfod-cache"),
        &dir.path().join("cache"),
    ])
    .output()
    .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let said = stderr(&run);
    assert!(said.contains("debuginfod_failed"), "{said}");
    assert_eq!(said.matches(&*url).count(), 1, "named once: {said}");
    assert_eq!(connections_made(&listener), 1);
    let written =
        ExportProfilesServiceRequest::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    assert_unsymbolized(&written, program);
}

/// An OTLP/HTTP receiver, the `symbolize` processor asking only a server
/// that never answers, and a file exporter: two exports are both
/// accepted and written, their frames left as addresses and counted as
/// `debuginfod_failed`; the server is named once in the log and asked
/// once (the processor keeps the outcome), and the collector shuts down
/// cleanly.
#[test]
fn serve_delivers_profiles_when_the_debuginfod_server_never_answers() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("serve-debuginfod-hang");
    let program = &programs.pie;
    let request = profile_with_build_id(program, dir.path());
    let body = request.encode_to_vec();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let config = format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  symbolize:\n    root: \"\"\n    debuginfod:\n      urls: {url}\n      \
         cache_dir: {}\n      read_timeout: 300ms\n\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      processors: [symbolize]\n      exporters: [file]\n  \
         telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
        dir.path().join("cache").display()
    );
    let collector = Collector::start_logged("serve-debuginfod-hang", &config);
    let http = collector.http.unwrap();
    for _ in 0..2 {
        let head = format!(
            "POST /v1development/profiles HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let (status, answer) = exchange(http, &head, &body);
        assert_eq!(status, 200, "{answer}");
    }
    let failed = 2 * locations_of(&request, program).len();
    wait_for_series(
        collector.telemetry.unwrap(),
        "profbridge_symbolize_misses_total{processor=\"symbolize\",reason=\"debuginfod_failed\"}",
        failed as f64,
    );
    let data = collector.data.clone();
    let log_before_stop = collector.log();
    let (status, run_dir) = collector.terminate();
    let log = std::fs::read_to_string(run_dir.path().join("stderr.log")).unwrap();
    assert!(status.success(), "{status:?}: {log_before_stop}\n{log}");
    let written: Vec<ExportProfilesServiceRequest> = files_under(&data, ".pb")
        .iter()
        .map(|path| ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap())
        .collect();
    assert_eq!(written.len(), 2, "{log}");
    for request in &written {
        assert_unsymbolized(request, program);
    }
    assert_eq!(log.matches(&*url).count(), 1, "named once: {log}");
    assert_eq!(connections_made(&listener), 1);
}

/// Scrapes `/metrics` until `series` (name and labels, as printed) reads
/// `wanted`: the pipeline processes after the receiver answers.
fn wait_for_series(telemetry: SocketAddr, series: &str, wanted: f64) {
    let mut metrics = String::new();
    for _ in 0..3000 {
        let (status, body) = get(telemetry, "/metrics");
        assert_eq!(status, 200);
        metrics = body;
        let value = metrics.lines().find_map(|line| {
            let (name, number) = line.rsplit_once(' ')?;
            (name == series).then(|| number.parse::<f64>().unwrap())
        });
        if value == Some(wanted) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{series} never read {wanted}:\n{metrics}");
}

/// A CA and a certificate for 127.0.0.1 it signed, as PEM files in `dir`:
/// `ca.pem`, `server.pem`, `server.key`.
fn certificates(dir: &Path) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "debuginfod test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), server.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
}

/// Python's `http.server` over TLS, serving a folder laid out as a
/// debuginfod server's paths (`buildid/HEX/executable`); 404 for the
/// rest. Its request log is a file; stopped when dropped.
struct HttpsServer {
    child: Child,
    url: String,
    log: PathBuf,
}

const HTTPS_SERVER: &str = r#"
import functools, http.server, ssl, sys
folder, cert, key = sys.argv[1:4]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

impl HttpsServer {
    fn start(python: &Path, served: &Path, certificates: &Path, log: PathBuf) -> Self {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(HTTPS_SERVER)
            .arg(served)
            .arg(certificates.join("server.pem"))
            .arg(certificates.join("server.key"))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let port: u16 = port.trim().parse().unwrap_or_else(|_| {
            panic!(
                "the https server did not start: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        Self {
            child,
            url: format!("https://127.0.0.1:{port}"),
            log,
        }
    }

    /// The `GET` lines of its log.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("\"GET "))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn symbolize_fetches_over_https_from_a_server_the_platform_roots_trust() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let Some(python) = venv_python("ssl", "Python's ssl module", PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize-debuginfod-https");
    let program = &programs.pie;
    let id = build_id(program);
    let served = dir.path().join("served");
    std::fs::create_dir_all(served.join("buildid").join(&id)).unwrap();
    std::fs::copy(program, served.join("buildid").join(&id).join("executable")).unwrap();
    certificates(dir.path());
    let server = HttpsServer::start(&python, &served, dir.path(), dir.path().join("https.log"));

    let input = dir.path().join("in.otlp.pb");
    std::fs::write(
        &input,
        profile_with_build_id(program, dir.path()).encode_to_vec(),
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out.otlp.pb");
    let run_with_roots = |ca_file: Option<&Path>| {
        let mut command = symbolize(&[
            &input,
            Path::new("-o"),
            &out,
            Path::new("--root"),
            &dir.path().join("empty-root"),
            Path::new("--debuginfod"),
            Path::new(&server.url),
            Path::new("--debuginfod-cache"),
            &cache,
        ]);
        command
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR");
        if let Some(ca_file) = ca_file {
            command.env("SSL_CERT_FILE", ca_file);
        }
        let run = command.output().unwrap();
        assert!(run.status.success(), "{}", stderr(&run));
        let written =
            ExportProfilesServiceRequest::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
        (stderr(&run), written)
    };

    // The machine's own roots do not trust the test CA: the certificate
    // is refused, the server named, the frames left as addresses.
    let (said, written) = run_with_roots(None);
    assert!(
        said.contains(&server.url) && said.contains("debuginfod_failed"),
        "{said}"
    );
    assert_unsymbolized(&written, program);
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    let ca_file = dir.path().join("ca.pem");
    let (said, written) = run_with_roots(Some(&ca_file));
    let (compared, inlined) = assert_matches_oracle(&written, program, program);
    assert!(
        compared >= 3 && inlined >= 1,
        "{compared} {inlined}: {said}"
    );
    assert_eq!(server.requests().len(), 1, "{:?}", server.requests());
    assert!(cache.join(&id).join("executable").is_file());

    // From the cache: the same frames, no request.
    let (said, written) = run_with_roots(Some(&ca_file));
    assert_matches_oracle(&written, program, program);
    assert_eq!(
        server.requests().len(),
        1,
        "{:?}: {said}",
        server.requests()
    );
}
