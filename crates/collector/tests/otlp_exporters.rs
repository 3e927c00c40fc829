#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The OTLP exporters against the collector's own receivers (what the file
//! exporter behind them wrote must equal what was sent), and against tiny
//! fake servers for how failures are classified and that headers arrive.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use prost::Message;
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Request, Response, Status};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_server::{
    ProfilesService, ProfilesServiceServer,
};
use profbridge_collector::config::parse_yaml;
use profbridge_collector::config::units::Duration as ConfigDuration;
use profbridge_collector::exporters::helper::ExporterHelperConfig;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp::OtlpGrpcExporter;
use profbridge_collector::exporters::otlp_http::config::{Encoding, OtlpHttpExporterConfig};
use profbridge_collector::exporters::otlp_http::OtlpHttpExporter;
use profbridge_collector::exporters::{ExportCause, ExportError};
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::protocol::retry_info;
use profbridge_collector::service::{self, Running};
use profbridge_collector::settings::client::ClientSettings;
use profbridge_collector::settings::client::{Compression, TlsConfig};
use profbridge_testkit::{ebpf_like_request, TempDir};
use profbridge_translate::canonical::canonicalize;
use profbridge_translate::otlp::{
    ExportProfilesPartialSuccess, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};

const COMPRESSIONS: [Compression; 3] = [Compression::Gzip, Compression::Zstd, Compression::None];

fn batch(stacks: usize, seed: u64) -> Profiles {
    let request = ebpf_like_request(stacks, seed);
    let size = request.encoded_len();
    Profiles::new(request, size)
}

/// The collector with OTLP gRPC and HTTP receivers on free ports, writing
/// every request it accepts as an OTLP protobuf file.
struct Sink {
    running: Running,
    grpc: SocketAddr,
    http: SocketAddr,
    dir: TempDir,
}

impl Sink {
    async fn start(label: &str) -> Self {
        let dir = TempDir::new(label);
        let yaml = format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n      http:\n        endpoint: 127.0.0.1:0\n\
             exporters:\n  file:\n    path: {}\n    format: otlp\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
            dir.path().join("data").display()
        );
        let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
        let running = service::start(&config).await.unwrap();
        let address = |what: &str| {
            running
                .listening
                .iter()
                .find(|endpoint| endpoint.what.contains(what))
                .unwrap_or_else(|| panic!("no {what} in {:?}", running.listening))
                .address
        };
        Self {
            grpc: address("OTLP gRPC"),
            http: address("OTLP HTTP"),
            running,
            dir,
        }
    }

    /// Stops the collector, which writes everything accepted, and reads
    /// back the requests it wrote.
    async fn received(self) -> Vec<ExportProfilesServiceRequest> {
        assert!(self.running.shutdown(Duration::from_secs(60)).await);
        files_under(&self.dir.path().join("data"))
            .iter()
            .map(|path| {
                ExportProfilesServiceRequest::decode(&*std::fs::read(path).unwrap()).unwrap()
            })
            .collect()
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if !path.file_name().unwrap().to_string_lossy().starts_with('.') {
            files.push(path);
        }
    }
    files
}

/// Every batch sent arrived once, canonically equal.
fn assert_all_arrived(sent: &[Profiles], received: &[ExportProfilesServiceRequest], what: &str) {
    assert_eq!(received.len(), sent.len(), "{what}: requests written");
    let mut received: Vec<_> = received.iter().map(canonicalize).collect();
    for batch in sent {
        let expected = canonicalize(batch.request());
        let at = received
            .iter()
            .position(|r| *r == expected)
            .unwrap_or_else(|| panic!("{what}: a request sent was not written as sent"));
        received.remove(at);
    }
}

fn grpc_config(endpoint: String, compression: Compression) -> OtlpExporterConfig {
    OtlpExporterConfig {
        client: ClientSettings {
            endpoint,
            ..ClientSettings::default()
        },
        compression,
        helper: ExporterHelperConfig {
            timeout: ConfigDuration::from_secs(60),
            ..ExporterHelperConfig::default()
        },
    }
}

fn http_config(
    endpoint: String,
    encoding: Encoding,
    compression: Compression,
) -> OtlpHttpExporterConfig {
    OtlpHttpExporterConfig {
        client: ClientSettings {
            endpoint,
            ..ClientSettings::default()
        },
        encoding,
        compression,
        helper: ExporterHelperConfig {
            timeout: ConfigDuration::from_secs(60),
            ..ExporterHelperConfig::default()
        },
        ..OtlpHttpExporterConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_exports_arrive_as_sent_with_each_compression() {
    for (i, compression) in COMPRESSIONS.into_iter().enumerate() {
        let sink = Sink::start("otlp-grpc-roundtrip").await;
        // Both endpoint spellings: bare host:port and http://.
        let endpoint = if i % 2 == 0 {
            sink.grpc.to_string()
        } else {
            format!("http://{}", sink.grpc)
        };
        let exporter = OtlpGrpcExporter::new(&grpc_config(endpoint, compression)).unwrap();
        let sent = [batch(300, 1), batch(50, 2)];
        for batch in &sent {
            exporter.export(batch).await.unwrap();
        }
        assert_all_arrived(&sent, &sink.received().await, &format!("{compression:?}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_exports_arrive_as_sent_with_each_encoding_and_compression() {
    for encoding in [Encoding::Proto, Encoding::Json] {
        for compression in COMPRESSIONS {
            let sink = Sink::start("otlp-http-roundtrip").await;
            let config = http_config(format!("http://{}", sink.http), encoding, compression);
            let exporter = OtlpHttpExporter::new(&config).unwrap();
            let sent = [batch(300, 3), batch(50, 4)];
            for batch in &sent {
                exporter.export(batch).await.unwrap();
            }
            let what = format!("{encoding:?} {compression:?}");
            assert_all_arrived(&sent, &sink.received().await, &what);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_receiver_refuses_are_permanent_failures() {
    let sink = Sink::start("otlp-refused").await;
    let empty_profile = {
        let mut request = ebpf_like_request(10, 5);
        // A sample pointing past the stack table makes every profile invalid.
        for resource in &mut request.resource_profiles {
            for scope in &mut resource.scope_profiles {
                for profile in &mut scope.profiles {
                    for sample in &mut profile.samples {
                        sample.stack_index = 1_000_000;
                    }
                }
            }
        }
        let size = request.encoded_len();
        Profiles::new(request, size)
    };
    let grpc =
        OtlpGrpcExporter::new(&grpc_config(sink.grpc.to_string(), Compression::Gzip)).unwrap();
    let error = grpc.export(&empty_profile).await.unwrap_err();
    assert!(matches!(error, ExportError::Permanent(_)), "{error}");
    assert!(error.to_string().contains("InvalidArgument"), "{error}");
    let http = OtlpHttpExporter::new(&http_config(
        format!("http://{}", sink.http),
        Encoding::Json,
        Compression::Gzip,
    ))
    .unwrap();
    let error = http.export(&empty_profile).await.unwrap_err();
    assert!(matches!(error, ExportError::Permanent(_)), "{error}");
    assert!(error.to_string().contains("400"), "{error}");
    assert!(sink.received().await.is_empty());
}

// ---- a fake HTTP server ----

type SeenHeaders = Arc<Mutex<Vec<HeaderMap>>>;

/// Answers by path: `/unavailable` 503 with `Retry-After: 3`, `/bad` 400
/// with a JSON status, `/busy` 429, `/ok` 200 with a partial success;
/// records every request's headers.
async fn fake_http_server() -> (SocketAddr, SeenHeaders) {
    let seen: SeenHeaders = Arc::default();
    let record = |seen: SeenHeaders| {
        move |headers: HeaderMap| {
            seen.lock().unwrap().push(headers);
            std::future::ready(())
        }
    };
    let on = |seen: &SeenHeaders, reply: fn() -> axum::response::Response| {
        let record = record(Arc::clone(seen));
        post(move |headers: HeaderMap| async move {
            record(headers).await;
            reply()
        })
    };
    let app = axum::Router::new()
        .route(
            "/unavailable",
            on(&seen, || {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [("retry-after", "3")],
                    "full",
                )
                    .into_response()
            }),
        )
        .route(
            "/bad",
            on(&seen, || {
                (
                    StatusCode::BAD_REQUEST,
                    [("content-type", "application/json")],
                    r#"{"code":3,"message":"the profiles are malformed"}"#,
                )
                    .into_response()
            }),
        )
        .route(
            "/busy",
            on(&seen, || StatusCode::TOO_MANY_REQUESTS.into_response()),
        )
        .route(
            "/ok",
            on(&seen, || {
                let body = ExportProfilesServiceResponse {
                    partial_success: Some(ExportProfilesPartialSuccess {
                        rejected_profiles: 1,
                        error_message: "one was odd".to_owned(),
                    }),
                }
                .encode_to_vec();
                (
                    StatusCode::OK,
                    [("content-type", "application/x-protobuf")],
                    body,
                )
                    .into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, seen)
}

fn http_exporter(address: SocketAddr, path: &str) -> OtlpHttpExporter {
    OtlpHttpExporter::new(&OtlpHttpExporterConfig {
        profiles_endpoint: Some(format!("http://{address}{path}")),
        client: ClientSettings {
            headers: BTreeMap::from([
                ("authorization".to_owned(), "Bearer secret".to_owned()),
                ("X-Tenant".to_owned(), "team-a".to_owned()),
            ]),
            ..ClientSettings::default()
        },
        ..OtlpHttpExporterConfig::default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_failures_are_classified_and_headers_arrive() {
    let (address, seen) = fake_http_server().await;
    let small = batch(5, 6);

    let error = http_exporter(address, "/unavailable")
        .export(&small)
        .await
        .unwrap_err();
    match &error {
        ExportError::Retryable { cause, retry_after } => {
            assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
            let reason = cause.to_string();
            assert_eq!(*retry_after, Some(Duration::from_secs(3)));
            assert!(reason.contains("503"), "{reason}");
        }
        other => panic!("503 should be retryable: {other}"),
    }

    let error = http_exporter(address, "/bad")
        .export(&small)
        .await
        .unwrap_err();
    match &error {
        ExportError::Permanent(cause) => {
            assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
            let reason = cause.to_string();
            assert!(reason.contains("400"), "{reason}");
            assert!(reason.contains("the profiles are malformed"), "{reason}");
        }
        other => panic!("400 should be permanent: {other}"),
    }

    let error = http_exporter(address, "/busy")
        .export(&small)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ExportError::Retryable {
                retry_after: None,
                ..
            }
        ),
        "{error}"
    );

    // A partial success is a success.
    http_exporter(address, "/ok").export(&small).await.unwrap();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    for headers in seen.iter() {
        assert_eq!(headers["authorization"], "Bearer secret");
        assert_eq!(headers["x-tenant"], "team-a");
        assert_eq!(headers["content-type"], "application/x-protobuf");
        assert_eq!(headers["content-encoding"], "gzip");
    }
}

// ---- a fake gRPC server ----

/// Answers by the `x-reply` metadata: `unavailable` (with RetryInfo of
/// 2.5 s), `invalid`, `exhausted` (no RetryInfo), `exhausted-retry`
/// (RetryInfo of 1 s), anything else OK with a partial success. Records
/// every request's metadata.
#[derive(Default)]
struct FakeProfilesService {
    seen: Arc<Mutex<Vec<tonic::metadata::MetadataMap>>>,
}

fn with_retry_info(code: Code, message: &str, delay: Duration) -> Status {
    Status::with_details(
        code,
        message,
        retry_info::status_details(code as i32, message, delay).into(),
    )
}

#[tonic::async_trait]
impl ProfilesService for FakeProfilesService {
    async fn export(
        &self,
        request: Request<ExportProfilesServiceRequest>,
    ) -> Result<Response<ExportProfilesServiceResponse>, Status> {
        let reply = request
            .metadata()
            .get("x-reply")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        self.seen.lock().unwrap().push(request.metadata().clone());
        match reply.as_str() {
            "unavailable" => Err(with_retry_info(
                Code::Unavailable,
                "busy",
                Duration::from_millis(2500),
            )),
            "invalid" => Err(Status::invalid_argument("no such thing")),
            "exhausted" => Err(Status::resource_exhausted("too big")),
            "exhausted-retry" => Err(with_retry_info(
                Code::ResourceExhausted,
                "over quota",
                Duration::from_secs(1),
            )),
            _ => Ok(Response::new(ExportProfilesServiceResponse {
                partial_success: Some(ExportProfilesPartialSuccess {
                    rejected_profiles: 2,
                    error_message: "two were odd".to_owned(),
                }),
            })),
        }
    }
}

async fn fake_grpc_server() -> (SocketAddr, Arc<Mutex<Vec<tonic::metadata::MetadataMap>>>) {
    let service = FakeProfilesService::default();
    let seen = Arc::clone(&service.seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = ProfilesServiceServer::new(service)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
        .accept_compressed(tonic::codec::CompressionEncoding::Zstd);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(server)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    (address, seen)
}

fn grpc_exporter(address: SocketAddr, reply: &str) -> OtlpGrpcExporter {
    OtlpGrpcExporter::new(&OtlpExporterConfig {
        client: ClientSettings {
            endpoint: address.to_string(),
            headers: BTreeMap::from([
                ("x-reply".to_owned(), reply.to_owned()),
                ("authorization".to_owned(), "Bearer secret".to_owned()),
            ]),
            ..ClientSettings::default()
        },
        ..OtlpExporterConfig::default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_failures_are_classified_and_metadata_arrives() {
    let (address, seen) = fake_grpc_server().await;
    let small = batch(5, 7);

    match grpc_exporter(address, "unavailable")
        .export(&small)
        .await
        .unwrap_err()
    {
        ExportError::Retryable { cause, retry_after } => {
            assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
            let reason = cause.to_string();
            assert_eq!(retry_after, Some(Duration::from_millis(2500)));
            assert!(reason.contains("Unavailable"), "{reason}");
        }
        other => panic!("UNAVAILABLE should be retryable: {other}"),
    }
    let error = grpc_exporter(address, "invalid")
        .export(&small)
        .await
        .unwrap_err();
    assert!(matches!(error, ExportError::Permanent(_)), "{error}");
    let error = grpc_exporter(address, "exhausted")
        .export(&small)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExportError::Permanent(_)),
        "RESOURCE_EXHAUSTED without RetryInfo is permanent: {error}"
    );
    let error = grpc_exporter(address, "exhausted-retry")
        .export(&small)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ExportError::Retryable {
                retry_after: Some(d),
                ..
            } if d == Duration::from_secs(1)
        ),
        "RESOURCE_EXHAUSTED with RetryInfo is retryable: {error}"
    );
    // A partial success is a success.
    grpc_exporter(address, "ok").export(&small).await.unwrap();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 5);
    for metadata in seen.iter() {
        assert_eq!(metadata.get("authorization").unwrap(), "Bearer secret");
        assert_eq!(metadata.get("grpc-encoding").unwrap(), "gzip");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_and_silent_destinations_are_retryable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let small = batch(5, 8);
    let grpc = OtlpGrpcExporter::new(&grpc_config(closed.to_string(), Compression::Gzip)).unwrap();
    let error = grpc.export(&small).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    let http = OtlpHttpExporter::new(&http_config(
        format!("http://{closed}"),
        Encoding::Proto,
        Compression::Gzip,
    ))
    .unwrap();
    let error = http.export(&small).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(
        matches!(error.cause(), ExportCause::Unreachable { .. }),
        "{error:?}"
    );

    // Accepts connections and never answers: the attempt times out.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_address = silent.local_addr().unwrap();
    let short = ConfigDuration(Duration::from_millis(300));
    let grpc = OtlpGrpcExporter::new(&OtlpExporterConfig {
        helper: ExporterHelperConfig {
            timeout: short,
            ..ExporterHelperConfig::default()
        },
        ..grpc_config(silent_address.to_string(), Compression::Gzip)
    })
    .unwrap();
    let error = grpc.export(&small).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    let http = OtlpHttpExporter::new(&OtlpHttpExporterConfig {
        helper: ExporterHelperConfig {
            timeout: short,
            ..ExporterHelperConfig::default()
        },
        ..http_config(
            format!("http://{silent_address}"),
            Encoding::Proto,
            Compression::Gzip,
        )
    })
    .unwrap();
    let error = http.export(&small).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(
        matches!(error.cause(), ExportCause::NoReply { .. }),
        "{error:?}"
    );
    drop(silent);
}

#[test]
fn bad_configurations_are_refused_at_construction() {
    let grpc = |endpoint: &str, tls: TlsConfig| {
        OtlpGrpcExporter::new(&OtlpExporterConfig {
            client: ClientSettings {
                endpoint: endpoint.to_owned(),
                tls,
                ..ClientSettings::default()
            },
            ..OtlpExporterConfig::default()
        })
        .map(|_| ())
    };
    assert!(grpc("", TlsConfig::default()).is_err());
    assert!(grpc("localhost:4317/path", TlsConfig::default()).is_err());
    assert!(grpc("ftp://localhost:4317", TlsConfig::default()).is_err());
    let missing_ca = TlsConfig {
        ca_file: Some("/nonexistent/ca.pem".to_owned()),
        ..TlsConfig::default()
    };
    let error = grpc("localhost:4317", missing_ca.clone()).unwrap_err();
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
    assert!(grpc("http://localhost:4317", missing_ca).is_err());
    // TLS with the built-in roots needs no file.
    grpc("https://localhost:4317", TlsConfig::default()).unwrap();

    let bad_header = OtlpExporterConfig {
        client: ClientSettings {
            endpoint: "localhost:4317".to_owned(),
            headers: BTreeMap::from([("bad header".to_owned(), "v".to_owned())]),
            ..ClientSettings::default()
        },
        ..OtlpExporterConfig::default()
    };
    assert!(OtlpGrpcExporter::new(&bad_header).is_err());

    let http = |endpoint: &str| {
        OtlpHttpExporter::new(&OtlpHttpExporterConfig {
            client: ClientSettings {
                endpoint: endpoint.to_owned(),
                ..ClientSettings::default()
            },
            ..OtlpHttpExporterConfig::default()
        })
        .map(|exporter| exporter.url().to_string())
    };
    assert_eq!(
        http("https://example.com").unwrap(),
        "https://example.com/v1development/profiles"
    );
    assert!(http("").is_err());
}

#[test]
fn configurations_parse_from_yaml_with_defaults() {
    use profbridge_collector::config::units;
    let text = "endpoint: collector:4317\ncompression: zstd\ntimeout: 2s\nheaders:\n  x-key: v\ntls:\n  insecure: true\n";
    let value: OtlpExporterConfig = exporter_from_yaml("otlp", text);
    assert_eq!(value.client.endpoint, "collector:4317");
    assert_eq!(value.compression, Compression::Zstd);
    assert_eq!(value.helper.timeout, units::Duration::from_secs(2));
    assert_eq!(value.client.tls.insecure, Some(true));
    assert_eq!(value.client.headers["x-key"], "v");
    let http: OtlpHttpExporterConfig = exporter_from_yaml(
        "otlphttp",
        "endpoint: http://collector:4318\nencoding: json\ncompression: none\n",
    );
    assert_eq!(http.encoding, Encoding::Json);
    assert_eq!(http.compression, Compression::None);
    let refused = parse_yaml(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  otlp:\n    endpoint: a:1\n    retries: 3\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [otlp]\n",
        &std::collections::BTreeMap::new(),
    )
    .map(|_| ())
    .map_err(|errors| errors.to_string());
    assert!(
        refused
            .as_ref()
            .is_err_and(|message| message.contains("exporters.otlp.retries: unknown key")),
        "{refused:?}"
    );
    let defaults = OtlpHttpExporterConfig::default();
    assert_eq!(defaults.encoding, Encoding::Proto);
    assert_eq!(defaults.compression, Compression::Gzip);
    assert_eq!(defaults.helper.timeout, units::Duration::from_secs(5));
}

/// Deserializes one exporter's YAML section.
/// The options of a `kind` exporter written as `text`, read by the
/// collector's parser (which reads the embedded exporter helper's keys).
fn exporter_from_yaml<T: profbridge_collector::config::Options + Clone>(
    kind: &str,
    text: &str,
) -> T {
    let options: String = text.lines().map(|line| format!("    {line}\n")).collect();
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n\
         exporters:\n  {kind}:\n{options}\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{kind}]\n"
    );
    let config =
        parse_yaml(&yaml, &std::collections::BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    config.exporters[0].1.options::<T>().unwrap().clone()
}

// ---- TLS ----

/// A CA, and PEM certificates and keys it signed for a server (localhost)
/// and a client, written under a folder.
struct Pki {
    dir: TempDir,
    server: (String, String),
}

impl Pki {
    fn new() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair,
        };
        let dir = TempDir::new("otlp-tls");
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "profbridge test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let server = leaf(
            vec!["localhost".to_owned()],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let client = leaf(
            vec!["profbridge-client".to_owned()],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("client.pem"), &client.0).unwrap();
        std::fs::write(dir.path().join("client.key"), &client.1).unwrap();
        Self { dir, server }
    }

    fn file(&self, name: &str) -> Option<String> {
        Some(self.dir.path().join(name).to_str().unwrap().to_owned())
    }

    /// Trusts the CA and presents the client certificate.
    fn client_tls(&self) -> TlsConfig {
        TlsConfig {
            ca_file: self.file("ca.pem"),
            cert_file: self.file("client.pem"),
            key_file: self.file("client.key"),
            ..TlsConfig::default()
        }
    }
}

/// The fake gRPC service over TLS, requiring client certificates signed by
/// the CA.
async fn fake_grpc_tls_server(pki: &Pki) -> SocketAddr {
    use tonic::transport::{Certificate, Identity, ServerTlsConfig};
    let ca = std::fs::read(pki.dir.path().join("ca.pem")).unwrap();
    let tls = ServerTlsConfig::new()
        .identity(Identity::from_pem(&pki.server.0, &pki.server.1))
        .client_ca_root(Certificate::from_pem(ca));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tonic::transport::Server::builder()
        .tls_config(tls)
        .unwrap()
        .add_service(
            ProfilesServiceServer::new(FakeProfilesService::default())
                .accept_compressed(tonic::codec::CompressionEncoding::Gzip),
        )
        .serve_with_incoming(TcpIncoming::from(listener));
    tokio::spawn(server);
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_exports_over_mutual_tls() {
    let pki = Pki::new();
    let address = fake_grpc_tls_server(&pki).await;
    let small = batch(5, 9);
    let export = |endpoint: String, tls: TlsConfig| {
        let exporter = OtlpGrpcExporter::new(&OtlpExporterConfig {
            client: ClientSettings {
                endpoint,
                tls,
                ..ClientSettings::default()
            },
            ..OtlpExporterConfig::default()
        })
        .unwrap();
        let small = &small;
        async move { exporter.export(small).await }
    };
    let port = address.port();
    export(format!("https://localhost:{port}"), pki.client_tls())
        .await
        .unwrap();
    // No scheme: the TLS files ask for TLS.
    export(format!("localhost:{port}"), pki.client_tls())
        .await
        .unwrap();
    let no_client_certificate = TlsConfig {
        ca_file: pki.file("ca.pem"),
        ..TlsConfig::default()
    };
    // TLS 1.3 servers refuse a client after the handshake: how the refusal
    // reads depends on timing.
    export(format!("https://localhost:{port}"), no_client_certificate)
        .await
        .unwrap_err();
    let error = export(format!("https://localhost:{port}"), TlsConfig::default())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("certificate"), "{error}");
    export(format!("http://localhost:{port}"), TlsConfig::default())
        .await
        .unwrap_err();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_exports_over_mutual_tls() {
    // tonic's TLS server stands in for an HTTPS server: it answers any
    // POST once the handshake has succeeded.
    let pki = Pki::new();
    let address = fake_grpc_tls_server(&pki).await;
    let small = batch(5, 10);
    let export = |tls: TlsConfig| {
        let exporter = OtlpHttpExporter::new(&OtlpHttpExporterConfig {
            client: ClientSettings {
                endpoint: format!("https://localhost:{}", address.port()),
                tls,
                ..ClientSettings::default()
            },
            ..OtlpHttpExporterConfig::default()
        })
        .unwrap();
        let small = &small;
        async move { exporter.export(small).await }
    };
    export(pki.client_tls()).await.unwrap();
    let skip_verify = TlsConfig {
        insecure_skip_verify: true,
        cert_file: pki.file("client.pem"),
        key_file: pki.file("client.key"),
        ..TlsConfig::default()
    };
    export(skip_verify).await.unwrap();
    let error = export(TlsConfig::default()).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(error.to_string().contains("certificate"), "{error}");
    let no_client_certificate = TlsConfig {
        ca_file: pki.file("ca.pem"),
        ..TlsConfig::default()
    };
    // TLS 1.3 servers refuse a client after the handshake: how the refusal
    // reads depends on timing.
    export(no_client_certificate).await.unwrap_err();
}

#[test]
fn header_values_stay_out_of_debug_output() {
    let headers = BTreeMap::from([("authorization".to_owned(), "Bearer s3cr3t".to_owned())]);
    let grpc = OtlpGrpcExporter::new(&OtlpExporterConfig {
        client: ClientSettings {
            endpoint: "localhost:4317".to_owned(),
            headers: headers.clone(),
            ..ClientSettings::default()
        },
        ..OtlpExporterConfig::default()
    })
    .unwrap();
    let http = OtlpHttpExporter::new(&OtlpHttpExporterConfig {
        client: ClientSettings {
            endpoint: "localhost:4318".to_owned(),
            headers,
            ..ClientSettings::default()
        },
        ..OtlpHttpExporterConfig::default()
    })
    .unwrap();
    assert!(!format!("{grpc:?}").contains("s3cr3t"));
    assert!(!format!("{http:?}").contains("s3cr3t"));
}
