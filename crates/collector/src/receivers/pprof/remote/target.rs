//! What is scraped: one job per target and profile, each with its URL and
//! the labels its resource attributes come from.

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::Url;

use super::config::{CustomProfile, ProfileEntry, ProfileError, ProfileSpec, RemoteConfig};

/// Labels shared by a group of targets.
pub type LabelSet = BTreeMap<String, String>;

/// One profile of one target, scraped on its own schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The target as written: `host:port` or a base URL (for `endpoint`,
    /// its `host:port`); `service.instance.id`.
    pub instance: String,
    pub spec: ProfileSpec,
    pub url: Url,
    pub labels: LabelSet,
}

impl Job {
    pub fn key(&self) -> JobKey {
        (self.instance.clone(), self.spec.name.clone())
    }

    /// The target's `host:port`, whatever form it was written in.
    pub fn host_port(&self) -> String {
        let host = self.url.host_str().unwrap_or_default();
        match self.url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }
}

/// A job's identity: its target and its profile's name.
pub type JobKey = (String, String);

/// Why a target cannot be scraped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("{given:?} is not a URL: {error}")]
    NotAUrl {
        given: String,
        error: <Url as std::str::FromStr>::Err,
    },
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error("endpoint {endpoint:?}: {error}")]
    Profile {
        endpoint: String,
        error: ProfileError,
    },
}

/// The name of the profile at an endpoint without a path, fetched as it
/// is (as the Collector does).
const NO_PATH: &str = "endpoint";

/// Go's names for the last segment of a profile's path, where they
/// differ from the profile's.
fn profile_name(segment: &str) -> &str {
    match segment {
        "profile" => "cpu",
        other => other,
    }
}

/// The job of `endpoint`: one profile's full URL, its type told by the
/// last segment of its path.
pub fn endpoint_job(config: &RemoteConfig) -> Result<Option<Job>, TargetError> {
    let endpoint = config.client.endpoint.trim();
    if endpoint.is_empty() {
        return Ok(None);
    }
    let url = parse_url(endpoint)?;
    let segment = url
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .filter(|segment| !segment.is_empty())
        .unwrap_or(NO_PATH);
    let name = profile_name(segment).to_owned();
    let known = [
        "cpu",
        "heap",
        "allocs",
        "goroutine",
        "mutex",
        "block",
        "threadcreate",
    ];
    let entry = ProfileEntry::Custom(CustomProfile {
        path: Some(url.path().to_owned()),
        seconds: None,
        delta: (!known.contains(&name.as_str())).then_some(false),
        name,
    });
    let spec = config
        .resolve(&entry)
        .map_err(|error| TargetError::Profile {
            endpoint: endpoint.to_owned(),
            error,
        })?;
    let mut job = Job {
        instance: String::new(),
        url: with_seconds(url, spec.seconds),
        spec,
        labels: LabelSet::new(),
    };
    job.instance = job.host_port();
    Ok(Some(job))
}

/// The jobs of a group of targets: every profile of every target.
pub fn group_jobs(
    targets: &[String],
    labels: &LabelSet,
    specs: &[ProfileSpec],
    scheme: &str,
) -> Vec<Result<Job, TargetError>> {
    targets
        .iter()
        .flat_map(|target| {
            specs
                .iter()
                .map(move |spec| target_job(target, labels, spec, scheme))
        })
        .collect()
}

fn target_job(
    target: &str,
    labels: &LabelSet,
    spec: &ProfileSpec,
    scheme: &str,
) -> Result<Job, TargetError> {
    let instance = target.trim().trim_end_matches('/');
    let base = if instance.contains("://") {
        instance.to_owned()
    } else {
        format!("{scheme}://{instance}")
    };
    let (path, query) = spec
        .path
        .split_once('?')
        .map_or((spec.path.as_str(), None), |(path, query)| {
            (path, Some(query))
        });
    let mut url = parse_url(&format!("{base}{path}"))?;
    url.set_query(query);
    Ok(Job {
        instance: instance.to_owned(),
        url: with_seconds(url, spec.seconds),
        spec: spec.clone(),
        labels: labels.clone(),
    })
}

fn parse_url(given: &str) -> Result<Url, TargetError> {
    let url = Url::parse(given).map_err(|error| TargetError::NotAUrl {
        given: given.to_owned(),
        error,
    })?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(TargetError::NoHost(given.to_owned()));
    }
    Ok(url)
}

/// `url` asking for a CPU profile of `seconds`, unless its query asks
/// already.
fn with_seconds(mut url: Url, seconds: Option<std::time::Duration>) -> Url {
    let Some(seconds) = seconds else {
        return url;
    };
    if url.query_pairs().any(|(key, _)| key == "seconds") {
        return url;
    }
    let whole = seconds.as_secs().max(1);
    url.query_pairs_mut()
        .append_pair("seconds", &whole.to_string());
    url
}

/// Every job of the configuration's `endpoint` and `targets`, and of the
/// groups file_sd found; the first of two jobs with one key wins.
pub fn all_jobs(
    config: &RemoteConfig,
    specs: &[ProfileSpec],
    discovered: &[(LabelSet, Vec<String>)],
) -> (Vec<Arc<Job>>, Vec<TargetError>) {
    let mut jobs: Vec<Arc<Job>> = Vec::new();
    let mut problems = Vec::new();
    let mut add = |result: Result<Job, TargetError>| match result {
        Ok(job) if jobs.iter().any(|known| known.key() == job.key()) => {}
        Ok(job) => jobs.push(Arc::new(job)),
        Err(error) => problems.push(error),
    };
    match endpoint_job(config) {
        Ok(Some(job)) => add(Ok(job)),
        Ok(None) => {}
        Err(error) => add(Err(error)),
    }
    let configured = config
        .targets
        .iter()
        .map(|group| (&group.labels, &group.targets));
    let discovered = discovered.iter().map(|(labels, targets)| (labels, targets));
    for (labels, targets) in configured.chain(discovered) {
        for result in group_jobs(targets, labels, specs, &config.scheme) {
            add(result);
        }
    }
    (jobs, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RemoteConfig {
        RemoteConfig::default()
    }

    #[test]
    fn an_endpoint_is_one_profile_named_by_its_last_segment() {
        let mut config = config();
        config.client.endpoint = "http://localhost:6060/debug/pprof/profile".to_owned();
        let job = endpoint_job(&config).unwrap().unwrap();
        assert_eq!(job.spec.name, "cpu");
        assert_eq!(job.instance, "localhost:6060");
        assert_eq!(
            job.url.as_str(),
            "http://localhost:6060/debug/pprof/profile?seconds=9"
        );
        config.client.endpoint = "http://h:1/debug/pprof/allocs".to_owned();
        let job = endpoint_job(&config).unwrap().unwrap();
        assert!(job.spec.delta);
        config.client.endpoint = "http://h:1/custom/thing?x=1".to_owned();
        let job = endpoint_job(&config).unwrap().unwrap();
        assert_eq!((job.spec.name.as_str(), job.spec.delta), ("thing", false));
        assert_eq!(job.url.as_str(), "http://h:1/custom/thing?x=1");
        config.client.endpoint = "http://my-svc:9090".to_owned();
        let job = endpoint_job(&config).unwrap().unwrap();
        assert_eq!(
            (job.spec.name.as_str(), job.spec.delta),
            ("endpoint", false)
        );
        assert_eq!(job.url.as_str(), "http://my-svc:9090/");
    }

    #[test]
    fn targets_are_host_ports_or_base_urls() {
        let specs = config().profile_specs().unwrap();
        let labels = LabelSet::new();
        let targets = ["h:6060".to_owned(), "https://g:7070/prefix/".to_owned()];
        let jobs: Vec<Job> = group_jobs(&targets, &labels, &specs, "http")
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(jobs.len(), 2 * specs.len());
        let heap = jobs
            .iter()
            .find(|job| job.instance == "https://g:7070/prefix" && job.spec.name == "heap")
            .unwrap();
        assert_eq!(heap.url.as_str(), "https://g:7070/prefix/debug/pprof/heap");
        assert_eq!(heap.host_port(), "g:7070");
        let cpu = jobs
            .iter()
            .find(|job| job.instance == "h:6060" && job.spec.name == "cpu")
            .unwrap();
        assert_eq!(
            cpu.url.as_str(),
            "http://h:6060/debug/pprof/profile?seconds=9"
        );
    }
}
