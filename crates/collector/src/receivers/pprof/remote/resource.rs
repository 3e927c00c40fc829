//! The resource attributes of a job's profiles.

use profbridge_translate::otlp::KeyValue;

use super::target::Job;
use crate::protocol::pyroscope_attributes::DELTA_ATTRIBUTE;
use crate::receivers::from_pprof::string_attributes;

/// The resource attribute naming the profile pulled (`cpu`, `heap`, a
/// custom name): Go's heap and allocs profiles share their sample types.
pub const PROFILE_NAME: &str = "profbridge.profile.name";

/// Every label of the job; `service.name` from the label `service_name`,
/// else `job`, else the target's host:port; `service.instance.id`, the
/// target as written; the profile's name; and for a profile sent as
/// deltas, `pyroscope.delta: false`, which the Pyroscope exporter sends
/// as `__delta__="false"` so that Pyroscope does not take the delta
/// again.
pub fn resource_attributes(job: &Job) -> Vec<KeyValue> {
    let service = job
        .labels
        .get("service_name")
        .or_else(|| job.labels.get("job"))
        .cloned()
        .unwrap_or_else(|| job.host_port());
    let labels = job
        .labels
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()));
    let derived = [
        ("service.name", service),
        ("service.instance.id", job.instance.clone()),
        (PROFILE_NAME, job.spec.name.clone()),
    ]
    .map(|(key, value)| (key.to_owned(), value));
    let delta = job
        .spec
        .delta
        .then(|| (DELTA_ATTRIBUTE.to_owned(), "false".to_owned()));
    string_attributes(labels.chain(derived).chain(delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receivers::pprof::remote::config::ProfileSpec;
    use crate::receivers::pprof::remote::target::LabelSet;

    fn job(name: &str, delta: bool, labels: &[(&str, &str)]) -> Job {
        Job {
            instance: "localhost:6060".to_owned(),
            spec: ProfileSpec {
                name: name.to_owned(),
                path: format!("/debug/pprof/{name}"),
                seconds: None,
                delta,
            },
            url: "http://localhost:6060/debug/pprof/heap".parse().unwrap(),
            labels: labels
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect::<LabelSet>(),
        }
    }

    fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
        attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
            match kv.value.as_ref()?.value.as_ref()? {
                profbridge_translate::otlp::any_value::Value::StringValue(value) => {
                    Some(value.as_str())
                }
                _ => None,
            }
        })
    }

    #[test]
    fn deltas_say_so_to_pyroscope_and_labels_name_the_service() {
        let heap = resource_attributes(&job("heap", true, &[("job", "api"), ("team", "a")]));
        assert_eq!(attribute(&heap, DELTA_ATTRIBUTE), Some("false"));
        assert_eq!(attribute(&heap, "service.name"), Some("api"));
        assert_eq!(attribute(&heap, "team"), Some("a"));
        assert_eq!(
            attribute(&heap, "service.instance.id"),
            Some("localhost:6060")
        );
        let cpu = resource_attributes(&job(
            "cpu",
            false,
            &[("service_name", "checkout"), ("job", "api")],
        ));
        assert_eq!(attribute(&cpu, DELTA_ATTRIBUTE), None);
        assert_eq!(attribute(&cpu, "service.name"), Some("checkout"));
        let unnamed = resource_attributes(&job("goroutine", false, &[]));
        assert_eq!(attribute(&unnamed, "service.name"), Some("localhost:6060"));
    }
}
