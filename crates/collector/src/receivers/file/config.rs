use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::receivers::watched_files::settings::{
    default_checkpoint, pattern_problems, WatchSettings,
};
pub use crate::receivers::watched_files::settings::{
    AfterSuccess, InputFormat, ServiceNameFrom, StartAt,
};
use crate::settings::units::Duration;
use crate::settings::Problem;
use crate::settings::{Options, OwnedFile};

/// `receivers: file:` — profile files dropped in watched folders.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileReceiverConfig {
    /// Glob patterns of the files to read.
    pub include: Vec<String>,
    /// Glob patterns of files to leave alone, even when included.
    pub exclude: Vec<String>,
    pub poll_interval: Duration,
    /// Whether files present at the very first start are read.
    pub start_at: StartAt,
    /// Where the receiver records what it delivered; default
    /// `./profbridge-state/ID.checkpoint.json`.
    pub checkpoint: Option<String>,
    pub after_success: AfterSuccess,
    /// The folder delivered files go to with `after_success: move`.
    pub move_to: Option<String>,
    /// The folder files that cannot be read go to; default `.failed`
    /// beside each file.
    pub failed_dir: Option<String>,
    pub format: InputFormat,
    /// Added to the resource of every profile.
    pub resource_attributes: BTreeMap<String, String>,
    pub service_name_from: ServiceNameFrom,
}

impl Default for FileReceiverConfig {
    fn default() -> Self {
        Self {
            include: Vec::new(),
            exclude: Vec::new(),
            poll_interval: Duration::from_secs(1),
            start_at: StartAt::Beginning,
            checkpoint: None,
            after_success: AfterSuccess::Keep,
            move_to: None,
            failed_dir: None,
            format: InputFormat::Auto,
            resource_attributes: BTreeMap::new(),
            service_name_from: ServiceNameFrom::None,
        }
    }
}

impl FileReceiverConfig {
    /// The checkpoint file of the receiver with id `id`.
    pub fn checkpoint_path(&self, id: &str) -> PathBuf {
        self.checkpoint
            .as_ref()
            .map_or_else(|| default_checkpoint(id), PathBuf::from)
    }

    /// What the engine runs on for the receiver with id `id`.
    pub fn watch_settings(&self, id: &str) -> WatchSettings {
        WatchSettings {
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            poll_interval: self.poll_interval.0,
            initial_delay: std::time::Duration::ZERO,
            start_at: self.start_at,
            checkpoint: self.checkpoint_path(id),
            after_success: self.after_success,
            move_to: self.move_to.as_ref().map(PathBuf::from),
            failed_dir: self.failed_dir.as_ref().map(PathBuf::from),
            format: self.format,
            resource_attributes: self.resource_attributes.clone(),
            service_name_from: self.service_name_from,
        }
    }

    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.include.is_empty() {
            problems.push(Problem::new(
                "include",
                "no files to watch; list at least one glob, like /var/lib/profiles/*.pb.gz",
            ));
        }
        problems.extend(pattern_problems("include", &self.include));
        problems.extend(pattern_problems("exclude", &self.exclude));
        if self.poll_interval.0.is_zero() {
            problems.push(Problem::new("poll_interval", "must be more than 0"));
        }
        let empty = |value: &Option<String>| value.as_deref().is_some_and(|v| v.trim().is_empty());
        for (key, value) in [
            ("checkpoint", &self.checkpoint),
            ("move_to", &self.move_to),
            ("failed_dir", &self.failed_dir),
        ] {
            if empty(value) {
                problems.push(Problem::new(
                    key,
                    "is empty; name a path or leave the key out",
                ));
            }
        }
        match (self.after_success, &self.move_to) {
            (AfterSuccess::Move, None) => problems.push(Problem::new(
                "move_to",
                "after_success: move needs move_to, the folder to move delivered files to",
            )),
            (AfterSuccess::Keep | AfterSuccess::Delete, Some(_)) => problems.push(Problem::new(
                "move_to",
                "is only used with after_success: move",
            )),
            _ => {}
        }
        if self.service_name_from != ServiceNameFrom::None
            && self.resource_attributes.contains_key("service.name")
        {
            problems.push(Problem::new(
                "service_name_from",
                "resource_attributes sets service.name too; keep one of them",
            ));
        }
        problems
    }
}

impl Options for FileReceiverConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }

    fn owned_file(&self, id: &str) -> Option<OwnedFile> {
        Some(OwnedFile {
            key: "checkpoint",
            path: self.checkpoint_path(id),
            owner: "file receiver",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::FileReceiverConfig;
    use crate::config::parse_yaml;

    fn with_receivers(receivers: &str, ids: &str) -> String {
        format!(
            "receivers:\n{receivers}exporters:\n  nop:\nservice:\n  pipelines:\n    profiles:\n      receivers: [{ids}]\n      exporters: [nop]\n  telemetry:\n    metrics:\n      address: \"\"\n"
        )
    }

    fn problems(yaml: &str) -> Vec<String> {
        match parse_yaml(yaml, &BTreeMap::new()) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn the_three_receivers_load_with_their_defaults() {
        let yaml = with_receivers(
            "  pprof:\n  pyroscope:\n  file:\n    include: [/profiles/*.pb.gz]\n    resource_attributes:\n      service.name: api\n      Team: core\n",
            "pprof, pyroscope, file",
        );
        let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap();
        let kinds: Vec<&str> = config.receivers.iter().map(|(_, r)| r.kind()).collect();
        assert_eq!(kinds, ["pprof", "pyroscope", "file"]);
        let Some(file) = config
            .receivers
            .get(2)
            .and_then(|(_, receiver)| receiver.options::<FileReceiverConfig>())
        else {
            panic!("no file receiver");
        };
        assert_eq!(file.poll_interval.0, std::time::Duration::from_secs(1));
        assert_eq!(
            file.checkpoint_path("file/a"),
            std::path::Path::new("./profbridge-state/file%2Fa.checkpoint.json")
        );
        let keys: Vec<&str> = file
            .resource_attributes
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["Team", "service.name"]);
    }

    #[test]
    fn mistakes_are_reported_at_their_keys() {
        let yaml = with_receivers(
            "  file:\n    include: [\"/p/[\"]\n    after_success: move\n    poll_interval: 0\n    service_name_from: filename\n    resource_attributes: {service.name: x}\n  pprof:\n    path: v1\n    endpoint: 127.0.0.1:4040\n  pyroscope:\n",
            "file, pprof, pyroscope",
        );
        assert_eq!(
            problems(&yaml),
            [
                "receivers.pyroscope.endpoint: port 4040 is already used by receivers.pprof.endpoint (127.0.0.1:4040)",
                "receivers.file.include[0]: \"/p/[\" is not a glob pattern: Pattern syntax error near position 3: invalid range pattern",
                "receivers.file.poll_interval: must be more than 0",
                "receivers.file.move_to: after_success: move needs move_to, the folder to move delivered files to",
                "receivers.file.service_name_from: resource_attributes sets service.name too; keep one of them",
                "receivers.pprof.path: \"v1\" must start with /, like /v1/pprof",
            ]
        );
        let yaml = with_receivers(
            "  file/a:\n    include: [a]\n    checkpoint: /s/c.json\n  file/b:\n    include: [b]\n    checkpoint: /s/c.json\n",
            "file/a, file/b",
        );
        assert_eq!(
            problems(&yaml),
            ["receivers.file/b.checkpoint: /s/c.json is the checkpoint of receivers.file/a too; give each file receiver its own"]
        );
        let yaml = with_receivers("  file:\n    start_at: middle\n", "file");
        let found = problems(&yaml);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("receivers.file.start_at")),
            "{found:?}"
        );
    }
}
