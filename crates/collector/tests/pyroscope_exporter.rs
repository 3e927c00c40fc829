#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The Pyroscope exporter against a small server that implements both of
//! Pyroscope's APIs as Pyroscope documents and parses them: `/ingest`
//! (`name`: application name and `{k=v,…}` labels, read without escapes;
//! `from` and `until` in Unix seconds; `format=pprof` with the pprof as the
//! body, or, without `format`, a multipart form with a `profile` part) and
//! the push API (`POST /push.v1.PusherService/Push`, a Connect protobuf
//! `PushRequest` decoded with the field numbers of Pyroscope's schema,
//! Connect errors). What arrives must decode to pprof with the totals of
//! what was exported. Most tests run against both APIs.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use prost::Message;

use profbridge_collector::config::units::Duration as ConfigDuration;
use profbridge_collector::config::{load, parse_yaml};
use profbridge_collector::exporters::helper::ExporterHelperConfig;
use profbridge_collector::exporters::pyroscope::config::{
    BasicAuthConfig, PyroscopeApi, PyroscopeExporterConfig,
};
use profbridge_collector::exporters::pyroscope::PyroscopeExporter;
use profbridge_collector::exporters::{ExportCause, ExportError};
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::protocol::push_v1::{LabelPair, PushRequest, PUSH_PATH};
use profbridge_collector::service;
use profbridge_collector::settings::client::ClientSettings;
use profbridge_pprof::{decode, encode, parse_any, DecodeOptions, EncodeOptions};
use profbridge_testkit::{corpus_files, ebpf_like_request};
use profbridge_translate::otlp::{
    any_value, key_value, string_value, ExportProfilesServiceRequest, KeyValue,
};
use profbridge_translate::{
    otlp_to_pprof, pprof_to_otlp, PprofInput, ToOtlpOptions, ToPprofOptions,
};

/// 2026-11-21 06:15:00 UTC.
const RECEIVED_SECS: u64 = 1_795_241_700;

// ---- the fake Pyroscope ----

/// How the fake server answers every push.
#[derive(Debug, Clone, Copy)]
enum Reply {
    Ok,
    /// 503 with `Retry-After: 7`.
    Unavailable,
    /// 400 with a text message, as Pyroscope's ingest handler answers.
    Malformed,
    /// 408 with a text message, as Pyroscope's ingest handler answers when
    /// it cannot read the body, and a proxy in front of the push API may.
    RequestTimeout,
}

/// One profile the server took, as Pyroscope would read it.
#[derive(Debug)]
struct Ingest {
    api: PyroscopeApi,
    application: String,
    /// `/ingest`: the labels of `name`; push: every label of the series
    /// but `service_name`.
    labels: BTreeMap<String, String>,
    /// `/ingest`: the query; push: empty.
    query: BTreeMap<String, String>,
    /// Push: the series' labels as sent, in order.
    series_labels: Vec<LabelPair>,
    headers: HeaderMap,
    profile: profbridge_pprof::Profile,
}

impl Ingest {
    fn number(&self, key: &str) -> u64 {
        self.query[key].parse().unwrap()
    }

    /// `/ingest`: `name`; push: the same shape made of the series' labels
    /// (but `__name__` and `pyroscope_spy`), in the order sent.
    fn name(&self) -> String {
        match self.api {
            PyroscopeApi::Ingest => self.query["name"].clone(),
            PyroscopeApi::Push => {
                let labels: Vec<String> = self
                    .series_labels
                    .iter()
                    .filter(|l| {
                        !["__name__", "service_name", "pyroscope_spy"].contains(&l.name.as_str())
                    })
                    .map(|l| format!("{}={}", l.name, l.value))
                    .collect();
                format!("{}{{{}}}", self.application, labels.join(","))
            }
        }
    }
}

type Ingests = Arc<Mutex<Vec<Ingest>>>;

async fn fake_pyroscope(reply: Reply) -> (SocketAddr, Ingests) {
    let ingests: Ingests = Arc::default();
    let recorded = Arc::clone(&ingests);
    let pushed = Arc::clone(&ingests);
    let app = axum::Router::new()
        .route(
            "/ingest",
            post(move |uri: Uri, headers: HeaderMap, body: Bytes| {
                let recorded = Arc::clone(&recorded);
                async move { ingest(&recorded, reply, &uri, headers, &body) }
            }),
        )
        .route(
            PUSH_PATH,
            post(move |headers: HeaderMap, body: Bytes| {
                let recorded = Arc::clone(&pushed);
                async move { push(&recorded, reply, headers, &body) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, ingests)
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

/// 408 with a text body: no Connect error in it.
fn request_timeout() -> Response {
    (StatusCode::REQUEST_TIMEOUT, "the body did not arrive").into_response()
}

/// A Connect error as Pyroscope's Connect handlers answer it.
fn connect_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({ "code": code, "message": message }).to_string();
    (status, [("content-type", "application/json")], body).into_response()
}

/// The push API as Pyroscope's distributor reads it: a protobuf
/// `PushRequest` (Content-Type `application/proto`), each raw profile a
/// pprof, gzipped or not; any profile it cannot read fails the whole
/// request with `invalid_argument`; a series without `service_name` is
/// `unspecified`.
fn push(ingests: &Ingests, reply: Reply, headers: HeaderMap, body: &[u8]) -> Response {
    match reply {
        Reply::Ok => {}
        Reply::Unavailable => {
            let mut response = connect_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "ingesters are busy",
            );
            response
                .headers_mut()
                .insert("retry-after", "7".parse().unwrap());
            return response;
        }
        Reply::Malformed => {
            return connect_error(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "failed to parse pprof: proto: illegal wireType 7",
            )
        }
        Reply::RequestTimeout => return request_timeout(),
    }
    if headers.get("content-type").map(|v| v.as_bytes()) != Some(b"application/proto") {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "not application/proto").into_response();
    }
    let request = match PushRequest::decode(body) {
        Ok(request) => request,
        Err(error) => {
            return connect_error(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                &error.to_string(),
            )
        }
    };
    let mut taken = Vec::new();
    for series in &request.series {
        let application = series
            .labels
            .iter()
            .find(|l| l.name == "service_name")
            .map_or_else(|| "unspecified".to_owned(), |l| l.value.clone());
        let labels: BTreeMap<String, String> = series
            .labels
            .iter()
            .filter(|l| l.name != "service_name")
            .map(|l| (l.name.clone(), l.value.clone()))
            .collect();
        if labels.len() + 1 != series.labels.len() {
            return connect_error(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "duplicate label name",
            );
        }
        for sample in &series.samples {
            let profile = match decode(&sample.raw_profile, &DecodeOptions::default()) {
                Ok(profile) => profile,
                Err(error) => {
                    return connect_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_argument",
                        &format!("invalid pprof: {error}"),
                    )
                }
            };
            taken.push(Ingest {
                api: PyroscopeApi::Push,
                application: application.clone(),
                labels: labels.clone(),
                query: BTreeMap::new(),
                series_labels: series.labels.clone(),
                headers: headers.clone(),
                profile,
            });
        }
    }
    if taken.is_empty() {
        return connect_error(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "no profiles received",
        );
    }
    ingests.lock().unwrap().extend(taken);
    (StatusCode::OK, [("content-type", "application/proto")], "").into_response()
}

fn ingest(ingests: &Ingests, reply: Reply, uri: &Uri, headers: HeaderMap, body: &[u8]) -> Response {
    match reply {
        Reply::Ok => {}
        Reply::Unavailable => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [("retry-after", "7")],
                "ingesters are busy",
            )
                .into_response()
        }
        Reply::Malformed => {
            return bad_request("failed to parse pprof: proto: illegal wireType 7".to_owned())
        }
        Reply::RequestTimeout => return request_timeout(),
    }
    let url = reqwest::Url::parse(&format!("http://fake{uri}")).unwrap();
    let query: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    let (application, labels) = match parse_name(query.get("name").map_or("", String::as_str)) {
        Ok(parsed) => parsed,
        Err(message) => return bad_request(format!("name: {message}")),
    };
    for key in ["from", "until"] {
        if query.get(key).and_then(|v| v.parse::<u64>().ok()).is_none() {
            return bad_request(format!("{key} is not Unix seconds"));
        }
    }
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    // Pyroscope's order: format=pprof reads the whole body as the profile;
    // a multipart form is only looked for without a format it knows.
    let profile = if query.get("format").map(String::as_str) == Some("pprof") {
        body.to_vec()
    } else if content_type.contains("multipart/form-data") {
        match form_part(&content_type, body, "profile") {
            Some(part) => part,
            None => return bad_request("no profile part in the form".to_owned()),
        }
    } else {
        return bad_request("this server only takes pprof".to_owned());
    };
    let profile = match decode(&profile, &DecodeOptions::default()) {
        Ok(profile) => profile,
        Err(error) => return bad_request(format!("invalid pprof: {error}")),
    };
    ingests.lock().unwrap().push(Ingest {
        api: PyroscopeApi::Ingest,
        application,
        labels,
        query,
        series_labels: Vec::new(),
        headers,
        profile,
    });
    StatusCode::OK.into_response()
}

/// `name` read as Pyroscope's label-set parser reads it (the application
/// name up to `{`; then a key up to `=`, a value up to `,` or `}`, each
/// trimmed; a `}` where a key starts ends the set), with its checks, and
/// the Prometheus rules its storage holds label names to.
fn parse_name(name: &str) -> Result<(String, BTreeMap<String, String>), String> {
    let (application, rest) = name.split_once('{').unwrap_or((name, ""));
    let application = application.trim();
    if application.is_empty() {
        return Err("service name is required".to_owned());
    }
    if let Some(c) = application
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-/".contains(*c)))
    {
        return Err(format!(
            "invalid service name: character is not allowed: {c:?}"
        ));
    }
    let mut labels = BTreeMap::new();
    let (mut key, mut value, mut in_value) = (String::new(), String::new(), false);
    for c in rest.chars() {
        match (in_value, c) {
            (false, '}') => break,
            (false, '=') => {
                in_value = true;
                value.clear();
            }
            (false, c) => key.push(c),
            (true, ',' | '}') => {
                let name = key.trim().to_owned();
                let prometheus = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !prometheus || name.starts_with("__") {
                    return Err(format!("invalid label name: {name:?}"));
                }
                if labels
                    .insert(name.clone(), value.trim().to_owned())
                    .is_some()
                {
                    return Err(format!("duplicate label name: {name:?}"));
                }
                key.clear();
                in_value = false;
            }
            (true, c) => value.push(c),
        }
    }
    Ok((application.to_owned(), labels))
}

/// The content of the multipart form part named `field`.
fn form_part(content_type: &str, body: &[u8], field: &str) -> Option<Vec<u8>> {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let delimiter = format!("--{boundary}");
    let mut parts = split_bytes(body, delimiter.as_bytes());
    parts.remove(0); // the preamble
    for part in parts {
        if part.starts_with(b"--") {
            break; // the closing delimiter
        }
        let part = part.strip_prefix(b"\r\n")?;
        let end = find(part, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&part[..end]).to_ascii_lowercase();
        let content = &part[end + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        if head.contains(&format!("name=\"{field}\"")) {
            return Some(content.to_vec());
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split_bytes<'a>(mut bytes: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    while let Some(at) = find(bytes, delimiter) {
        pieces.push(&bytes[..at]);
        bytes = &bytes[at + delimiter.len()..];
    }
    pieces.push(bytes);
    pieces
}

// ---- what was sent, and what arrived ----

/// Totals by application name, sample type and unit.
type Totals = BTreeMap<(String, String, String), i64>;

fn text(value: &KeyValue) -> Option<String> {
    match value.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// What an OTLP request holds, summed independently of the translator:
/// each profile's values (a sample without values counts one per
/// timestamp), by its resource's `service.name` and its sample type.
/// Profiles without samples are left out: they are not pushed.
fn sent_totals(request: &ExportProfilesServiceRequest) -> Totals {
    let dictionary = request.dictionary.as_ref().unwrap();
    let string = |index: i32| dictionary.string_table[usize::try_from(index).unwrap()].clone();
    let mut totals = Totals::new();
    for resource in &request.resource_profiles {
        let service = resource
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(text)
            .unwrap_or_else(|| "unknown_service".to_owned());
        for profile in resource.scope_profiles.iter().flat_map(|s| &s.profiles) {
            if profile.samples.is_empty() {
                continue;
            }
            let sample_type = profile.sample_type.unwrap_or_default();
            let key = (
                service.clone(),
                string(sample_type.type_strindex),
                string(sample_type.unit_strindex),
            );
            let sum: i64 = profile
                .samples
                .iter()
                .map(|sample| {
                    if sample.values.is_empty() {
                        i64::try_from(sample.timestamps_unix_nano.len()).unwrap()
                    } else {
                        sample.values.iter().sum()
                    }
                })
                .sum();
            *totals.entry(key).or_default() += sum;
        }
    }
    totals
}

/// The totals of the pprofs that arrived, by the application they came
/// under.
fn received_totals(ingests: &[Ingest]) -> Totals {
    let mut totals = Totals::new();
    for ingest in ingests {
        let profile = &ingest.profile;
        let string = |index: i64| profile.string_table[usize::try_from(index).unwrap()].clone();
        for (column, sample_type) in profile.sample_type.iter().enumerate() {
            let key = (
                ingest.application.clone(),
                string(sample_type.r#type),
                string(sample_type.unit),
            );
            let sum: i64 = profile.sample.iter().map(|s| s.value[column]).sum();
            *totals.entry(key).or_default() += sum;
        }
    }
    totals
}

/// The window a push must name: from the second the profile starts in to
/// the one its end falls in (rounded up), at least a second; without a
/// time, ending at the batch's receipt.
fn expected_window(time_nanos: i64, duration_nanos: i64) -> (u64, u64) {
    let nanos = 1_000_000_000_u64;
    let duration = duration_nanos.max(0) as u64;
    let (from, until) = if time_nanos > 0 {
        let start = time_nanos as u64;
        (start / nanos, (start + duration).div_ceil(nanos))
    } else {
        (RECEIVED_SECS - duration.div_ceil(nanos), RECEIVED_SECS)
    };
    (from, until.max(from + 1))
}

/// What every push must carry besides its profile: for `/ingest`,
/// `format=pprof`, `spyName` and the time window; for the push API, the
/// Connect headers, a `__name__`, `pyroscope_spy`, and a time in the pprof.
fn assert_query(ingest: &Ingest) {
    let profile = &ingest.profile;
    if ingest.api == PyroscopeApi::Push {
        assert_eq!(ingest.headers["content-type"], "application/proto");
        assert_eq!(ingest.headers["connect-protocol-version"], "1");
        assert_eq!(ingest.series_labels[0].name, "__name__");
        assert_eq!(ingest.series_labels[1].name, "service_name");
        assert_eq!(ingest.labels["pyroscope_spy"], "profbridge");
        assert!(profile.time_nanos > 0);
        return;
    }
    assert_eq!(ingest.query["format"], "pprof");
    assert_eq!(ingest.query["spyName"], "profbridge");
    let window = expected_window(profile.time_nanos, profile.duration_nanos);
    assert_eq!(
        (ingest.number("from"), ingest.number("until")),
        window,
        "{}: time {} duration {}",
        ingest.query["name"],
        profile.time_nanos,
        profile.duration_nanos
    );
    assert_eq!(ingest.headers["content-type"], "application/octet-stream");
}

/// The labels Pyroscope gets besides those of the resource: `__name__`
/// and `pyroscope_spy` for the push API, none for `/ingest`.
fn with_own_labels(
    api: PyroscopeApi,
    name: &str,
    labels: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    if api == PyroscopeApi::Push {
        all.insert("__name__".to_owned(), name.to_owned());
        all.insert("pyroscope_spy".to_owned(), "profbridge".to_owned());
    }
    all
}

const APIS: [PyroscopeApi; 2] = [PyroscopeApi::Push, PyroscopeApi::Ingest];

fn batch(request: ExportProfilesServiceRequest) -> Profiles {
    let size = request.encoded_len();
    let mut batch = Profiles::new(request, size);
    batch.received_at = UNIX_EPOCH + Duration::from_secs(RECEIVED_SECS);
    batch
}

fn config(address: SocketAddr, api: PyroscopeApi) -> PyroscopeExporterConfig {
    PyroscopeExporterConfig {
        client: ClientSettings {
            endpoint: format!("http://{address}"),
            ..ClientSettings::default()
        },
        api,
        helper: ExporterHelperConfig {
            timeout: ConfigDuration::from_secs(60),
            ..ExporterHelperConfig::default()
        },
        ..PyroscopeExporterConfig::default()
    }
}

fn with_resource_attributes(
    mut request: ExportProfilesServiceRequest,
    attributes: &[(&str, &str)],
) -> ExportProfilesServiceRequest {
    for resource in &mut request.resource_profiles {
        let resource = resource.resource.get_or_insert_with(Default::default);
        for (key, value) in attributes {
            resource
                .attributes
                .push(key_value(*key, string_value(*value)));
        }
    }
    request
}

// ---- the exporter ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ebpf_like_profiles_arrive_named_with_their_labels_window_and_totals() {
    for api in APIS {
        let (address, ingests) = fake_pyroscope(Reply::Ok).await;
        let exporter = PyroscopeExporter::new(&config(address, api)).unwrap();
        let path = if api == PyroscopeApi::Push {
            PUSH_PATH
        } else {
            "/ingest"
        };
        assert_eq!(exporter.url().as_str(), format!("http://{address}{path}"));
        let request = with_resource_attributes(
            ebpf_like_request(300, 1),
            &[
                ("host.name", "node-7"),
                ("k8s.pod.name", "not-a-label"),
                ("deployment.environment", " prod "),
            ],
        );
        let sent = sent_totals(&request);
        exporter.export(&batch(request)).await.unwrap();

        let ingests = ingests.lock().unwrap();
        assert_eq!(ingests.len(), 1, "{api:?}");
        let ingest = &ingests[0];
        // Configured order: service.namespace (absent), deployment.environment,
        // host.name.
        assert_eq!(
            ingest.name(),
            "checkout{deployment_environment=prod,host_name=node-7}"
        );
        assert_eq!(ingest.application, "checkout");
        assert_eq!(
            ingest.labels,
            with_own_labels(
                api,
                "process_cpu",
                &[("deployment_environment", "prod"), ("host_name", "node-7")]
            )
        );
        assert_query(ingest);
        assert!(ingest.profile.time_nanos > 0);
        if api == PyroscopeApi::Ingest {
            assert_eq!(ingest.number("until") - ingest.number("from"), 60);
        }
        assert_eq!(received_totals(&ingests), sent, "{api:?}");
    }
}

/// Every corpus file as its own resource of one request, with labels that
/// need cleaning up; each pushed pprof must have its file's totals. The
/// push API takes the whole request in one call, a series per pprof.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_profiles_arrive_with_their_totals() {
    let files = corpus_files();
    if files.is_empty() {
        return; // corpus absent: corpus_dir() said so.
    }
    let profiles: Vec<_> = files
        .iter()
        .map(|file| parse_any(&file.bytes, &DecodeOptions::default()).unwrap().0)
        .collect();
    let resources: Vec<Vec<KeyValue>> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            vec![
                key_value(
                    "service.name",
                    string_value(format!("corpus/{}", file.name)),
                ),
                key_value("service.namespace", string_value("shop")),
                key_value("host.name", string_value(format!(" host {i},rack}} "))),
            ]
        })
        .collect();
    let inputs: Vec<PprofInput<'_>> = profiles
        .iter()
        .zip(&resources)
        .map(|(profile, resource_attributes)| PprofInput {
            profile,
            resource_attributes,
            scope: None,
            original_payload: None,
        })
        .collect();
    let converted = pprof_to_otlp(&inputs, &ToOtlpOptions::default());
    assert!(converted.rejected.is_empty(), "{:?}", converted.rejected);
    let request = converted.request;
    let sent = sent_totals(&request);

    for api in APIS {
        let (address, ingests) = fake_pyroscope(Reply::Ok).await;
        let exporter = PyroscopeExporter::new(&config(address, api)).unwrap();
        exporter.export(&batch(request.clone())).await.unwrap();

        let ingests = ingests.lock().unwrap();
        let with_samples = profiles.iter().filter(|p| !p.sample.is_empty()).count();
        assert_eq!(ingests.len(), with_samples);
        for ingest in ingests.iter() {
            let i = files
                .iter()
                .position(|file| format!("corpus/{}", file.name) == ingest.application)
                .unwrap_or_else(|| panic!("{} is no corpus file", ingest.application));
            // Only `name` needs `,` and `}` written otherwise.
            let host = match api {
                PyroscopeApi::Ingest => format!("host {i}_rack_"),
                PyroscopeApi::Push => format!("host {i},rack}}"),
            };
            let mut expected = ingest.labels.clone();
            expected.retain(|k, _| k == "__name__" || k == "pyroscope_spy");
            expected.insert("service_namespace".to_owned(), "shop".to_owned());
            expected.insert("host_name".to_owned(), host);
            assert_eq!(ingest.labels, expected, "{}", ingest.name());
            assert_query(ingest);
            if profiles[i].time_nanos != 0 {
                assert_eq!(ingest.profile.time_nanos, profiles[i].time_nanos);
            }
        }
        assert_eq!(received_totals(&ingests), sent, "{api:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_fall_back_and_take_the_configured_attributes() {
    for api in APIS {
        let (address, ingests) = fake_pyroscope(Reply::Ok).await;
        let mut request = ebpf_like_request(20, 2);
        request.resource_profiles[0].resource = None;
        let exporter = PyroscopeExporter::new(&config(address, api)).unwrap();
        exporter.export(&batch(request)).await.unwrap();

        let request = with_resource_attributes(
            ebpf_like_request(20, 3),
            &[("k8s.deployment.name", "cart api"), ("team", "payments")],
        );
        let exporter = PyroscopeExporter::new(&PyroscopeExporterConfig {
            application_name_attribute: "k8s.deployment.name".to_owned(),
            labels_from_resource_attributes: vec!["team".to_owned(), "9.zone".to_owned()],
            ..config(address, api)
        })
        .unwrap();
        exporter.export(&batch(request)).await.unwrap();

        let ingests = ingests.lock().unwrap();
        let names: Vec<String> = ingests.iter().map(Ingest::name).collect();
        assert_eq!(
            names,
            ["unknown_service{}", "cart_api{team=payments}"],
            "{api:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_samples_push_nothing() {
    for api in APIS {
        let (address, ingests) = fake_pyroscope(Reply::Ok).await;
        let exporter = PyroscopeExporter::new(&config(address, api)).unwrap();
        exporter
            .export(&batch(ExportProfilesServiceRequest::default()))
            .await
            .unwrap();
        let mut request = ebpf_like_request(10, 4);
        request.resource_profiles[0].scope_profiles[0].profiles[0]
            .samples
            .clear();
        exporter.export(&batch(request)).await.unwrap();
        assert!(ingests.lock().unwrap().is_empty());
    }
}

/// The error an export of a small batch gets from a server that answers
/// `reply`.
async fn export_error(reply: Reply, api: PyroscopeApi) -> ExportError {
    let (address, _) = fake_pyroscope(reply).await;
    PyroscopeExporter::new(&config(address, api))
        .unwrap()
        .export(&batch(ebpf_like_request(5, 5)))
        .await
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_classified_with_the_servers_words() {
    let small = batch(ebpf_like_request(5, 5));
    for api in APIS {
        let error = export_error(Reply::Unavailable, api).await;
        match &error {
            ExportError::Retryable { cause, retry_after } => {
                assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
                let reason = cause.to_string();
                assert_eq!(*retry_after, Some(Duration::from_secs(7)));
                assert!(reason.contains("503"), "{reason}");
                assert!(reason.contains("ingesters are busy"), "{reason}");
            }
            other => panic!("503 should be retryable: {other}"),
        }

        let error = export_error(Reply::Malformed, api).await;
        match &error {
            ExportError::Permanent(cause) => {
                assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
                let reason = cause.to_string();
                assert!(reason.contains("400"), "{reason}");
                assert!(reason.contains("illegal wireType 7"), "{reason}");
                let named = match api {
                    PyroscopeApi::Ingest => "checkout{}",
                    PyroscopeApi::Push => "invalid_argument) to a push of 1 series (checkout)",
                };
                assert!(reason.contains(named), "{reason}");
            }
            other => panic!("400 should be permanent: {other}"),
        }

        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        };
        let error = PyroscopeExporter::new(&config(closed, api))
            .unwrap()
            .export(&small)
            .await
            .unwrap_err();
        assert!(error.is_retryable(), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_timeout_is_permanent_as_for_otlp_http() {
    for api in APIS {
        let error = export_error(Reply::RequestTimeout, api).await;
        match &error {
            ExportError::Permanent(cause) => {
                assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
                let reason = cause.to_string();
                assert!(reason.contains("408"), "{reason}");
                assert!(reason.contains("the body did not arrive"), "{reason}");
            }
            other => panic!("408 should be permanent ({api:?}): {other}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_tenant_and_basic_auth_arrive() {
    for api in APIS {
        let (address, ingests) = fake_pyroscope(Reply::Ok).await;
        let small = batch(ebpf_like_request(5, 6));
        PyroscopeExporter::new(&PyroscopeExporterConfig {
            tenant_id: Some("tenant-1".to_owned()),
            basic_auth: Some(BasicAuthConfig {
                username: "profbridge".to_owned(),
                password: "s3cret".to_owned(),
            }),
            client: ClientSettings {
                headers: BTreeMap::from([("X-Team".to_owned(), "payments".to_owned())]),
                ..config(address, api).client
            },
            ..config(address, api)
        })
        .unwrap()
        .export(&small)
        .await
        .unwrap();
        PyroscopeExporter::new(&PyroscopeExporterConfig {
            client: ClientSettings {
                headers: BTreeMap::from([(
                    "authorization".to_owned(),
                    "Bearer glc_token".to_owned(),
                )]),
                ..config(address, api).client
            },
            ..config(address, api)
        })
        .unwrap()
        .export(&small)
        .await
        .unwrap();

        let ingests = ingests.lock().unwrap();
        assert_eq!(ingests.len(), 2);
        let first = &ingests[0].headers;
        assert_eq!(first["x-team"], "payments");
        assert_eq!(first["x-scope-orgid"], "tenant-1");
        // base64("profbridge:s3cret")
        assert_eq!(first["authorization"], "Basic cHJvZmJyaWRnZTpzM2NyZXQ=");
        let second = &ingests[1].headers;
        assert_eq!(second["authorization"], "Bearer glc_token");
        assert!(second.get("x-scope-orgid").is_none());
    }
}

/// A call's headers and body.
type Captured = (HeaderMap, Vec<u8>);

/// What the push API gets, byte for byte as Pyroscope's schema reads it:
/// one `PushRequest` per export, one series per pprof with the labels the
/// SDKs send (`__name__` first, then `service_name`), the pprof gzipped in
/// `raw_profile`; and what the push receiver recorded of an earlier push
/// (`pyroscope.profile_name`, `.delta`, `.session_id`) goes on as labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_requests_hold_a_series_per_pprof_with_sdk_labels() {
    let captured: Arc<Mutex<Vec<Captured>>> = Arc::default();
    let keep = Arc::clone(&captured);
    let app = axum::Router::new().route(
        PUSH_PATH,
        post(move |headers: HeaderMap, body: Bytes| {
            let keep = Arc::clone(&keep);
            async move {
                keep.lock().unwrap().push((headers, body.to_vec()));
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let first = with_resource_attributes(
        ebpf_like_request(50, 11),
        &[
            ("pyroscope.profile_name", "memory"),
            ("pyroscope.delta", "false"),
            ("pyroscope.session_id", "00112233aabbccdd"),
            ("host.name", "node-3"),
        ],
    );
    let second = with_resource_attributes(ebpf_like_request(30, 12), &[("host.name", "node-4")]);
    let merged = profbridge_translate::merge_requests(vec![first, second]);
    let sent = sent_totals(&merged);
    let exporter = PyroscopeExporter::new(&PyroscopeExporterConfig {
        labels_from_resource_attributes: vec!["host.name".to_owned()],
        ..config(address, PyroscopeApi::Push)
    })
    .unwrap();
    exporter.export(&batch(merged)).await.unwrap();

    let captured = captured.lock().unwrap();
    assert_eq!(captured.len(), 1, "one call per export");
    let (headers, body) = &captured[0];
    assert_eq!(headers["content-type"], "application/proto");
    assert_eq!(headers["connect-protocol-version"], "1");
    let push = PushRequest::decode(body.as_slice()).unwrap();
    assert_eq!(push.series.len(), 2);
    let mut arrived = Vec::new();
    for series in &push.series {
        assert_eq!(series.samples.len(), 1);
        let raw = &series.samples[0].raw_profile;
        assert_eq!(raw[..2], [0x1f, 0x8b], "the pprof is gzipped");
        let profile = decode(raw, &DecodeOptions::default()).unwrap();
        let labels: Vec<(&str, &str)> = series
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        let host = series
            .labels
            .iter()
            .find(|l| l.name == "host_name")
            .unwrap()
            .value
            .clone();
        if host == "node-3" {
            assert_eq!(
                labels,
                [
                    ("__name__", "memory"),
                    ("service_name", "checkout"),
                    ("pyroscope_spy", "profbridge"),
                    ("host_name", "node-3"),
                    ("__delta__", "false"),
                    ("__session_id__", "00112233aabbccdd"),
                ]
            );
        } else {
            assert_eq!(
                labels,
                [
                    ("__name__", "process_cpu"),
                    ("service_name", "checkout"),
                    ("pyroscope_spy", "profbridge"),
                    ("host_name", "node-4"),
                ]
            );
        }
        arrived.push(Ingest {
            api: PyroscopeApi::Push,
            application: "checkout".to_owned(),
            labels: BTreeMap::new(),
            query: BTreeMap::new(),
            series_labels: series.labels.clone(),
            headers: headers.clone(),
            profile,
        });
    }
    assert_eq!(received_totals(&arrived), sent);
}

/// `resource_exhausted` (429) is retried, after Retry-After; a reply that
/// is no Connect error is judged by its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_errors_decide_retries() {
    let app = axum::Router::new().route(
        PUSH_PATH,
        post(|| async {
            let mut response = connect_error(
                StatusCode::TOO_MANY_REQUESTS,
                "resource_exhausted",
                "ingestion rate limit exceeded",
            );
            response
                .headers_mut()
                .insert("retry-after", "12".parse().unwrap());
            response
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let error = PyroscopeExporter::new(&config(address, PyroscopeApi::Push))
        .unwrap()
        .export(&batch(ebpf_like_request(5, 13)))
        .await
        .unwrap_err();
    match &error {
        ExportError::Retryable { cause, retry_after } => {
            assert!(matches!(cause, ExportCause::ErrorReply(_)), "{cause:?}");
            let reason = cause.to_string();
            assert_eq!(*retry_after, Some(Duration::from_secs(12)));
            assert!(reason.contains("resource_exhausted"), "{reason}");
            assert!(reason.contains("ingestion rate limit exceeded"), "{reason}");
        }
        other => panic!("resource_exhausted should be retryable: {other}"),
    }
    // An old Pyroscope without the push API: 404, permanent.
    let (address, _) = fake_pyroscope(Reply::Ok).await;
    let error = PyroscopeExporter::new(&PyroscopeExporterConfig {
        client: ClientSettings {
            endpoint: format!("http://{address}/nothing-here"),
            ..ClientSettings::default()
        },
        ..config(address, PyroscopeApi::Push)
    })
    .unwrap()
    .export(&batch(ebpf_like_request(5, 14)))
    .await
    .unwrap_err();
    assert!(!error.is_retryable(), "{error}");
    assert!(error.to_string().contains("404"), "{error}");
}

#[test]
fn contradictory_options_stop_the_exporter() {
    let address: SocketAddr = "127.0.0.1:4040".parse().unwrap();
    let error = PyroscopeExporter::new(&PyroscopeExporterConfig {
        tenant_id: Some("b".to_owned()),
        labels_from_resource_attributes: vec!["service.name".to_owned()],
        client: ClientSettings {
            headers: BTreeMap::from([("X-Scope-OrgID".to_owned(), "a".to_owned())]),
            ..config(address, PyroscopeApi::Push).client
        },
        ..config(address, PyroscopeApi::Push)
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains("headers.X-Scope-OrgID"), "{error}");
    assert!(
        error.contains("labels_from_resource_attributes[0]"),
        "{error}"
    );
    assert!(PyroscopeExporter::new(&PyroscopeExporterConfig::default()).is_err());
}

/// The fake server takes the multipart form Pyroscope also documents, so
/// that it is a fair stand-in for both forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_server_reads_the_multipart_form_too() {
    let (address, ingests) = fake_pyroscope(Reply::Ok).await;
    let converted = otlp_to_pprof(&ebpf_like_request(10, 9), &ToPprofOptions::default()).unwrap();
    let profile = encode(&converted.profiles[0].profile, &EncodeOptions::default());
    let mut body = b"--XyZ\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    body.extend_from_slice(&profile);
    body.extend_from_slice(b"\r\n--XyZ--\r\n");
    let response = reqwest::Client::new()
        .post(format!(
            "http://{address}/ingest?name=app%7B%7D&from=1&until=2"
        ))
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let ingests = ingests.lock().unwrap();
    assert_eq!(ingests[0].application, "app");
    assert_eq!(
        ingests[0].profile.sample.len(),
        converted.profiles[0].profile.sample.len()
    );
}

// ---- configuration ----

#[test]
fn yaml_options_are_read_and_checked() {
    let yaml = "receivers:\n  otlp:\n    protocols:\n      http:\n\
        exporters:\n  pyroscope/cloud:\n    endpoint: https://profiles.example.com\n\
        \x20   tenant_id: team-a\n    basic_auth:\n      username: \"123456\"\n      password: ${env:TOKEN}\n\
        \x20   headers:\n      x-team: payments\n    application_name_attribute: k8s.deployment.name\n\
        \x20   labels_from_resource_attributes: [k8s.namespace.name, host.name]\n    timeout: 30s\n\
        \x20   retry_on_failure:\n      max_elapsed_time: 10m\n    api: ingest\n\
        service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [pyroscope/cloud]\n";
    let vars = BTreeMap::from([("TOKEN".to_owned(), "glc_xyz".to_owned())]);
    let config = parse_yaml(yaml, &vars).unwrap_or_else(|e| panic!("{e}"));
    let Some(pyroscope) = config.exporters[0].1.options::<PyroscopeExporterConfig>() else {
        panic!("not a pyroscope exporter: {:?}", config.exporters[0]);
    };
    assert_eq!(config.exporters[0].1.kind(), "pyroscope");
    assert_eq!(pyroscope.client.endpoint, "https://profiles.example.com");
    assert_eq!(pyroscope.api, PyroscopeApi::Ingest);
    assert_eq!(pyroscope.tenant_id.as_deref(), Some("team-a"));
    let auth = pyroscope.basic_auth.as_ref().unwrap();
    assert_eq!(
        (auth.username.as_str(), auth.password.as_str()),
        ("123456", "glc_xyz")
    );
    assert_eq!(pyroscope.client.headers["x-team"], "payments");
    assert_eq!(pyroscope.application_name_attribute, "k8s.deployment.name");
    assert_eq!(
        pyroscope.labels_from_resource_attributes,
        ["k8s.namespace.name", "host.name"]
    );
    assert_eq!(pyroscope.helper.timeout, ConfigDuration::from_secs(30));
    let helper = pyroscope.helper.clone();
    assert_eq!(helper.timeout, ConfigDuration::from_secs(30));
    assert_eq!(
        helper.retry_on_failure.max_elapsed_time,
        ConfigDuration::from_secs(600)
    );

    let defaults = PyroscopeExporterConfig::default();
    assert_eq!(defaults.api, PyroscopeApi::Push);
    assert_eq!(defaults.application_name_attribute, "service.name");
    assert_eq!(
        defaults.labels_from_resource_attributes,
        ["service.namespace", "deployment.environment", "host.name"]
    );
    assert_eq!(defaults.helper.timeout, ConfigDuration::from_secs(10));

    let broken = "receivers:\n  otlp:\n    protocols:\n      http:\n\
        exporters:\n  pyroscope:\n    labels_from_resource_attributes: [host.name, host-name]\n    basic_auth:\n      user: x\n\
        service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [pyroscope]\n";
    let problems = parse_yaml(broken, &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        problems.contains("exporters.pyroscope.basic_auth.user: unknown key"),
        "{problems}"
    );
    let wrong_api = broken.replace("    basic_auth:\n      user: x\n", "    api: grpc\n");
    let problems = parse_yaml(&wrong_api, &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(problems.contains("exporters.pyroscope.api"), "{problems}");
    let broken = broken.replace("    basic_auth:\n      user: x\n", "");
    let problems = parse_yaml(&broken, &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        problems.contains("exporters.pyroscope.endpoint: is empty"),
        "{problems}"
    );
    assert!(
        problems.contains(
            "exporters.pyroscope.labels_from_resource_attributes[1]: \"host-name\" would become label host_name"
        ),
        "{problems}"
    );
}

#[test]
fn the_legacy_to_pyroscope_example_loads() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/examples/legacy-to-pyroscope.yaml");
    let config = load(Some(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        config
            .exporters
            .iter()
            .any(|(_, exporter)| exporter.options::<PyroscopeExporterConfig>().is_some()),
        "{config:?}"
    );
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
}

// ---- through a running collector ----

/// OTLP in over HTTP, Pyroscope out: what the receiver took arrives as
/// pprof with the same totals, under the tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_forwards_otlp_to_pyroscope() {
    let (address, ingests) = fake_pyroscope(Reply::Ok).await;
    let yaml = format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         exporters:\n  pyroscope:\n    endpoint: http://{address}\n    tenant_id: team-a\n\
         \x20   labels_from_resource_attributes: [host.name]\n    retry_on_failure:\n      enabled: false\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [pyroscope]\n\
         \x20 telemetry:\n    metrics:\n      address: \"\"\n"
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    let running = service::start(&config).await.unwrap();
    assert!(
        running.writing.iter().any(|line| *line
            == format!(
                "pyroscope exporter pushing pprof to Pyroscope at http://{address}{PUSH_PATH}"
            )),
        "{:?}",
        running.writing
    );
    let receiver = running
        .listening
        .iter()
        .find(|endpoint| endpoint.what.contains("OTLP HTTP"))
        .unwrap()
        .address;

    let requests = [
        with_resource_attributes(ebpf_like_request(200, 7), &[("host.name", "node-1")]),
        with_resource_attributes(ebpf_like_request(100, 8), &[("host.name", "node-2")]),
    ];
    let client = reqwest::Client::new();
    let mut sent = Totals::new();
    for request in &requests {
        for (key, total) in sent_totals(request) {
            *sent.entry(key).or_default() += total;
        }
        let response = client
            .post(format!("http://{receiver}/v1development/profiles"))
            .header("content-type", "application/x-protobuf")
            .body(request.encode_to_vec())
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }
    // Shutting down exports everything accepted.
    assert!(running.shutdown(Duration::from_secs(60)).await);

    let ingests = ingests.lock().unwrap();
    assert_eq!(ingests.len(), 2);
    let mut names: Vec<String> = ingests.iter().map(Ingest::name).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["checkout{host_name=node-1}", "checkout{host_name=node-2}"]
    );
    for ingest in ingests.iter() {
        assert_eq!(ingest.headers["x-scope-orgid"], "team-a");
        assert_eq!(ingest.api, PyroscopeApi::Push);
        assert_query(ingest);
    }
    assert_eq!(received_totals(&ingests), sent);
}
