//! Python's confluent-kafka and opentelemetry-proto on the other side of
//! the broker: what they read, write and decode is the oracle, not ours.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

use crate::venv_python;

const CONSUME: &str = include_str!("consume.py");
const PRODUCE: &str = include_str!("produce.py");
const DECODE: &str = include_str!("decode.py");

const KAFKA_MODULE: &str = "confluent_kafka";
const KAFKA_PACKAGE: &str = "confluent-kafka";
const PROTO_MODULE: &str =
    "opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2";
const PROTO_PACKAGE: &str = "opentelemetry-proto";

/// One message as confluent-kafka read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedMessage {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// A message to produce: its key (none: the producer's partitioner picks
/// a partition at random) and value.
pub type Record = (Option<Vec<u8>>, Vec<u8>);

/// Where the broker put a produced message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Delivered {
    pub partition: i32,
    pub offset: i64,
}

/// How a message carries its `ExportProfilesServiceRequest`, as the
/// Collector's `encoding` option names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `otlp_proto`: protobuf.
    Proto,
    /// `otlp_json`: OTLP/JSON.
    Json,
}

/// How the client connects: SASL, TLS, both or neither (plaintext, the
/// default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientSecurity {
    pub sasl: Option<SaslLogin>,
    /// PEM CA certificates to check the broker's certificate with; the
    /// client connects with TLS when set.
    pub ca_file: Option<PathBuf>,
    /// The client's certificate and key, PEM files, for a broker that
    /// asks for one (with `ca_file`).
    pub certificate: Option<(PathBuf, PathBuf)>,
}

/// A SASL login: `mechanism` as librdkafka names it (`SCRAM-SHA-256`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslLogin {
    pub mechanism: String,
    pub username: String,
    pub password: String,
}

impl ClientSecurity {
    /// librdkafka's properties for it.
    fn properties(&self) -> BTreeMap<&'static str, String> {
        let tls = self.ca_file.is_some();
        let protocol = match (&self.sasl, tls) {
            (None, false) => "plaintext",
            (None, true) => "ssl",
            (Some(_), false) => "sasl_plaintext",
            (Some(_), true) => "sasl_ssl",
        };
        let mut properties = BTreeMap::from([("security.protocol", protocol.to_owned())]);
        if let Some(login) = &self.sasl {
            properties.insert("sasl.mechanisms", login.mechanism.clone());
            properties.insert("sasl.username", login.username.clone());
            properties.insert("sasl.password", login.password.clone());
        }
        if let Some(ca_file) = &self.ca_file {
            properties.insert("ssl.ca.location", path_text(ca_file));
        }
        if let Some((certificate, key)) = &self.certificate {
            properties.insert("ssl.certificate.location", path_text(certificate));
            properties.insert("ssl.key.location", path_text(key));
        }
        properties
    }
}

fn path_text(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
        .to_owned()
}

/// What opentelemetry-proto made of one message.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DecodedRequest {
    pub profiles: usize,
    pub samples: usize,
    /// The sum of every sample's values per sample type (the string of
    /// the profile's `sample_type.type_strindex`).
    pub values_by_type: BTreeMap<String, i64>,
}

/// Reads `topic` from its earliest offsets with confluent-kafka, every
/// partition assigned directly (no consumer group, nothing committed),
/// until `expected` messages arrived or `timeout` passed; returns what
/// arrived, in arrival order (per partition in offset order). `None`
/// (after a loud note) without confluent-kafka.
pub fn consume(
    bootstrap: &str,
    topic: &str,
    expected: usize,
    timeout: Duration,
) -> Option<Vec<ConsumedMessage>> {
    consume_with(
        bootstrap,
        topic,
        expected,
        timeout,
        &ClientSecurity::default(),
    )
}

/// [`consume`], connecting as `security` says.
pub fn consume_with(
    bootstrap: &str,
    topic: &str,
    expected: usize,
    timeout: Duration,
    security: &ClientSecurity,
) -> Option<Vec<ConsumedMessage>> {
    let python = venv_python(KAFKA_MODULE, KAFKA_PACKAGE, "reading a Kafka topic")?;
    let input = json!({
        "bootstrap": bootstrap,
        "topic": topic,
        "expected": expected,
        "timeout_seconds": timeout.as_secs_f64(),
        "properties": security.properties(),
    });
    #[derive(Deserialize)]
    struct Raw {
        partition: i32,
        offset: i64,
        key: Option<String>,
        value: String,
        headers: Vec<(String, Option<String>)>,
    }
    let raw: Vec<Raw> = run_python(&python, CONSUME, &input);
    Some(
        raw.into_iter()
            .map(|message| ConsumedMessage {
                partition: message.partition,
                offset: message.offset,
                key: message.key.as_deref().map(unbase64),
                value: unbase64(&message.value),
                headers: message
                    .headers
                    .into_iter()
                    .map(|(name, value)| (name, value.as_deref().map(unbase64)))
                    .collect(),
            })
            .collect(),
    )
}

/// Produces `messages` (key, value) to `topic` with confluent-kafka
/// (`acks=all`, idempotent, no size limit of its own), waits for every
/// delivery report and panics when one failed or `timeout` passed.
/// Returns where each landed, in order. `None` (after a loud note)
/// without confluent-kafka.
pub fn produce(
    bootstrap: &str,
    topic: &str,
    messages: &[Record],
    timeout: Duration,
) -> Option<Vec<Delivered>> {
    produce_with(
        bootstrap,
        topic,
        messages,
        timeout,
        &ClientSecurity::default(),
    )
}

/// [`produce`], connecting as `security` says.
pub fn produce_with(
    bootstrap: &str,
    topic: &str,
    messages: &[Record],
    timeout: Duration,
    security: &ClientSecurity,
) -> Option<Vec<Delivered>> {
    let python = venv_python(KAFKA_MODULE, KAFKA_PACKAGE, "writing to a Kafka topic")?;
    let encoded: Vec<_> = messages
        .iter()
        .map(|(key, value)| {
            json!({
                "key": key.as_ref().map(|key| BASE64.encode(key)),
                "value": BASE64.encode(value),
            })
        })
        .collect();
    let input = json!({
        "bootstrap": bootstrap,
        "topic": topic,
        "timeout_seconds": timeout.as_secs_f64(),
        "messages": encoded,
        "properties": security.properties(),
    });
    let delivered: Vec<Delivered> = run_python(&python, PRODUCE, &input);
    assert_eq!(delivered.len(), messages.len());
    Some(delivered)
}

/// Why opentelemetry-proto could not decode a message: its exception.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDecoded(pub String);

impl std::fmt::Display for NotDecoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotDecoded {}

/// Decodes each message value as an `ExportProfilesServiceRequest` in
/// `encoding` with Python's opentelemetry-proto (`json_format.Parse` for
/// OTLP/JSON). Per message, what it holds or why it does not decode.
/// `None` (after a loud note) without opentelemetry-proto.
pub fn decode(
    values: &[Vec<u8>],
    encoding: Encoding,
) -> Option<Vec<Result<DecodedRequest, NotDecoded>>> {
    let python = venv_python(
        PROTO_MODULE,
        PROTO_PACKAGE,
        "decoding Kafka messages with an independent decoder",
    )?;
    let input = json!({
        "encoding": match encoding {
            Encoding::Proto => "proto",
            Encoding::Json => "json",
        },
        "values": values.iter().map(|value| BASE64.encode(value)).collect::<Vec<_>>(),
    });
    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Outcome {
        Decoded(DecodedRequest),
        Error(String),
    }
    let outcomes: Vec<Outcome> = run_python(&python, DECODE, &input);
    assert_eq!(outcomes.len(), values.len());
    Some(
        outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Outcome::Decoded(decoded) => Ok(decoded),
                Outcome::Error(reason) => Err(NotDecoded(reason)),
            })
            .collect(),
    )
}

/// Runs `script` with `input` as JSON on stdin and parses its stdout as
/// JSON; panics with its stderr when it fails.
fn run_python<T: serde::de::DeserializeOwned>(
    python: &Path,
    script: &str,
    input: &serde_json::Value,
) -> T {
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = serde_json::to_vec(input).expect("JSON input");
    // A thread writes: a large input would otherwise fill the pipe while
    // the script's output fills the other one.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("wait for Python");
    let written = writer.join().expect("the writer thread");
    assert!(
        output.status.success(),
        "the Python helper failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    written.expect("write the Python helper's input");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "the Python helper's output is not what was expected ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn unbase64(text: &str) -> Vec<u8> {
    BASE64
        .decode(text)
        .unwrap_or_else(|e| panic!("base64 from the Python helper: {e}"))
}
