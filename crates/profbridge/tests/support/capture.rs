//! A destination that keeps each export as it came on the wire, before
//! anything decompresses it: gRPC `Export` (answered by tonic's own
//! generated server) and OTLP/HTTP `POST`s (answered 200, empty
//! protobuf). Forwarding tests compare what arrived with what was sent.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_server::{
    ProfilesService, ProfilesServiceServer,
};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, ExportProfilesServiceResponse};
use tonic::codec::CompressionEncoding;
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;

/// One export as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// `grpc` or `http`.
    pub transport: &'static str,
    /// `grpc-encoding` or `Content-Encoding`, `identity` when absent.
    pub encoding: String,
    /// gRPC: the frame's compressed flag.
    pub compressed_flag: Option<bool>,
    /// The message as on the wire: the gRPC frame's payload, or the body.
    pub message: Vec<u8>,
}

impl Captured {
    /// The protobuf, decompressed as `encoding` says.
    pub fn protobuf(&self) -> Vec<u8> {
        match self.encoding.as_str() {
            "identity" => self.message.clone(),
            "gzip" => {
                let mut out = Vec::new();
                flate2::read::MultiGzDecoder::new(self.message.as_slice())
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            "zstd" => zstd::stream::decode_all(self.message.as_slice()).unwrap(),
            other => panic!("an export compressed with {other}"),
        }
    }
}

pub struct Capture {
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    seen: Arc<Mutex<Vec<Captured>>>,
}

impl Capture {
    /// Starts both listeners; the gRPC one on `runtime`.
    pub fn start(runtime: &tokio::runtime::Runtime) -> Self {
        Self::start_at(runtime, "127.0.0.1:0")
    }

    /// [`Self::start`] with the gRPC listener on `grpc` (`host:port`).
    pub fn start_at(runtime: &tokio::runtime::Runtime, grpc: &str) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recording = Recording {
            inner: ProfilesServiceServer::new(Sink)
                .accept_compressed(CompressionEncoding::Gzip)
                .accept_compressed(CompressionEncoding::Zstd)
                .max_decoding_message_size(64 << 20),
            seen: Arc::clone(&seen),
        };
        let grpc = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(grpc).await.unwrap();
            let address = listener.local_addr().unwrap();
            tokio::spawn(
                tonic::transport::Server::builder()
                    .add_service(recording)
                    .serve_with_incoming(TcpIncoming::from(listener)),
            );
            address
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let http = listener.local_addr().unwrap();
        let keeping = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keeping = Arc::clone(&keeping);
                std::thread::spawn(move || serve_http(stream, &keeping));
            }
        });
        Self { grpc, http, seen }
    }

    /// Every export so far, in the order they arrived.
    pub fn seen(&self) -> Vec<Captured> {
        self.seen.lock().unwrap().clone()
    }
}

/// Answers every export OK.
struct Sink;

#[tonic::async_trait]
impl ProfilesService for Sink {
    async fn export(
        &self,
        _request: tonic::Request<ExportProfilesServiceRequest>,
    ) -> Result<tonic::Response<ExportProfilesServiceResponse>, tonic::Status> {
        Ok(tonic::Response::new(
            ExportProfilesServiceResponse::default(),
        ))
    }
}

/// Keeps each request's body, then hands it on to `inner` as it was.
#[derive(Clone)]
struct Recording<S> {
    inner: S,
    seen: Arc<Mutex<Vec<Captured>>>,
}

impl<S: NamedService> NamedService for Recording<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<tonic::body::Body>> for Recording<S>
where
    S: Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let mut inner = self.inner.clone();
        let seen = Arc::clone(&self.seen);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            assert!(body.len() >= 5, "a gRPC frame: {body:?}");
            let length = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
            assert_eq!(body.len(), 5 + length, "one message");
            seen.lock().unwrap().push(Captured {
                transport: "grpc",
                encoding: header(&parts.headers, "grpc-encoding"),
                compressed_flag: Some(body[0] == 1),
                message: body[5..].to_vec(),
            });
            let request = http::Request::from_parts(parts, tonic::body::Body::new(Full::new(body)));
            inner.call(request).await
        })
    }
}

fn header(headers: &http::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .map_or("identity", |value| value.to_str().unwrap())
        .to_owned()
}

/// HTTP/1.1 requests with a Content-Length, one after another on one
/// connection, each answered 200 with an empty protobuf response.
fn serve_http(stream: TcpStream, seen: &Mutex<Vec<Captured>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0;
        let mut encoding = "identity".to_owned();
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "content-encoding" => value.trim().clone_into(&mut encoding),
                _ => {}
            }
        }
        let mut message = vec![0; length];
        reader.read_exact(&mut message).unwrap();
        seen.lock().unwrap().push(Captured {
            transport: "http",
            encoding,
            compressed_flag: None,
            message,
        });
        writer
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
            )
            .unwrap();
    }
}

/// What Python's opentelemetry-proto makes of one protobuf request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Whether it is the same message as the one it is compared with.
    pub equal: bool,
    pub profiles: usize,
    pub samples: usize,
}

const DECODE: &str = r#"
import json, sys
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
)
def read(path):
    with open(path, "rb") as f:
        return ExportProfilesServiceRequest.FromString(f.read())
for line in sys.stdin:
    got_path, sent_path = line.split()
    got = read(got_path)
    profiles = [p for r in got.resource_profiles for s in r.scope_profiles for p in s.profiles]
    print(json.dumps({
        "equal": got == read(sent_path),
        "profiles": len(profiles),
        "samples": sum(len(p.samples) for p in profiles),
    }))
"#;

/// Decodes each `(got, sent)` pair of protobuf requests with Python's
/// opentelemetry-proto: `got`'s profiles and samples, and whether it is
/// the message `sent` is. `None` (after a loud note) without that Python.
pub fn independently_decoded(pairs: &[(Vec<u8>, Vec<u8>)]) -> Option<Vec<Decoded>> {
    let python = profbridge_testkit::venv_python(
        "opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2",
        "opentelemetry-proto",
        "decoding forwarded requests with an independent decoder",
    )?;
    let dir = profbridge_testkit::TempDir::new("decoded");
    let mut lines = String::new();
    for (i, (got, sent)) in pairs.iter().enumerate() {
        let got_path = dir.path().join(format!("{i}.got.pb"));
        let sent_path = dir.path().join(format!("{i}.sent.pb"));
        std::fs::write(&got_path, got).unwrap();
        std::fs::write(&sent_path, sent).unwrap();
        lines.push_str(&format!("{} {}\n", got_path.display(), sent_path.display()));
    }
    let mut child = std::process::Command::new(python)
        .args(["-c", DECODE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decoded: Vec<Decoded> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            Decoded {
                equal: value["equal"].as_bool().unwrap(),
                profiles: value["profiles"].as_u64().unwrap() as usize,
                samples: value["samples"].as_u64().unwrap() as usize,
            }
        })
        .collect();
    assert_eq!(decoded.len(), pairs.len());
    Some(decoded)
}
