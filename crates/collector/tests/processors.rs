#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The resource and batch processors: resource actions with and without
//! the key; batches merged up to their size, flushed on demand, split by
//! samples and by bytes into valid requests, with every sample value and
//! the canonical content of the inputs kept (property-tested over random
//! pushes, flushes and limits).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use prost::Message;

use profbridge_collector::config::units::{self, ByteSize};
use profbridge_collector::pipeline::Profiles;
use profbridge_collector::processors::{
    BatchProcessorConfig, Batcher, ResourceProcessor, ResourceProcessorConfig,
};
use profbridge_pprof::{parse_any, DecodeOptions};
use profbridge_testkit::{corpus_files, ebpf_like_request};
use profbridge_translate::canonical::{canonicalize, SampleKey};
use profbridge_translate::otlp::{
    any_value, bool_value, int_value, key_value, resolve_strings, string_value, AnyValue,
    ExportProfilesServiceRequest, KeyValue, Resource, ResourceProfiles,
};
use profbridge_translate::{pprof_to_otlp, validate_request, PprofInput, ToOtlpOptions};

// ---------------------------------------------------------------- helpers

fn batch(request: ExportProfilesServiceRequest) -> Profiles {
    let encoded_size = request.encoded_len();
    Profiles::new(request, encoded_size)
}

fn batch_at(request: ExportProfilesServiceRequest, millis: u64) -> Profiles {
    let mut batch = batch(request);
    batch.received_at = UNIX_EPOCH + Duration::from_millis(millis);
    batch
}

fn batcher(size: usize, max_size: usize, max_bytes: u64, timeout: Duration) -> Batcher {
    Batcher::new(&BatchProcessorConfig {
        send_batch_size: size,
        send_batch_max_size: max_size,
        send_batch_max_bytes: ByteSize(max_bytes),
        timeout: units::Duration(timeout),
    })
    .unwrap()
}

const SECOND: Duration = Duration::from_secs(1);

/// The key of a resource or scope attribute list: keys and values
/// resolved through the dictionary, sorted.
fn resolved(attributes: &[KeyValue], strings: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = attributes
        .iter()
        .map(|kv| {
            let key = if kv.key.is_empty() {
                strings[usize::try_from(kv.key_strindex).unwrap()].clone()
            } else {
                kv.key.clone()
            };
            let value = kv
                .value
                .as_ref()
                .map(|v| format!("{:?}", resolve_strings(v, strings)));
            (key, value.unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

/// Sample values summed per (resource, scope, sample type), resolved.
fn totals<'a>(
    requests: impl IntoIterator<Item = &'a ExportProfilesServiceRequest>,
) -> BTreeMap<String, i128> {
    let mut totals = BTreeMap::new();
    for request in requests {
        let strings = &request.dictionary.as_ref().unwrap().string_table;
        for rp in &request.resource_profiles {
            let resource = rp.resource.clone().unwrap_or_default();
            for sp in &rp.scope_profiles {
                let scope = sp.scope.clone().unwrap_or_default();
                for profile in &sp.profiles {
                    let sample_type = profile.sample_type.unwrap_or_default();
                    let key = format!(
                        "{:?} {} {:?} {}/{}",
                        resolved(&resource.attributes, strings),
                        scope.name,
                        resolved(&scope.attributes, strings),
                        strings[sample_type.type_strindex as usize],
                        strings[sample_type.unit_strindex as usize],
                    );
                    let sum: i128 = profile
                        .samples
                        .iter()
                        .flat_map(|s| &s.values)
                        .map(|&v| i128::from(v))
                        .sum();
                    *totals.entry(key).or_insert(0) += sum;
                }
            }
        }
    }
    totals
}

type Samples = BTreeMap<SampleKey, (i64, Vec<(u64, i64)>)>;

/// The canonical content of requests, flattened: per resource, scope and
/// profile header, every sample with its values summed and its timed
/// observations sorted. Pieces of one profile, and equal profiles of
/// several requests, land on one entry.
fn content<'a>(
    requests: impl IntoIterator<Item = &'a ExportProfilesServiceRequest>,
) -> BTreeMap<String, Samples> {
    let mut content: BTreeMap<String, Samples> = BTreeMap::new();
    for request in requests {
        let strings = &request.dictionary.as_ref().unwrap().string_table;
        for (resource, rp) in canonicalize(request)
            .into_iter()
            .zip(&request.resource_profiles)
        {
            for (scope, sp) in resource.scopes.into_iter().zip(&rp.scope_profiles) {
                let raw_scope_attributes =
                    resolved(&sp.scope.clone().unwrap_or_default().attributes, strings);
                for profile in scope.profiles {
                    let key = format!(
                        "{:?} {} {} {} {:?} {} | {:?} {} {} {:?} {} {:?}",
                        resource.attributes,
                        resource.schema_url,
                        scope.name,
                        scope.version,
                        raw_scope_attributes,
                        scope.schema_url,
                        profile.sample_type,
                        profile.time_unix_nano,
                        profile.duration_nano,
                        profile.period_type,
                        profile.period,
                        profile.attributes,
                    );
                    let samples = content.entry(key).or_default();
                    for (sample, values) in profile.samples {
                        let entry = samples.entry(sample).or_default();
                        entry.0 += values.total;
                        entry.1.extend(values.observations);
                    }
                }
            }
        }
    }
    for samples in content.values_mut() {
        for (_, observations) in samples.values_mut() {
            observations.sort_unstable();
        }
    }
    content
}

/// Every batch is a valid request, within the limits unless it holds a
/// single sample, and its sizes are right.
fn assert_within(batches: &[Profiles], max_size: usize, max_bytes: u64) {
    for (i, batch) in batches.iter().enumerate() {
        let validated = validate_request(batch.request())
            .unwrap_or_else(|e| panic!("batch {i} has an invalid dictionary: {e}"));
        assert!(
            validated.invalid.is_empty(),
            "batch {i}: {:?}",
            validated.invalid
        );
        assert_eq!(
            batch.encoded_size,
            batch.request().encoded_len(),
            "batch {i}"
        );
        let samples = batch.sample_count();
        if max_size > 0 {
            assert!(samples <= max_size, "batch {i}: {samples} > {max_size}");
        }
        if max_bytes > 0 && samples > 1 {
            assert!(
                batch.encoded_size as u64 <= max_bytes,
                "batch {i}: {} bytes > {max_bytes} with {samples} samples",
                batch.encoded_size
            );
        }
    }
}

fn assert_same_content(inputs: &[ExportProfilesServiceRequest], outputs: &[Profiles]) {
    let outputs: Vec<&ExportProfilesServiceRequest> = outputs.iter().map(|b| b.request()).collect();
    assert_eq!(totals(inputs), totals(outputs.iter().copied()));
    assert!(
        content(inputs) == content(outputs.iter().copied()),
        "canonical content differs"
    );
}

fn samples_of(batches: &[Profiles]) -> Vec<usize> {
    batches.iter().map(Profiles::sample_count).collect()
}

/// One request per corpus file that converts, with its bytes kept as the
/// original payload and the file's name as `service.name`.
fn corpus_requests() -> &'static [ExportProfilesServiceRequest] {
    static REQUESTS: OnceLock<Vec<ExportProfilesServiceRequest>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        let options = ToOtlpOptions {
            original_payload: true,
            ..ToOtlpOptions::default()
        };
        corpus_files()
            .iter()
            .filter_map(|file| {
                let (profile, _) = parse_any(&file.bytes, &DecodeOptions::default()).ok()?;
                let resource_attributes = [key_value("service.name", string_value(&*file.name))];
                let input = PprofInput {
                    profile: &profile,
                    resource_attributes: &resource_attributes,
                    scope: None,
                    original_payload: Some(&file.bytes),
                };
                let converted = pprof_to_otlp(&[input], &options);
                converted.rejected.is_empty().then_some(converted.request)
            })
            .collect()
    })
}

/// eBPF-like requests are slow to build (20,000 locations each): a few,
/// built once.
fn ebpf(stacks: usize, seed: u64) -> ExportProfilesServiceRequest {
    static REQUESTS: OnceLock<Vec<((usize, u64), ExportProfilesServiceRequest)>> = OnceLock::new();
    let cache = REQUESTS.get_or_init(|| {
        [(10, 1), (10, 2), (40, 3), (1000, 7), (2000, 3)]
            .into_iter()
            .map(|key| (key, ebpf_like_request(key.0, key.1)))
            .collect()
    });
    cache
        .iter()
        .find(|(key, _)| *key == (stacks, seed))
        .map_or_else(|| ebpf_like_request(stacks, seed), |(_, r)| r.clone())
}

// ------------------------------------------------------------- resource

fn resource_processor(yaml_like_json: &str) -> ResourceProcessor {
    let config: ResourceProcessorConfig = serde_json::from_str(yaml_like_json).unwrap();
    ResourceProcessor::new(&config).unwrap()
}

fn resource_attributes(request: &ExportProfilesServiceRequest, index: usize) -> Vec<KeyValue> {
    request.resource_profiles[index]
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .clone()
}

#[test]
fn resource_actions_follow_the_collector() {
    let mut request = ebpf(10, 1);
    let without_resource = ResourceProfiles {
        resource: None,
        ..request.resource_profiles[0].clone()
    };
    request.resource_profiles.push(without_resource);
    let processor = resource_processor(
        r#"{"attributes": [
            {"key": "service.name", "value": "ignored", "action": "insert"},
            {"key": "deployment.environment", "value": "prod", "action": "insert"},
            {"key": "service.name", "value": "billing", "action": "update"},
            {"key": "absent", "value": 1, "action": "update"},
            {"key": "region", "value": "eu", "action": "upsert"},
            {"key": "deployment.environment", "value": "staging", "action": "upsert"},
            {"key": "host.name", "action": "delete"},
            {"key": "service.namespace", "from_attribute": "region", "action": "insert"},
            {"key": "shard", "value": 7, "action": "upsert"},
            {"key": "ratio", "value": 0.25, "action": "upsert"},
            {"key": "canary", "value": false, "action": "upsert"},
            {"key": "canary", "action": "delete"}
        ]}"#,
    );
    processor.process(&mut request);
    let double = AnyValue {
        value: Some(any_value::Value::DoubleValue(0.25)),
    };
    assert_eq!(
        resource_attributes(&request, 0),
        [
            key_value("service.name", string_value("billing")),
            key_value("deployment.environment", string_value("staging")),
            key_value("region", string_value("eu")),
            key_value("service.namespace", string_value("eu")),
            key_value("shard", int_value(7)),
            key_value("ratio", double),
        ]
    );
    assert_eq!(
        resource_attributes(&request, 1),
        resource_attributes(&request, 0),
        "a missing resource is created; insert adds service.name, update then changes it"
    );
    assert!(validate_request(&request).unwrap().invalid.is_empty());
}

#[test]
fn resource_deletes_and_updates_only_what_is_there() {
    let mut request = ebpf(10, 1);
    let before = resource_attributes(&request, 0);
    resource_processor(
        r#"{"attributes": [
            {"key": "absent", "action": "delete"},
            {"key": "absent", "value": true, "action": "update"},
            {"key": "absent", "from_attribute": "service.name", "action": "update"}
        ]}"#,
    )
    .process(&mut request);
    assert_eq!(resource_attributes(&request, 0), before);
    resource_processor(r#"{"attributes": [{"key": "service.name", "action": "delete"}]}"#)
        .process(&mut request);
    assert!(resource_attributes(&request, 0).is_empty());
    resource_processor(r#"{"attributes": [{"key": "on", "value": true, "action": "insert"}]}"#)
        .process(&mut request);
    assert_eq!(
        resource_attributes(&request, 0),
        [key_value("on", bool_value(true))]
    );
}

#[test]
fn resource_options_are_checked() {
    let config: ResourceProcessorConfig = serde_json::from_str(
        r#"{"attributes": [{"key": "a", "action": "insert"}, {"key": "b", "value": 1, "action": "delete"}]}"#,
    )
    .unwrap();
    assert_eq!(
        ResourceProcessor::new(&config).unwrap_err().to_string(),
        "attributes[0].value: action insert needs a value (or from_attribute)\n\
         attributes[1].value: action delete takes no value; remove the key"
    );
}

// ---------------------------------------------------------------- batch

#[test]
fn small_requests_merge_until_the_batch_size() {
    let inputs = vec![ebpf(10, 1), ebpf(10, 2), ebpf(10, 1)];
    let mut batcher = batcher(25, 0, 0, SECOND);
    assert!(batcher.is_empty() && batcher.deadline().is_none());
    assert!(batcher.push(batch_at(inputs[0].clone(), 3_000)).is_empty());
    assert!(batcher.pending_since().is_some());
    assert!(batcher.push(batch_at(inputs[1].clone(), 1_000)).is_empty());
    assert_eq!(batcher.pending_samples(), 20);
    let out = batcher.push(batch_at(inputs[2].clone(), 2_000));
    assert_eq!(samples_of(&out), [30]);
    assert_eq!(
        out[0].received_at,
        UNIX_EPOCH + Duration::from_millis(1_000)
    );
    assert_eq!(out[0].request().resource_profiles.len(), 3);
    assert!(batcher.is_empty() && batcher.pending_since().is_none());
    assert_within(&out, 0, 0);
    assert_same_content(&inputs, &out);
    let single = out[0].request().dictionary.as_ref().unwrap();
    let first = inputs[0].dictionary.as_ref().unwrap();
    assert!(
        single.location_table.len() < 2 * first.location_table.len(),
        "the merge shares the dictionary entries of requests 1 and 3"
    );
}

#[test]
fn flush_sends_what_is_pending() {
    let inputs = vec![ebpf(10, 1), ebpf(40, 3)];
    let mut batcher = batcher(8192, 0, 0, Duration::from_millis(200));
    for input in &inputs {
        assert!(batcher.push(batch(input.clone())).is_empty());
    }
    let since = batcher.pending_since().unwrap();
    assert_eq!(batcher.deadline(), Some(since + Duration::from_millis(200)));
    assert_eq!(
        batcher.pending_bytes(),
        inputs.iter().map(Message::encoded_len).sum::<usize>()
    );
    let out = batcher.flush();
    assert_eq!(samples_of(&out), [50]);
    assert_same_content(&inputs, &out);
    assert!(batcher.flush().is_empty());
    assert!(batcher.is_empty() && batcher.deadline().is_none());
}

#[test]
fn without_timeout_every_request_goes_at_once() {
    let mut batcher = batcher(8192, 0, 0, Duration::ZERO);
    let out = batcher.push(batch(ebpf(10, 1)));
    assert_eq!(samples_of(&out), [10]);
    assert!(batcher.is_empty());
    let empty = ExportProfilesServiceRequest::default();
    assert!(batcher.push(batch(empty)).is_empty(), "nothing to send");
    assert!(batcher.is_empty());
}

#[test]
fn oversized_requests_are_split_by_samples() {
    let input = ebpf(1000, 7);
    let mut batcher = batcher(150, 300, 0, SECOND);
    let mut out = batcher.push(batch_at(input.clone(), 5));
    assert_eq!(samples_of(&out), [300, 300, 300]);
    assert_eq!(batcher.pending_samples(), 100, "the rest waits for more");
    out.extend(batcher.flush());
    assert_eq!(samples_of(&out), [300, 300, 300, 100]);
    assert!(out
        .iter()
        .all(|b| b.received_at == UNIX_EPOCH + Duration::from_millis(5)));
    assert_within(&out, 300, 0);
    assert_same_content(std::slice::from_ref(&input), &out);
    let locations = input.dictionary.as_ref().unwrap().location_table.len();
    for piece in &out {
        let used = piece
            .request()
            .dictionary
            .as_ref()
            .unwrap()
            .location_table
            .len();
        assert!(
            used < locations * 3 / 4,
            "pieces carry pruned dictionaries: {used} of {locations} locations"
        );
    }
}

#[test]
fn oversized_requests_are_split_by_bytes() {
    let input = ebpf(2000, 3);
    let max_bytes = 64 << 10;
    let mut batcher = batcher(8192, 0, max_bytes, SECOND);
    let mut out = batcher.push(batch(input.clone()));
    out.extend(batcher.flush());
    assert!(out.len() > 5, "{} pieces", out.len());
    assert_eq!(out.iter().map(Profiles::sample_count).sum::<usize>(), 2000);
    assert_within(&out, 0, max_bytes);
    let filled: usize = out.iter().map(|b| b.encoded_size).sum();
    assert!(
        filled as u64 > (out.len() as u64 - 1) * max_bytes * 3 / 4,
        "pieces are filled: {filled} bytes in {} pieces",
        out.len()
    );
    assert_same_content(&[input], &out);
}

#[test]
fn a_sample_larger_than_the_byte_limit_goes_alone() {
    let input = ebpf(40, 3);
    let mut batcher = batcher(8192, 0, 100, SECOND);
    let mut out = batcher.push(batch(input.clone()));
    out.extend(batcher.flush());
    assert_eq!(samples_of(&out), vec![1; 40]);
    assert!(out.iter().all(|b| b.encoded_size > 100));
    assert_within(&out, 0, 100);
    assert_same_content(&[input], &out);
}

fn original_payload_bytes<'a>(
    requests: impl IntoIterator<Item = &'a ExportProfilesServiceRequest>,
) -> usize {
    requests
        .into_iter()
        .flat_map(|r| &r.resource_profiles)
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.original_payload.len())
        .sum()
}

/// Pushes every input, then flushes; checks limits, values, canonical
/// content and that no original payload is duplicated.
fn check_batching(
    inputs: &[ExportProfilesServiceRequest],
    size: usize,
    max_size: usize,
    max_bytes: u64,
) {
    let mut batcher = batcher(size, max_size, max_bytes, SECOND);
    let mut out = Vec::new();
    for input in inputs {
        out.extend(batcher.push(batch(input.clone())));
    }
    out.extend(batcher.flush());
    assert_within(&out, max_size, max_bytes);
    assert_same_content(inputs, &out);
    assert_eq!(
        original_payload_bytes(out.iter().map(|b| b.request())),
        original_payload_bytes(inputs),
        "original payloads are neither lost nor duplicated"
    );
}

#[test]
fn corpus_requests_survive_batching() {
    let inputs = corpus_requests();
    // large.cpu alone (40,000 samples) takes seconds to compare: it gets
    // one configuration, the others several.
    let (large, small): (Vec<_>, Vec<_>) = inputs
        .iter()
        .cloned()
        .partition(|r| batch(r.clone()).sample_count() > 10_000);
    for (size, max_size, max_bytes) in
        [(20, 50, 16 << 10), (1, 0, 2 << 10), (5, 7, 0), (8192, 0, 0)]
    {
        check_batching(&small, size, max_size, max_bytes);
    }
    check_batching(&large, 1000, 5000, 256 << 10);
}

#[test]
fn split_pieces_of_a_pprof_keep_its_sample_types_together() {
    let mut splits = 0;
    for request in corpus_requests() {
        let types = request.resource_profiles[0].scope_profiles[0]
            .profiles
            .len();
        if types < 2 || batch(request.clone()).sample_count() > 10_000 {
            continue;
        }
        let mut batcher = batcher(1, 3 * types, 0, SECOND);
        let out = batcher.push(batch(request.clone()));
        assert!(batcher.is_empty());
        splits += out.len() - 1;
        for piece in &out {
            let profiles = &piece.request().resource_profiles[0].scope_profiles[0].profiles;
            assert_eq!(profiles.len(), types, "every sample type in every piece");
            let rows: Vec<usize> = profiles.iter().map(|p| p.samples.len()).collect();
            assert!(rows.iter().all(|&n| n == rows[0]), "{rows:?}");
        }
    }
    assert!(splits > 0 || corpus_requests().is_empty());
}

// ------------------------------------------------------------- property

/// Requests for the property test: small synthetic ones with resource
/// attributes given by dictionary index, eBPF-like ones and corpus ones.
fn pool() -> Vec<ExportProfilesServiceRequest> {
    let mut indexed = ebpf(10, 2);
    let d = indexed.dictionary.as_mut().unwrap();
    d.string_table.push("host.name".into());
    let key = i32::try_from(d.string_table.len() - 1).unwrap();
    indexed.resource_profiles[0]
        .resource
        .get_or_insert_with(Resource::default)
        .attributes
        .push(KeyValue {
            key: String::new(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValueStrindex(key)),
            }),
            key_strindex: key,
        });
    let mut pool = vec![ebpf(10, 1), indexed, ebpf(40, 3)];
    pool.extend(corpus_requests().iter().take(8).cloned());
    pool
}

#[derive(Debug, Clone)]
enum Step {
    Push(usize),
    Flush,
}

fn steps(pool: usize) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..pool).prop_map(Step::Push),
            1 => Just(Step::Flush),
        ],
        1..10,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn batching_loses_and_duplicates_nothing(
        steps in steps(11),
        size in 0usize..120,
        extra in prop_oneof![Just(None), (0usize..200).prop_map(Some)],
        max_bytes in prop_oneof![Just(0u64), 200u64..200_000],
        timeout in prop_oneof![Just(Duration::ZERO), Just(SECOND)],
    ) {
        let pool = pool();
        let max_size = extra.map_or(0, |extra| size.max(1) + extra);
        let mut batcher = batcher(size, max_size, max_bytes, timeout);
        let mut inputs = Vec::new();
        let mut out = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Push(index) => {
                    let request = pool[index % pool.len()].clone();
                    inputs.push(request.clone());
                    out.extend(batcher.push(batch_at(request, 1_000 + i as u64)));
                }
                Step::Flush => out.extend(batcher.flush()),
            }
        }
        out.extend(batcher.flush());
        prop_assert!(batcher.is_empty());
        assert_within(&out, max_size, max_bytes);
        assert_same_content(&inputs, &out);
        prop_assert_eq!(
            out.iter().map(Profiles::sample_count).sum::<usize>(),
            inputs.iter().map(|r| batch(r.clone()).sample_count()).sum::<usize>()
        );
        for b in &out {
            prop_assert!(b.received_at >= UNIX_EPOCH + Duration::from_millis(1_000));
        }
    }
}

#[test]
fn received_at_is_the_earliest_part() {
    let mut batcher = batcher(20, 0, 0, SECOND);
    batcher.push(batch_at(ebpf(10, 1), 9_000));
    let out = batcher.push(batch_at(ebpf(10, 2), 4_000));
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].received_at,
        UNIX_EPOCH + Duration::from_millis(4_000)
    );
    assert!(out[0].received_at < SystemTime::now());
}
