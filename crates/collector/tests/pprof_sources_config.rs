//! The pprof receiver's `file` and `self` sources as configured: `file`
//! becomes the file receiver's engine with the Collector's names (one glob
//! or a list, `collection_interval` as the poll interval), its mistakes
//! are reported at their keys, and its checkpoint is owned like the file
//! receiver's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use profbridge_collector::config::{parse_yaml, Config};
use profbridge_collector::receivers::pprof::config::PprofReceiverConfig;

fn config(receivers: &str, ids: &str) -> String {
    format!(
        "receivers:\n{receivers}exporters:\n  nop:\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [{ids}]\n      exporters: [nop]\n"
    )
}

fn load(yaml: &str) -> Result<Config, Vec<String>> {
    parse_yaml(yaml, &BTreeMap::new())
        .map_err(|errors| errors.problems.iter().map(ToString::to_string).collect())
}

fn pprof(config: &Config) -> &PprofReceiverConfig {
    config
        .receivers
        .iter()
        .find_map(|(_, receiver)| receiver.options::<PprofReceiverConfig>())
        .unwrap_or_else(|| panic!("no pprof receiver"))
}

#[test]
fn the_file_source_runs_the_file_receivers_engine_on_the_collectors_keys() {
    let loaded = load(&config(
        "  pprof/disk:\n    file:\n      include: /var/profiles/*.pb.gz\n      collection_interval: 30s\n",
        "pprof/disk",
    ))
    .unwrap();
    let receiver = pprof(&loaded);
    assert!(receiver.push_server().is_none());
    let settings = receiver.file.as_ref().unwrap().watch_settings("pprof/disk");
    assert_eq!(settings.include, ["/var/profiles/*.pb.gz"]);
    assert_eq!(settings.poll_interval, Duration::from_secs(30));
    assert_eq!(settings.initial_delay, Duration::from_secs(1));
    assert_eq!(
        settings.checkpoint,
        Path::new("./profbridge-state/pprof%2Fdisk.checkpoint.json")
    );

    let loaded = load(&config(
        "  pprof:\n    file:\n      include: [/a/*.prof, /b/*.prof]\n      checkpoint: /state/pprof.json\n",
        "pprof",
    ))
    .unwrap();
    let settings = pprof(&loaded)
        .file
        .as_ref()
        .unwrap()
        .watch_settings("pprof");
    assert_eq!(settings.include, ["/a/*.prof", "/b/*.prof"]);
    assert_eq!(settings.checkpoint, Path::new("/state/pprof.json"));
}

#[test]
fn file_source_mistakes_are_reported_at_their_keys() {
    let problems = load(&config(
        "  pprof:\n    file:\n      include: \"/p/[\"\n      collection_interval: 0s\n      checkpoint: \" \"\n",
        "pprof",
    ))
    .unwrap_err();
    assert_eq!(
        problems,
        [
            "receivers.pprof.file.include: \"/p/[\" is not a glob pattern: Pattern syntax error near position 3: invalid range pattern",
            "receivers.pprof.file.collection_interval: must be more than 0",
            "receivers.pprof.file.checkpoint: is empty; name a path or leave the key out",
        ]
    );
    let problems = load(&config(
        "  pprof:\n    file:\n      include: [a, \"b[\"]\n",
        "pprof",
    ))
    .unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("receivers.pprof.file.include[1]: "),
        "{problems:?}"
    );
    let problems = load(&config("  pprof:\n    file: {}\n", "pprof")).unwrap_err();
    assert_eq!(
        problems,
        ["receivers.pprof.file.include: names no file; give a glob pattern"]
    );

    // One checkpoint, two owners.
    let problems = load(&config(
        "  file:\n    include: [a]\n    checkpoint: /s/c.json\n  pprof:\n    file:\n      include: b\n      checkpoint: /s/c.json\n",
        "file, pprof",
    ))
    .unwrap_err();
    assert_eq!(
        problems,
        ["receivers.pprof.file.checkpoint: /s/c.json is the checkpoint of receivers.file too; give each pprof receiver's file source its own"]
    );
}

#[test]
fn the_self_source_loads_alone() {
    let loaded = load(&config(
        "  pprof:\n    self:\n      collection_interval: 2s\n      initial_delay: 0s\n",
        "pprof",
    ))
    .unwrap();
    let receiver = pprof(&loaded);
    assert!(receiver.push_server().is_none());
    let own = receiver.own.as_ref().unwrap();
    assert_eq!(own.collection_interval.0, Duration::from_secs(2));
    assert!(own.initial_delay.0.is_zero());
    assert!(load(&config(
        "  pprof:\n    self:\n      collection_interval: 0s\n",
        "pprof"
    ))
    .unwrap_err()
    .contains(&"receivers.pprof.self.collection_interval: must be more than 0".to_owned()));
}
