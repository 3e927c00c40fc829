//! The `resource` processor: inserts, updates, upserts or deletes resource
//! attributes, with the OpenTelemetry Collector's resourceprocessor
//! semantics. Actions run in the order configured, each seeing what the
//! ones before it did.

pub mod config;
mod factory;

use std::sync::Arc;

use profbridge_translate::otlp::{
    any_value, bool_value, int_value, resolve_strings, string_value, AnyValue,
    ExportProfilesServiceRequest, KeyValue, Resource,
};

pub use config::{Action, AttributeAction, AttributeValue, ResourceProcessorConfig};
pub use factory::ResourceProcessorFactory;

use super::InvalidOptions;
use crate::pipeline::{Processed, Processor, Profiles};

#[derive(Debug, Clone)]
pub struct ResourceProcessor {
    actions: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Step {
    key: String,
    action: Action,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Value(AnyValue),
    Attribute(String),
    Nothing,
}

impl ResourceProcessor {
    /// Fails with every problem of the options, one per line.
    pub fn new(config: &ResourceProcessorConfig) -> Result<Self, InvalidOptions> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(InvalidOptions(problems));
        }
        let actions = config
            .attributes
            .iter()
            .map(|a| Step {
                key: a.key.clone(),
                action: a.action,
                source: match (&a.value, &a.from_attribute) {
                    (Some(value), _) => Source::Value(any_value_of(value)),
                    (None, Some(attribute)) => Source::Attribute(attribute.clone()),
                    (None, None) => Source::Nothing,
                },
            })
            .collect();
        Ok(Self { actions })
    }

    /// Applies every action to the resource of every `ResourceProfiles`,
    /// creating the resource where there is none.
    pub fn process(&self, request: &mut ExportProfilesServiceRequest) {
        let strings: &[String] = request
            .dictionary
            .as_ref()
            .map_or(&[], |d| d.string_table.as_slice());
        for resource_profiles in &mut request.resource_profiles {
            let resource = resource_profiles
                .resource
                .get_or_insert_with(Resource::default);
            for step in &self.actions {
                step.apply(&mut resource.attributes, strings);
            }
        }
    }
}

fn any_value_of(value: &AttributeValue) -> AnyValue {
    match value {
        AttributeValue::String(s) => string_value(s.as_str()),
        AttributeValue::Int(i) => int_value(*i),
        AttributeValue::Double(d) => AnyValue {
            value: Some(any_value::Value::DoubleValue(*d)),
        },
        AttributeValue::Bool(b) => bool_value(*b),
    }
}

/// The attribute's key: its text, or the dictionary string it points at.
fn key_of<'a>(attribute: &'a KeyValue, strings: &'a [String]) -> &'a str {
    if attribute.key.is_empty() {
        usize::try_from(attribute.key_strindex)
            .ok()
            .and_then(|i| strings.get(i))
            .map_or("", String::as_str)
    } else {
        &attribute.key
    }
}

impl Step {
    fn apply(&self, attributes: &mut Vec<KeyValue>, strings: &[String]) {
        let present = attributes
            .iter()
            .any(|attribute| key_of(attribute, strings) == self.key);
        let writes = match self.action {
            Action::Insert => !present,
            Action::Update => present,
            Action::Upsert => true,
            Action::Delete => {
                attributes.retain(|attribute| key_of(attribute, strings) != self.key);
                return;
            }
        };
        if !writes {
            return;
        }
        let Some(value) = self.value(attributes, strings) else {
            return;
        };
        if present {
            for attribute in attributes
                .iter_mut()
                .filter(|attribute| key_of(attribute, strings) == self.key)
            {
                attribute.value = Some(value.clone());
            }
        } else {
            attributes.push(KeyValue {
                key: self.key.clone(),
                value: Some(value),
                key_strindex: 0,
            });
        }
    }

    /// The value to write; `None` when copying from an attribute the
    /// resource does not have.
    fn value(&self, attributes: &[KeyValue], strings: &[String]) -> Option<AnyValue> {
        match &self.source {
            Source::Value(value) => Some(value.clone()),
            Source::Attribute(name) => attributes
                .iter()
                .find(|attribute| key_of(attribute, strings) == name)
                .map(|attribute| {
                    attribute
                        .value
                        .as_ref()
                        .map_or(AnyValue { value: None }, |v| resolve_strings(v, strings))
                }),
            Source::Nothing => None,
        }
    }
}

impl Processor for ResourceProcessor {
    fn process(&mut self, mut batch: Profiles) -> Processed {
        ResourceProcessor::process(self, batch.request_mut());
        Processed::Passed(Arc::new(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_translate::otlp::{key_value, ProfilesDictionary, ResourceProfiles};

    fn processor(
        actions: &[(&str, Action, Option<AttributeValue>, Option<&str>)],
    ) -> ResourceProcessor {
        let config = ResourceProcessorConfig {
            attributes: actions
                .iter()
                .map(|(key, action, value, from)| AttributeAction {
                    key: (*key).to_owned(),
                    action: *action,
                    value: value.clone(),
                    from_attribute: from.map(str::to_owned),
                })
                .collect(),
        };
        ResourceProcessor::new(&config).unwrap()
    }

    fn request(attributes: Vec<KeyValue>) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest {
            resource_profiles: vec![ResourceProfiles {
                resource: Some(Resource {
                    attributes,
                    ..Resource::default()
                }),
                ..ResourceProfiles::default()
            }],
            dictionary: Some(ProfilesDictionary {
                string_table: vec![String::new(), "host.name".into(), "box-1".into()],
                ..ProfilesDictionary::default()
            }),
        }
    }

    fn attributes(request: &ExportProfilesServiceRequest) -> Vec<KeyValue> {
        request.resource_profiles[0]
            .resource
            .as_ref()
            .unwrap()
            .attributes
            .clone()
    }

    fn text(s: &str) -> Option<AttributeValue> {
        Some(AttributeValue::String(s.to_owned()))
    }

    #[test]
    fn keys_given_by_dictionary_index_are_matched() {
        let by_index = KeyValue {
            key: String::new(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValueStrindex(2)),
            }),
            key_strindex: 1,
        };
        let mut r = request(vec![by_index.clone()]);
        processor(&[
            ("host.name", Action::Insert, text("other"), None),
            ("copy", Action::Insert, None, Some("host.name")),
        ])
        .process(&mut r);
        assert_eq!(
            attributes(&r),
            [by_index, key_value("copy", string_value("box-1"))]
        );
        processor(&[("host.name", Action::Delete, None, None)]).process(&mut r);
        assert_eq!(attributes(&r), [key_value("copy", string_value("box-1"))]);
    }

    #[test]
    fn copying_from_a_missing_attribute_changes_nothing() {
        let mut r = request(vec![key_value("a", int_value(1))]);
        processor(&[
            ("a", Action::Upsert, None, Some("missing")),
            ("b", Action::Insert, None, Some("missing")),
        ])
        .process(&mut r);
        assert_eq!(attributes(&r), [key_value("a", int_value(1))]);
    }

    #[test]
    fn a_missing_resource_is_created() {
        let mut r = request(vec![]);
        r.resource_profiles[0].resource = None;
        processor(&[(
            "env",
            Action::Upsert,
            Some(AttributeValue::Double(0.5)),
            None,
        )])
        .process(&mut r);
        assert_eq!(
            attributes(&r),
            [key_value(
                "env",
                AnyValue {
                    value: Some(any_value::Value::DoubleValue(0.5))
                }
            )]
        );
    }

    #[test]
    fn invalid_options_are_refused_with_their_paths() {
        let config = ResourceProcessorConfig {
            attributes: vec![AttributeAction {
                key: "a".into(),
                action: Action::Insert,
                value: None,
                from_attribute: None,
            }],
        };
        assert_eq!(
            ResourceProcessor::new(&config).unwrap_err().to_string(),
            "attributes[0].value: action insert needs a value (or from_attribute)"
        );
    }
}
