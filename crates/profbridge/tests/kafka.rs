#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! Kafka, end to end: `profbridge serve` processes with the `kafka`
//! exporter and receiver around a real Kafka-protocol broker (tansu, on
//! loopback), and on the other side of the topic an independent client:
//! Python's confluent-kafka (librdkafka 2.x) reading and writing messages,
//! decoded and encoded as the OpenTelemetry Collector's kafka components
//! carry them, one `ExportProfilesServiceRequest` per message, by Python's
//! opentelemetry-proto.
//!
//! tansu's memory storage cannot fetch from an offset inside a record
//! batch (profbridge_testkit::kafka), so producers here send one message
//! per batch (`flush_max_messages: 1`); with Kafka itself any batching
//! works. tansu also answers a fetch only after the consumer's whole
//! `max_fetch_wait`, so gateways here wait 10ms. Every wait is a poll with a generous bound; nothing asserts on
//! speed.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use prost::Message;

use profbridge_testkit::kafka::{self, Broker, Encoding};
use profbridge_testkit::pprof_oracle::OracleProfile;
use profbridge_translate::json::request_to_json_string;
use profbridge_translate::merge_requests;
use profbridge_translate::otlp::{string_value, ExportProfilesServiceRequest};

use crate::forwarding::{
    corpus_requests, export_all_ok, files_under, generated, metric, requests_under, reserve_port,
    runtime, scrape, wait_until, PATIENCE, RETRY_FOREVER,
};
use crate::support::collector::Collector;

/// The topic the Collector's kafka components use for profiles.
const TOPIC: &str = "otlp_profiles";

// ---- configurations ----

pub(crate) const TELEMETRY: &str =
    "  telemetry:\n    metrics:\n      address: 127.0.0.1:0\n    logs:\n      level: info\n";

/// An agent: OTLP gRPC in, the `kafka` exporter with `options` (YAML lines
/// at the exporter's indentation) out.
fn agent_config(broker: &Broker, options: &str) -> String {
    format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n        max_recv_msg_size_mib: 64\n\
         exporters:\n  kafka:\n    brokers: [{}]\n    producer:\n      flush_max_messages: 1\n{options}{RETRY_FOREVER}\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [kafka]\n{TELEMETRY}",
        broker.bootstrap()
    )
}

/// A gateway: the `kafka` receiver with `options`, writing each request
/// it takes as an OTLP protobuf file under `{data}`.
fn gateway_config(broker: &Broker, options: &str) -> String {
    format!(
        "receivers:\n  kafka:\n    brokers: [{}]\n    initial_offset: earliest\n    max_fetch_wait: 10ms\n{options}\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [kafka]\n      exporters: [file]\n{TELEMETRY}",
        broker.bootstrap()
    )
}

fn receiver_metric(collector: &Collector, name: &str) -> f64 {
    metric(
        &scrape(collector.telemetry),
        &format!("profbridge_receiver_{name}{{receiver=\"kafka\",transport=\"kafka\"}}"),
    )
}

fn kafka_exporter_metric(collector: &Collector, name: &str) -> f64 {
    metric(
        &scrape(collector.telemetry),
        &format!("profbridge_exporter_{name}{{exporter=\"kafka\"}}"),
    )
}

// ---- what arrived ----

/// Per sample type, the sum of the sample values of `values`, each an
/// encoded request, as opentelemetry-proto decodes them.
pub(crate) fn totals(values: &[Vec<u8>], encoding: Encoding) -> BTreeMap<String, i64> {
    let decoded = kafka::decode(values, encoding).expect("opentelemetry-proto is installed");
    let mut totals = BTreeMap::new();
    for (i, message) in decoded.into_iter().enumerate() {
        let message = message.unwrap_or_else(|e| panic!("message {i}: {e}"));
        for (kind, value) in message.values_by_type {
            *totals.entry(kind).or_insert(0) += value;
        }
    }
    totals
}

pub(crate) fn encoded(requests: &[ExportProfilesServiceRequest]) -> Vec<Vec<u8>> {
    requests.iter().map(Message::encode_to_vec).collect()
}

/// The requests written under `dir`, each once however often it was
/// written (redelivery after a crash is allowed), and how many copies
/// there were beyond the first.
pub(crate) fn distinct_requests(dir: &Path) -> (Vec<Vec<u8>>, usize) {
    let all = encoded(&requests_under(dir));
    let mut distinct = all.clone();
    distinct.sort();
    distinct.dedup();
    let duplicates = all.len() - distinct.len();
    (distinct, duplicates)
}

pub(crate) fn sorted(mut values: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    values.sort();
    values
}

// ---- the exporter, read by confluent-kafka ----

#[test]
fn the_exporter_writes_what_the_collectors_format_decodes_keyed_by_resource() {
    let Some(broker) = Broker::start("kafka-export") else {
        return;
    };
    let sent = corpus_requests();
    if sent.is_empty() {
        return;
    }
    broker.create_topic(TOPIC, 3);
    broker.create_topic("profiles_json", 2);
    let proto = Collector::start(
        "kafka-agent-proto",
        &agent_config(
            &broker,
            "      max_message_bytes: 16000000\n    partition_profiles_by_resource_attributes: true\n",
        ),
    );
    let json = Collector::start(
        "kafka-agent-json",
        &agent_config(
            &broker,
            "      max_message_bytes: 64000000\n    profiles:\n      topic: profiles_json\n      encoding: otlp_json\n",
        ),
    );
    let runtime = runtime();
    // Each request twice: the same resource must land on the same partition.
    let twice: Vec<_> = sent.iter().chain(&sent).cloned().collect();
    export_all_ok(&runtime, proto.grpc.unwrap(), &twice);
    export_all_ok(&runtime, json.grpc.unwrap(), &sent);

    let messages = kafka::consume(&broker.bootstrap(), TOPIC, twice.len(), PATIENCE).unwrap();
    assert_eq!(messages.len(), twice.len(), "one message per request");
    let values: Vec<Vec<u8>> = messages.iter().map(|m| m.value.clone()).collect();
    assert_eq!(
        totals(&values, Encoding::Proto),
        totals(&encoded(&twice), Encoding::Proto),
        "the sample totals per type of what was sent"
    );
    assert_eq!(
        sorted(values),
        sorted(encoded(&twice)),
        "every request exactly"
    );
    let mut partition_of_key = BTreeMap::new();
    for message in &messages {
        let key = message.key.clone().expect("keyed by resource");
        assert_eq!(key.len(), 16);
        let partition = *partition_of_key.entry(key).or_insert(message.partition);
        assert_eq!(partition, message.partition, "one resource, one partition");
    }
    assert_eq!(partition_of_key.len(), sent.len(), "one key per service");

    let json_messages =
        kafka::consume(&broker.bootstrap(), "profiles_json", sent.len(), PATIENCE).unwrap();
    assert_eq!(json_messages.len(), sent.len());
    assert!(json_messages.iter().all(|m| m.key.is_none()));
    let json_values: Vec<Vec<u8>> = json_messages.iter().map(|m| m.value.clone()).collect();
    assert_eq!(
        totals(&json_values, Encoding::Json),
        totals(&encoded(&sent), Encoding::Proto),
        "OTLP/JSON carries the same samples"
    );
}

#[test]
fn every_compression_and_acks_from_all_replicas_reach_another_client() {
    let Some(broker) = Broker::start("kafka-compression") else {
        return;
    };
    let runtime = runtime();
    for (i, compression) in ["gzip", "snappy", "lz4", "zstd"].into_iter().enumerate() {
        let topic = format!("profiles_{compression}");
        broker.create_topic(&topic, 1);
        let agent = Collector::start(
            &format!("kafka-agent-{compression}"),
            &agent_config(
                &broker,
                &format!(
                    "      compression: {compression}\n      required_acks: all\n    topic: {topic}\n"
                ),
            ),
        );
        let sent = generated(2, 500 + 10 * i as u64);
        export_all_ok(&runtime, agent.grpc.unwrap(), &sent);
        let messages = kafka::consume(&broker.bootstrap(), &topic, sent.len(), PATIENCE).unwrap();
        let values: Vec<Vec<u8>> = messages.into_iter().map(|m| m.value).collect();
        assert_eq!(sorted(values), sorted(encoded(&sent)), "{compression}");
    }
}

#[test]
fn oversized_requests_split_by_profile_and_a_profile_too_large_alone_is_dead_lettered() {
    let Some(broker) = Broker::start("kafka-split") else {
        return;
    };
    let corpus = corpus_requests();
    if corpus.is_empty() {
        return;
    }
    broker.create_topic(TOPIC, 2);
    const LIMIT: usize = 20_000;
    // Small profiles from many files, and the largest alone over the limit.
    let (large, small): (Vec<_>, Vec<_>) = corpus
        .into_iter()
        .partition(|request| request.encoded_len() > 4 * LIMIT);
    // Five copies, each its own service: more than one message holds.
    let small: Vec<_> = (0..5)
        .flat_map(|copy| {
            small.iter().cloned().map(move |mut request| {
                for resource in &mut request.resource_profiles {
                    resource.resource.as_mut().unwrap().attributes[0].value =
                        Some(string_value(format!("copy-{copy}")));
                }
                request
            })
        })
        .collect();
    assert!(!large.is_empty() && small.len() > 10);
    assert!(merge_requests(small.clone()).encoded_len() > LIMIT);
    let request = merge_requests(small.iter().chain(&large).cloned().collect());
    assert!(request.encoded_len() > 4 * LIMIT);

    let agent = Collector::start(
        "kafka-agent-split",
        &agent_config(
            &broker,
            &format!("      max_message_bytes: {LIMIT}\n    dead_letter: {{data}}/dead\n"),
        ),
    );
    export_all_ok(&runtime(), agent.grpc.unwrap(), &[request]);
    wait_until("the dead letter", || {
        files_under(&agent.data.join("dead"))
            .iter()
            .any(|path| path.to_string_lossy().ends_with(".pb"))
    });
    let dead: Vec<Vec<u8>> = files_under(&agent.data.join("dead"))
        .iter()
        .filter(|path| path.to_string_lossy().ends_with(".pb"))
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    let whole: Vec<_> = small.iter().chain(&large).cloned().collect();
    let profiles = crate::forwarding::profile_count(&whole);
    wait_until("every profile sent or failed", || {
        kafka_exporter_metric(&agent, "sent_profiles_total")
            + kafka_exporter_metric(&agent, "send_failed_profiles_total")
            >= profiles
    });
    let sent_profiles = kafka_exporter_metric(&agent, "sent_profiles_total");
    let failed_profiles = kafka_exporter_metric(&agent, "send_failed_profiles_total");
    assert!(failed_profiles >= 1.0);
    assert_eq!(sent_profiles + failed_profiles, profiles);

    // Everything else arrived, in messages within the limit.
    let profiles_sent = |values: &[Vec<u8>]| -> usize {
        kafka::decode(values, Encoding::Proto)
            .unwrap()
            .into_iter()
            .map(|decoded| decoded.unwrap().profiles)
            .sum()
    };
    // Far more than there are: every message on the topic, after a pause.
    let values: Vec<Vec<u8>> =
        kafka::consume(&broker.bootstrap(), TOPIC, 100_000, Duration::from_secs(10))
            .unwrap()
            .into_iter()
            .map(|m| m.value)
            .collect();
    assert_eq!(
        profiles_sent(&values) as f64,
        sent_profiles,
        "every profile counted as sent is on the topic"
    );
    assert!(values.len() >= 2, "split into several messages");
    for value in &values {
        assert!(value.len() <= LIMIT, "a message of {} bytes", value.len());
    }
    let mut arrived = totals(&values, Encoding::Proto);
    for (kind, value) in totals(&dead, Encoding::Proto) {
        *arrived.entry(kind).or_insert(0) += value;
    }
    assert_eq!(
        arrived,
        totals(&encoded(&whole), Encoding::Proto),
        "what arrived and what was dead-lettered add up to what was sent"
    );
    for dead_request in kafka::decode(&dead, Encoding::Proto).unwrap() {
        assert!(dead_request.unwrap().profiles >= 1);
    }
}

// ---- the receiver, fed by confluent-kafka ----

#[test]
fn the_receiver_takes_what_another_client_produces_and_dead_letters_what_it_cannot_use() {
    let Some(broker) = Broker::start("kafka-receive") else {
        return;
    };
    broker.create_topic(TOPIC, 2);
    broker.create_topic("profiles_json", 1);
    let json_receiver = "  kafka/json:\n    brokers: [BROKER]\n    initial_offset: earliest\n    group_id: json-readers\n    profiles:\n      topic: profiles_json\n      encoding: otlp_json\n"
        .replace("BROKER", &broker.bootstrap());
    let config = gateway_config(&broker, "    dead_letter: {data}/dead\n")
        .replace(
            "exporters:\n  file:",
            &format!("{json_receiver}exporters:\n  file:"),
        )
        .replace("receivers: [kafka]", "receivers: [kafka, kafka/json]");
    let gateway = Collector::start("kafka-gateway", &config);

    let requests = generated(6, 1);
    let mut records: Vec<kafka::Record> = requests
        .iter()
        .map(|request| (None, request.encode_to_vec()))
        .collect();
    let garbage = b"\xff\xff\xff not a protobuf".to_vec();
    records.insert(3, (None, garbage.clone()));
    let delivered = kafka::produce(&broker.bootstrap(), TOPIC, &records, PATIENCE).unwrap();
    let json_requests = generated(3, 100);
    let json_records: Vec<kafka::Record> = json_requests
        .iter()
        .map(|request| (None, request_to_json_string(request).into_bytes()))
        .collect();
    kafka::produce(
        &broker.bootstrap(),
        "profiles_json",
        &json_records,
        PATIENCE,
    )
    .unwrap();

    let all: Vec<_> = requests.iter().chain(&json_requests).cloned().collect();
    wait_until("every valid message written", || {
        distinct_requests(&gateway.data).0.len() >= all.len()
    });
    let (written, duplicates) = distinct_requests(&gateway.data);
    assert_eq!(duplicates, 0);
    assert_eq!(written, sorted(encoded(&all)), "every request, exactly");

    let bad = delivered[3];
    let dead_letter = gateway
        .data
        .join("dead")
        .join(format!("{TOPIC}-{}-{}.pb", bad.partition, bad.offset));
    wait_until("the bad message in the dead-letter folder", || {
        dead_letter.exists()
    });
    assert_eq!(std::fs::read(&dead_letter).unwrap(), garbage);
    let metrics = scrape(gateway.telemetry);
    assert_eq!(
        metric(
            &metrics,
            "profbridge_receiver_refused_requests_total{receiver=\"kafka\",transport=\"kafka\",reason=\"invalid\"}"
        ),
        1.0
    );
}

// ---- chains ----

/// Exports `requests` to `agent` in a thread of its own, one at a time;
/// returns the thread, which answers with how many were answered OK.
fn export_in_background(
    address: SocketAddr,
    requests: Vec<ExportProfilesServiceRequest>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let runtime = runtime();
        for chunk in requests.chunks(1) {
            export_all_ok(&runtime, address, chunk);
            std::thread::sleep(Duration::from_millis(20));
        }
        requests.len()
    })
}

#[test]
fn a_gateway_fleet_shares_the_topic_through_a_join_and_a_killed_member() {
    let Some(broker) = Broker::start("kafka-fleet") else {
        return;
    };
    broker.create_topic(TOPIC, 4);
    let agent = Collector::start("kafka-fleet-agent", &agent_config(&broker, ""));
    let member = "    group_id: fleet\n    session_timeout: 6s\n    heartbeat_interval: 1s\n    autocommit:\n      interval: 200ms\n";
    // Each gateway writes OTLP and pprof, both through persistent queues:
    // what the receiver commits is on disk, so a SIGKILL loses nothing.
    let gateway = gateway_config(&broker, member)
        .replace(
            "    format: otlp\n",
            "    format: otlp\n    sending_queue:\n      storage: {data}/queue\n  \
             file/pprof:\n    path: {data}/pprof\n    sending_queue:\n      storage: {data}/queue\n",
        )
        .replace("exporters: [file]", "exporters: [file, file/pprof]");
    let written = |collectors: &[&Path]| {
        let mut all: Vec<Vec<u8>> = collectors
            .iter()
            .flat_map(|dir| distinct_requests(dir).0)
            .collect();
        all.sort();
        all.dedup();
        all
    };

    // The second member joins while the first consumes alone: the group
    // rebalances, taking partitions from the first mid-stream.
    let first = Collector::start_logged("kafka-fleet-b1", &gateway);
    let before_join = generated(40, 1000);
    let sender = export_in_background(agent.grpc.unwrap(), before_join.clone());
    wait_until("the first gateway taking requests", || {
        receiver_metric(&first, "accepted_profiles_total") >= 5.0
    });
    let second = Collector::start_logged("kafka-fleet-b2", &gateway);
    assert_eq!(sender.join().unwrap(), before_join.len());
    wait_until("the requests of the join on the gateways", || {
        written(&[&first.data, &second.data]).len() >= before_join.len()
    });
    wait_until("the rebalance", || {
        second.log().contains("kafka partitions assigned")
            && first.log().contains("kafka partitions revoked")
    });

    // Kill the first member while requests flow, then start it again.
    let during = generated(60, 2000);
    let sender = export_in_background(agent.grpc.unwrap(), during.clone());
    let seen = receiver_metric(&first, "accepted_profiles_total");
    wait_until("the first gateway taking more", || {
        receiver_metric(&first, "accepted_profiles_total") > seen
    });
    let first_dir = first.kill();
    assert_eq!(sender.join().unwrap(), during.len());
    let first = Collector::restart_logged(first_dir);

    let sent: Vec<_> = before_join.iter().chain(&during).cloned().collect();
    wait_until("every request on the gateways", || {
        written(&[&first.data, &second.data]).len() >= sent.len()
    });
    let all = written(&[&first.data, &second.data]);
    assert_eq!(all, sorted(encoded(&sent)), "nothing lost, nothing else");
    let per_member: Vec<usize> = [&first.data, &second.data]
        .iter()
        .map(|dir| requests_under(dir).len())
        .collect();
    assert!(
        per_member.iter().all(|&count| count > 0),
        "both members took a share: {per_member:?}"
    );
    let copies: usize = per_member.iter().sum();
    eprintln!(
        "fleet: {} requests sent, {copies} written ({} redelivered after the rebalance and the kill)",
        sent.len(),
        copies - sent.len()
    );
    let sent_totals = totals(&encoded(&sent), Encoding::Proto);
    assert_eq!(totals(&all, Encoding::Proto), sent_totals);

    // The pprof files, each request's once, as go tool pprof merges them.
    if profbridge_testkit::require_tool("go", &["version"], "reading pprof files").is_none() {
        return;
    }
    wait_until("a pprof file for every request", || {
        distinct_files(&[&first.data.join("pprof"), &second.data.join("pprof")]).len() >= sent.len()
    });
    let pprof_files = distinct_files(&[&first.data.join("pprof"), &second.data.join("pprof")]);
    assert_eq!(pprof_files.len(), sent.len());
    let paths: Vec<&Path> = pprof_files.iter().map(PathBuf::as_path).collect();
    let merged = OracleProfile::read_merged(&paths);
    let by_type: BTreeMap<String, i64> = merged
        .sample_types
        .iter()
        .map(|kind| {
            let name = kind.split('/').next().unwrap();
            (name.to_owned(), merged.total(name))
        })
        .collect();
    assert_eq!(
        by_type, sent_totals,
        "go tool pprof's totals of the pprof sink"
    );
}

/// The files under `dirs` whose contents differ (after gunzip), one path
/// each: a request written twice after a crash is one.
fn distinct_files(dirs: &[&Path]) -> Vec<PathBuf> {
    let mut seen = BTreeMap::new();
    for dir in dirs {
        for path in files_under(dir) {
            let bytes = std::fs::read(&path).unwrap();
            let mut content = Vec::new();
            flate2::read::GzDecoder::new(bytes.as_slice())
                .read_to_end(&mut content)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen.entry(content).or_insert(path);
        }
    }
    seen.into_values().collect()
}

#[test]
fn the_agent_keeps_what_it_answered_ok_through_a_broker_outage() {
    let Some(mut broker) = Broker::start("kafka-outage") else {
        return;
    };
    broker.create_topic(TOPIC, 2);
    let agent = Collector::start(
        "kafka-outage-agent",
        &agent_config(&broker, "    timeout: 2s\n"),
    );
    let runtime = runtime();
    broker.stop();
    let during = generated(10, 3000);
    export_all_ok(&runtime, agent.grpc.unwrap(), &during);
    wait_until("failed attempts while the broker is down", || {
        kafka_exporter_metric(&agent, "queue_size") > 0.0
    });
    assert_eq!(kafka_exporter_metric(&agent, "sent_profiles_total"), 0.0);
    broker.restart();
    // The restarted memory broker starts empty.
    broker.create_topic(TOPIC, 2);
    let messages = kafka::consume(&broker.bootstrap(), TOPIC, during.len(), PATIENCE).unwrap();
    let mut values: Vec<Vec<u8>> = messages.into_iter().map(|m| m.value).collect();
    values.sort();
    values.dedup();
    assert_eq!(
        values,
        sorted(encoded(&during)),
        "every request answered OK"
    );
    assert_eq!(
        kafka_exporter_metric(&agent, "send_failed_profiles_total"),
        0.0
    );
}

#[test]
fn a_full_pipeline_pauses_consumption_and_drops_nothing() {
    let Some(broker) = Broker::start("kafka-full") else {
        return;
    };
    broker.create_topic(TOPIC, 2);
    let requests = generated(30, 4000);
    let records: Vec<kafka::Record> = requests
        .iter()
        .map(|request| (None, request.encode_to_vec()))
        .collect();
    kafka::produce(&broker.bootstrap(), TOPIC, &records, PATIENCE).unwrap();

    // The gateway forwards to a collector that is not there yet, through
    // a sending queue of two requests.
    let port = reserve_port();
    let config = format!(
        "receivers:\n  kafka:\n    brokers: [{}]\n    initial_offset: earliest\n\
         exporters:\n  otlp:\n    endpoint: http://127.0.0.1:{port}\n    timeout: 1s\n    sending_queue:\n      queue_size: 2\n{RETRY_FOREVER}\
         service:\n  pipelines:\n    profiles:\n      receivers: [kafka]\n      exporters: [otlp]\n{TELEMETRY}",
        broker.bootstrap()
    );
    let gateway = Collector::start_logged("kafka-full-gateway", &config);
    wait_until("consumption paused", || {
        gateway.log().contains("kafka consumption paused")
    });
    std::thread::sleep(Duration::from_secs(2));
    let taken = receiver_metric(&gateway, "accepted_profiles_total");
    assert!(
        taken < requests.len() as f64,
        "the gateway waits instead of taking everything: {taken}"
    );

    let destination = Collector::start(
        "kafka-full-destination",
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{port}\n\
             exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n{TELEMETRY}"
        ),
    );
    wait_until("every request at the destination", || {
        distinct_requests(&destination.data).0.len() >= requests.len()
    });
    assert_eq!(
        distinct_requests(&destination.data).0,
        sorted(encoded(&requests))
    );
    assert!(gateway.log().contains("kafka consumption resumed"));
}
