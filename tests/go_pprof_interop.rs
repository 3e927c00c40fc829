//! `go tool pprof -raw` reads what profbridge writes and agrees with our dump.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::Command;

use profbridge_pprof::{canonicalize, decode, dump, encode, DecodeOptions, EncodeOptions};
use profbridge_testkit::{corpus_files, require_tool, CorpusFile, TempDir};

/// Sample types, per-type totals and sample count, read from the text that
/// `Profile.String()` (and so `pprof -raw`) prints.
#[derive(Debug, PartialEq, Eq)]
struct RawSummary {
    sample_types: Vec<String>,
    totals: Vec<i64>,
    samples: usize,
}

fn summarize(raw: &str) -> RawSummary {
    let mut lines = raw.lines().skip_while(|line| *line != "Samples:").skip(1);
    let sample_types: Vec<String> = lines
        .next()
        .expect("a sample type line follows Samples:")
        .split_whitespace()
        .map(|t| t.trim_end_matches("[dflt]").to_owned())
        .collect();
    let mut totals = vec![0i64; sample_types.len()];
    let mut samples = 0;
    for line in lines.take_while(|line| *line != "Locations") {
        let Some((values, _)) = line.split_once(": ") else {
            continue;
        };
        let values: Option<Vec<i64>> = values.split_whitespace().map(|v| v.parse().ok()).collect();
        let Some(values) = values.filter(|v| v.len() == totals.len() && !v.is_empty()) else {
            continue; // a label line
        };
        samples += 1;
        for (total, value) in totals.iter_mut().zip(values) {
            *total += value;
        }
    }
    RawSummary {
        sample_types,
        totals,
        samples,
    }
}

fn go_pprof_raw(path: &std::path::Path, home: &std::path::Path) -> String {
    let output = Command::new("go")
        .args(["tool", "pprof", "-raw", "-symbolize=none"])
        .arg(path)
        .env("HOME", home)
        .env("PPROF_TMPDIR", home)
        .output()
        .expect("run go tool pprof");
    assert!(
        output.status.success(),
        "go tool pprof -raw {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("pprof prints UTF-8")
}

#[test]
fn go_tool_pprof_reads_our_gzip_output_of_each_corpus_proto() {
    let protos: Vec<CorpusFile> = corpus_files()
        .into_iter()
        .filter(CorpusFile::is_gzip)
        .collect();
    if protos.is_empty() {
        return;
    }
    if require_tool("go", &["version"], "the go tool pprof interop test").is_none() {
        return;
    }
    let dir = TempDir::new("go-interop");
    for file in protos {
        let profile = decode(&file.bytes, &DecodeOptions::default()).unwrap();
        let ours = summarize(&dump(&profile).unwrap());
        let written = dir.path().join(format!("{}.pb.gz", file.name));
        std::fs::write(&written, encode(&profile, &EncodeOptions::default())).unwrap();

        let theirs = summarize(&go_pprof_raw(&written, dir.path()));
        assert_eq!(
            theirs.sample_types, ours.sample_types,
            "{}: sample types",
            file.name
        );
        assert_eq!(
            theirs.totals, ours.totals,
            "{}: totals per sample type",
            file.name
        );
        // pprof merges samples with equal stacks and labels when it loads a
        // profile, as our canonical form does.
        let merged = canonicalize(&profile).unwrap().sample.len();
        assert_eq!(theirs.samples, merged, "{}: merged sample count", file.name);
    }
}
