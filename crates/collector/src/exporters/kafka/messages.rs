//! The messages of one batch: grouped by topic (and by resource when
//! messages are keyed by resource), encoded, and split by profile with
//! pruned dictionaries where a group is larger than `max_message_bytes`.
//! A profile larger than that on its own cannot be sent.

use bytes::Bytes;
use prost::Message as _;
use xxhash_rust::xxh3::xxh3_128;

use profbridge_translate::json::request_to_json_string;
use profbridge_translate::merge_requests;
use profbridge_translate::otlp::{
    any_value, ExportProfilesServiceRequest, KeyValue, ResourceProfiles,
};

use crate::pipeline::{Profiles, Sent};
use crate::protocol::compression::Compression;
use crate::settings::kafka::MessageEncoding;
use crate::split::{split, Limits};

/// How a batch becomes messages.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub topic: String,
    pub topic_from_attribute: Option<String>,
    pub by_resource: bool,
    pub encoding: MessageEncoding,
    pub max_message_bytes: usize,
}

/// One Kafka message.
#[derive(Debug)]
pub(super) struct Message {
    pub topic: String,
    pub key: Option<[u8; 16]>,
    pub value: Bytes,
}

/// The messages of a batch, and what cannot be sent.
#[derive(Debug, Default)]
pub(super) struct Planned {
    pub messages: Vec<Message>,
    /// Profiles each larger than `max_message_bytes` alone, as one request.
    pub too_large: Option<ExportProfilesServiceRequest>,
    /// How the values were made, for `profbridge_exporter_sent_requests_total`.
    pub sent: Sent,
}

/// Splitting again stops after this many rounds (each at least halves
/// the pieces); what is still too large by then goes alone.
const MAX_ROUNDS: usize = 8;

pub(super) fn plan(batch: &Profiles, layout: &Layout) -> Planned {
    let request = batch.request();
    let whole = layout.topic_from_attribute.is_none() && !layout.by_resource;
    if whole && layout.encoding == MessageEncoding::OtlpProto {
        let value = batch.protobuf();
        if value.len() <= layout.max_message_bytes {
            return Planned {
                messages: vec![Message {
                    topic: layout.topic.clone(),
                    key: None,
                    value,
                }],
                too_large: None,
                sent: batch.sent_as(Compression::Identity),
            };
        }
    }
    let groups = if whole {
        vec![(layout.topic.clone(), None, request.clone())]
    } else {
        groups(request, layout)
    };
    let mut planned = Planned {
        sent: match layout.encoding {
            MessageEncoding::OtlpProto => Sent::Encoded,
            MessageEncoding::OtlpJson => Sent::Other,
        },
        ..Planned::default()
    };
    let mut too_large = Vec::new();
    for (topic, key, group) in groups {
        let mut fitted = Vec::new();
        fit(group, layout, 0, &mut fitted, &mut too_large);
        planned
            .messages
            .extend(fitted.into_iter().map(|value| Message {
                topic: topic.clone(),
                key,
                value,
            }));
    }
    if !too_large.is_empty() {
        planned.too_large = Some(merge_requests(too_large));
    }
    planned
}

/// The request's resources grouped by topic, and by resource when keyed:
/// (topic, key, request with a pruned dictionary).
fn groups(
    request: &ExportProfilesServiceRequest,
    layout: &Layout,
) -> Vec<(String, Option<[u8; 16]>, ExportProfilesServiceRequest)> {
    let mut groups: Vec<(String, Option<[u8; 16]>, Vec<ResourceProfiles>)> = Vec::new();
    for resource in &request.resource_profiles {
        let attributes = resource
            .resource
            .as_ref()
            .map_or(&[][..], |r| r.attributes.as_slice());
        let topic = layout
            .topic_from_attribute
            .as_deref()
            .and_then(|name| string_attribute(attributes, name))
            .unwrap_or(&layout.topic)
            .to_owned();
        let key = layout.by_resource.then(|| attributes_key(attributes));
        match groups.iter_mut().find(|(t, k, _)| *t == topic && *k == key) {
            Some((_, _, resources)) => resources.push(resource.clone()),
            None => groups.push((topic, key, vec![resource.clone()])),
        }
    }
    if groups.len() == 1 {
        return groups
            .into_iter()
            .map(|(topic, key, _)| (topic, key, request.clone()))
            .collect();
    }
    let unlimited = Limits {
        samples: None,
        bytes: None,
        whole_profiles: true,
    };
    groups
        .into_iter()
        .filter_map(|(topic, key, resource_profiles)| {
            let group = ExportProfilesServiceRequest {
                resource_profiles,
                dictionary: request.dictionary.clone(),
            };
            let pruned = split(&group, unlimited).pop()?;
            Some((topic, key, pruned))
        })
        .collect()
}

/// Encodes `request` into messages of at most `max_message_bytes`,
/// splitting it by profile as long as that helps.
fn fit(
    request: ExportProfilesServiceRequest,
    layout: &Layout,
    round: usize,
    fitted: &mut Vec<Bytes>,
    too_large: &mut Vec<ExportProfilesServiceRequest>,
) {
    let value = encode(&request, layout.encoding);
    if value.len() <= layout.max_message_bytes {
        fitted.push(value);
        return;
    }
    if profile_count(&request) <= 1 || round >= MAX_ROUNDS {
        too_large.push(request);
        return;
    }
    // Pieces are measured in protobuf bytes; JSON takes more per byte.
    let protobuf = request.encoded_len();
    let scaled = layout.max_message_bytes.saturating_mul(protobuf) / value.len().max(1);
    let pieces = split(
        &request,
        Limits {
            samples: None,
            bytes: Some(scaled.min(protobuf / 2).max(1)),
            whole_profiles: true,
        },
    );
    for piece in pieces {
        fit(piece, layout, round + 1, fitted, too_large);
    }
}

fn encode(request: &ExportProfilesServiceRequest, encoding: MessageEncoding) -> Bytes {
    match encoding {
        MessageEncoding::OtlpProto => Bytes::from(request.encode_to_vec()),
        MessageEncoding::OtlpJson => Bytes::from(request_to_json_string(request)),
    }
}

fn profile_count(request: &ExportProfilesServiceRequest) -> usize {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .map(|s| s.profiles.len())
        .sum()
}

fn string_attribute<'a>(attributes: &'a [KeyValue], name: &str) -> Option<&'a String> {
    attributes
        .iter()
        .find(|kv| kv.key == name)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .and_then(|value| match value {
            any_value::Value::StringValue(text) => Some(text),
            _ => None,
        })
}

/// A message key from resource attributes: the same attributes in any
/// order give the same key.
fn attributes_key(attributes: &[KeyValue]) -> [u8; 16] {
    let mut sorted: Vec<&KeyValue> = attributes.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let mut bytes = Vec::new();
    for kv in sorted {
        kv.encode_length_delimited(&mut bytes).unwrap_or_default();
    }
    xxh3_128(&bytes).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_translate::otlp::{
        key_value, string_value, Function, Line, Location, Profile, Resource, Sample,
        ScopeProfiles, ValueType,
    };
    use profbridge_translate::{validate_request, DictionaryBuilder};

    /// Resources named `services[r]`, each with profiles of
    /// `samples[p]` samples whose values are 1.
    fn request(services: &[&str], samples: &[usize]) -> ExportProfilesServiceRequest {
        let mut b = DictionaryBuilder::new();
        let kind = b.string("cpu");
        let resource_profiles = services
            .iter()
            .map(|service| {
                let profiles = samples
                    .iter()
                    .map(|&n| Profile {
                        sample_type: Some(ValueType {
                            type_strindex: kind,
                            unit_strindex: kind,
                        }),
                        samples: (0..n)
                            .map(|i| {
                                let name = b.string(&format!("{service}::f{i}"));
                                let function = b.function(Function {
                                    name_strindex: name,
                                    ..Function::default()
                                });
                                let location = b.location(Location {
                                    lines: vec![Line {
                                        function_index: function,
                                        ..Line::default()
                                    }],
                                    ..Location::default()
                                });
                                Sample {
                                    stack_index: b.stack(&[location]),
                                    values: vec![1],
                                    ..Sample::default()
                                }
                            })
                            .collect(),
                        ..Profile::default()
                    })
                    .collect();
                ResourceProfiles {
                    resource: Some(Resource {
                        attributes: vec![
                            key_value("service.name", string_value(*service)),
                            key_value("topic", string_value(format!("t-{service}"))),
                        ],
                        ..Resource::default()
                    }),
                    scope_profiles: vec![ScopeProfiles {
                        profiles,
                        ..ScopeProfiles::default()
                    }],
                    schema_url: String::new(),
                }
            })
            .collect();
        ExportProfilesServiceRequest {
            resource_profiles,
            dictionary: Some(b.finish()),
        }
    }

    fn layout(max_message_bytes: usize) -> Layout {
        Layout {
            topic: "otlp_profiles".into(),
            topic_from_attribute: None,
            by_resource: false,
            encoding: MessageEncoding::OtlpProto,
            max_message_bytes,
        }
    }

    fn decoded(message: &Message) -> ExportProfilesServiceRequest {
        let request = ExportProfilesServiceRequest::decode(message.value.clone()).unwrap();
        assert!(validate_request(&request).unwrap().invalid.is_empty());
        request
    }

    fn samples(request: &ExportProfilesServiceRequest) -> usize {
        request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
            .map(|p| p.samples.len())
            .sum()
    }

    #[test]
    fn a_request_within_the_limit_is_one_message_as_it_arrived() {
        let source = request(&["a", "b"], &[3, 4]);
        let batch = Profiles::new(source.clone(), source.encoded_len());
        let planned = plan(&batch, &layout(1 << 20));
        assert_eq!(planned.messages.len(), 1);
        assert_eq!(decoded(&planned.messages[0]), source);
        assert!(planned.too_large.is_none());
    }

    #[test]
    fn large_requests_split_by_profile_and_a_profile_too_large_alone_is_kept_out() {
        let source = request(&["a"], &[20, 20, 20, 300, 20]);
        let batch = Profiles::new(source.clone(), source.encoded_len());
        let one = request(&["a"], &[40]).encoded_len();
        let planned = plan(&batch, &layout(one));
        let per_message: Vec<Vec<usize>> = planned
            .messages
            .iter()
            .map(|m| {
                assert!(m.value.len() <= one);
                decoded(m).resource_profiles[0].scope_profiles[0]
                    .profiles
                    .iter()
                    .map(|p| p.samples.len())
                    .collect()
            })
            .collect();
        assert_eq!(per_message.concat(), [20, 20, 20, 20]);
        assert!(per_message.len() >= 2);
        let too_large = planned.too_large.unwrap();
        assert_eq!(samples(&too_large), 300);
    }

    #[test]
    fn json_messages_stay_within_the_limit_too() {
        let source = request(&["a"], &[10; 12]);
        let batch = Profiles::new(source.clone(), source.encoded_len());
        let mut json = layout(request_to_json_string(&request(&["a"], &[10; 3])).len());
        json.encoding = MessageEncoding::OtlpJson;
        let planned = plan(&batch, &json);
        assert!(planned.messages.len() >= 4);
        let total: usize = planned
            .messages
            .iter()
            .map(|m| {
                assert!(m.value.len() <= json.max_message_bytes);
                let request = profbridge_translate::json::request_from_json(&m.value).unwrap();
                samples(&request)
            })
            .sum();
        assert_eq!(total, 120);
    }

    #[test]
    fn keyed_by_resource_and_topic_from_an_attribute() {
        let source = request(&["a", "b", "a"], &[2]);
        let batch = Profiles::new(source.clone(), source.encoded_len());
        let mut keyed = layout(1 << 20);
        keyed.by_resource = true;
        keyed.topic_from_attribute = Some("topic".into());
        let planned = plan(&batch, &keyed);
        let shape: Vec<(String, usize)> = planned
            .messages
            .iter()
            .map(|m| (m.topic.clone(), decoded(m).resource_profiles.len()))
            .collect();
        assert_eq!(shape, [("t-a".into(), 2), ("t-b".into(), 1)]);
        assert_ne!(planned.messages[0].key, planned.messages[1].key);
        let mut reordered = source.resource_profiles[0].resource.clone().unwrap();
        reordered.attributes.reverse();
        assert_eq!(
            Some(attributes_key(&reordered.attributes)),
            planned.messages[0].key
        );
    }
}
