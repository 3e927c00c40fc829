//! The Kafka test fixture works: tansu serves confluent-kafka (librdkafka
//! 2.x) producers, readers and a two-member consumer group that commits,
//! survives a stop and restart on its port, and opentelemetry-proto
//! decodes what went through it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use profbridge_testkit::kafka::{self, Broker, DecodedRequest, Encoding, Record, Storage};
use prost::Message;

/// Generous: these bound a broken run, nothing is timed.
const WAIT: Duration = Duration::from_secs(60);

fn keyed_messages(count: usize, label: &str) -> Vec<Record> {
    (0..count)
        .map(|i| {
            let key = (i % 3 != 0).then(|| format!("key-{}", i % 5).into_bytes());
            (key, format!("{label} message {i}").into_bytes())
        })
        .collect()
}

#[test]
fn what_is_produced_is_read_back_from_every_partition() {
    let Some(broker) = Broker::start("roundtrip") else {
        return;
    };
    broker.create_topic("roundtrip", 2);
    let sent = keyed_messages(40, "roundtrip");
    let Some(delivered) = kafka::produce(&broker.bootstrap(), "roundtrip", &sent, WAIT) else {
        return;
    };
    let read = kafka::consume(&broker.bootstrap(), "roundtrip", sent.len(), WAIT).unwrap();

    let expected: BTreeMap<(i32, i64), Record> = delivered
        .iter()
        .map(|d| (d.partition, d.offset))
        .zip(sent.iter().cloned())
        .collect();
    let got: BTreeMap<(i32, i64), Record> = read
        .iter()
        .map(|m| ((m.partition, m.offset), (m.key.clone(), m.value.clone())))
        .collect();
    assert_eq!(got.len(), read.len(), "a message was read twice");
    assert_eq!(got, expected);
    let partitions: BTreeSet<i32> = read.iter().map(|m| m.partition).collect();
    assert_eq!(partitions, BTreeSet::from([0, 1]), "both partitions used");
}

#[test]
fn two_consumers_in_a_group_share_the_partitions_and_commit() {
    group_shares_the_partitions_and_commits(Storage::Memory);
}

#[test]
fn two_consumers_in_a_group_share_the_partitions_and_commit_with_sqlite() {
    group_shares_the_partitions_and_commits(Storage::Sqlite);
}

fn group_shares_the_partitions_and_commits(storage: Storage) {
    let Some(broker) = Broker::start_with("group", storage) else {
        return;
    };
    broker.create_topic("shared", 2);
    let sent = keyed_messages(30, "group");
    let Some(delivered) = kafka::produce(&broker.bootstrap(), "shared", &sent, WAIT) else {
        return;
    };
    let python = profbridge_testkit::venv_python(
        "confluent_kafka",
        "confluent-kafka",
        "a Kafka consumer group",
    )
    .unwrap();
    let input = serde_json::json!({
        "bootstrap": broker.bootstrap(),
        "topic": "shared",
        "expected": sent.len(),
        "timeout_seconds": WAIT.as_secs_f64(),
    });
    let mut child = Command::new(python)
        .args(["-c", include_str!("kafka/group.py")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}\nthe broker's log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        broker.log()
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    let mut read = Vec::new();
    for member in report["members"].as_array().unwrap() {
        assert!(
            !member["assigned"].as_array().unwrap().is_empty(),
            "every member got a partition: {report}"
        );
        for pair in member["read"].as_array().unwrap() {
            read.push((pair[0].as_i64().unwrap() as i32, pair[1].as_i64().unwrap()));
        }
    }
    read.sort_unstable();
    let mut expected: Vec<(i32, i64)> = delivered.iter().map(|d| (d.partition, d.offset)).collect();
    expected.sort_unstable();
    assert_eq!(read, expected, "every message read once by the group");
    // The group's committed offset of a partition is one past its last
    // message.
    for partition in [0, 1] {
        let next = delivered
            .iter()
            .filter(|d| d.partition == partition)
            .map(|d| d.offset + 1)
            .max()
            .unwrap();
        assert_eq!(
            report["committed"][partition.to_string()].as_i64(),
            Some(next),
            "{report}"
        );
    }
}

#[test]
fn a_stopped_broker_restarts_on_its_port_empty() {
    let Some(mut broker) = Broker::start("restart") else {
        return;
    };
    let bootstrap = broker.bootstrap();
    broker.create_topic("before", 2);
    let Some(first) = kafka::produce(&bootstrap, "before", &keyed_messages(4, "first"), WAIT)
    else {
        return;
    };
    assert!(first.iter().all(|d| d.offset >= 0));

    broker.stop();
    assert!(!broker.is_running());
    assert!(
        std::net::TcpStream::connect(&bootstrap).is_err(),
        "nothing listens while stopped"
    );

    broker.restart();
    assert_eq!(broker.bootstrap(), bootstrap, "same port");
    broker.create_topic("before", 2);
    let sent = keyed_messages(6, "second");
    let delivered = kafka::produce(&bootstrap, "before", &sent, WAIT).unwrap();
    let read = kafka::consume(&bootstrap, "before", sent.len(), WAIT).unwrap();
    let mut values: Vec<&[u8]> = read.iter().map(|m| m.value.as_slice()).collect();
    values.sort_unstable();
    let mut expected: Vec<&[u8]> = sent.iter().map(|(_, value)| value.as_slice()).collect();
    expected.sort_unstable();
    assert_eq!(values, expected, "only what was sent after the restart");
    assert_eq!(
        delivered.iter().map(|d| d.offset).min(),
        Some(0),
        "memory storage starts again at offset 0"
    );
}

#[test]
fn a_sqlite_broker_keeps_its_messages_across_a_restart() {
    let Some(mut broker) = Broker::start_with("sqlite-restart", Storage::Sqlite) else {
        return;
    };
    let bootstrap = broker.bootstrap();
    broker.create_topic("kept", 2);
    let before = keyed_messages(8, "before");
    let Some(first) = kafka::produce(&bootstrap, "kept", &before, WAIT) else {
        return;
    };

    broker.stop();
    assert!(std::net::TcpStream::connect(&bootstrap).is_err());
    broker.restart();

    let after = keyed_messages(4, "after");
    let second = kafka::produce(&bootstrap, "kept", &after, WAIT).unwrap();
    let read = kafka::consume(&bootstrap, "kept", before.len() + after.len(), WAIT).unwrap();
    let got: BTreeMap<(i32, i64), Record> = read
        .iter()
        .map(|m| ((m.partition, m.offset), (m.key.clone(), m.value.clone())))
        .collect();
    let expected: BTreeMap<(i32, i64), Record> = first
        .iter()
        .chain(&second)
        .map(|d| (d.partition, d.offset))
        .zip(before.iter().chain(&after).cloned())
        .collect();
    assert_eq!(got.len(), read.len(), "a message was read twice");
    assert_eq!(got, expected, "everything, at the offsets the broker gave");
}

#[test]
fn requests_through_the_broker_decode_with_opentelemetry_proto() {
    let Some(broker) = Broker::start("decode") else {
        return;
    };
    broker.create_topic("otlp_profiles", 2);
    let requests: Vec<_> = (0..3)
        .map(|seed| profbridge_testkit::ebpf_like_request(20 + seed as usize, seed))
        .collect();
    let sent: Vec<_> = requests
        .iter()
        .map(|request| (None, request.encode_to_vec()))
        .collect();
    let json = br#"{"resourceProfiles":[{"scopeProfiles":[{"profiles":[
        {"sampleType":{"typeStrindex":1,"unitStrindex":2},
         "samples":[{"values":["3"]},{"values":[4]}]}]}]}],
        "dictionary":{"stringTable":["","cpu","nanoseconds"]}}"#;
    let Some(_) = kafka::produce(&broker.bootstrap(), "otlp_profiles", &sent, WAIT) else {
        return;
    };
    kafka::produce(
        &broker.bootstrap(),
        "otlp_profiles",
        &[(None, json.to_vec()), (None, b"not a request".to_vec())],
        WAIT,
    )
    .unwrap();
    let read = kafka::consume(&broker.bootstrap(), "otlp_profiles", sent.len() + 2, WAIT).unwrap();
    let (proto, other): (Vec<_>, Vec<_>) = read
        .into_iter()
        .map(|m| m.value)
        .partition(|value| !value.starts_with(b"{") && value != b"not a request");

    let Some(decoded) = kafka::decode(&proto, Encoding::Proto) else {
        return;
    };
    let mut got: Vec<DecodedRequest> = decoded.into_iter().map(Result::unwrap).collect();
    let mut expected: Vec<DecodedRequest> = requests.iter().map(summary).collect();
    got.sort_by_key(|d| d.samples);
    expected.sort_by_key(|d| d.samples);
    assert_eq!(got, expected);

    let decoded = kafka::decode(&other, Encoding::Json).unwrap();
    let outcomes: BTreeMap<&[u8], &Result<DecodedRequest, kafka::NotDecoded>> = other
        .iter()
        .map(Vec::as_slice)
        .zip(decoded.iter())
        .collect();
    assert_eq!(
        outcomes[json.as_slice()],
        &Ok(DecodedRequest {
            profiles: 1,
            samples: 2,
            values_by_type: BTreeMap::from([("cpu".to_owned(), 7)]),
        })
    );
    assert!(outcomes[b"not a request".as_slice()].is_err());
}

/// What the generated request holds, from its own fields.
fn summary(
    request: &opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest,
) -> DecodedRequest {
    let strings = &request.dictionary.as_ref().unwrap().string_table;
    let mut summary = DecodedRequest {
        profiles: 0,
        samples: 0,
        values_by_type: BTreeMap::new(),
    };
    for profile in request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
    {
        summary.profiles += 1;
        summary.samples += profile.samples.len();
        let kind = &strings[profile.sample_type.as_ref().unwrap().type_strindex as usize];
        *summary.values_by_type.entry(kind.clone()).or_default() +=
            profile.samples.iter().flat_map(|s| &s.values).sum::<i64>();
    }
    summary
}
