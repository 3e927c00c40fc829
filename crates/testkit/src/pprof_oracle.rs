//! `go tool pprof` as the oracle for profiles scraped from a Go program:
//! what it prints with `-raw` (google/pprof's `Profile.String()`, every
//! sample with exact integer values and its stack of functions), read back;
//! and `-diff_base`, which subtracts a base profile from another.
//!
//! Values per function are "cum" values: the sum of the samples whose
//! stack holds the function (once per sample, however often it recurs),
//! inlined frames included. Needs Go: call it after
//! [`crate::pprof_target::PprofTarget::start`] or [`crate::require_tool`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use crate::TempDir;

/// One sample: its values, one per sample type, and the functions of its
/// stack, leaf first (a location's inlined frames innermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleSample {
    pub values: Vec<i64>,
    pub functions: Vec<String>,
}

/// A profile as `go tool pprof -raw` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleProfile {
    /// `type/unit` of each sample type, e.g. `alloc_objects/count`.
    pub sample_types: Vec<String>,
    pub samples: Vec<OracleSample>,
}

impl OracleProfile {
    /// `go tool pprof -raw FILE`.
    pub fn read(file: &Path) -> Self {
        Self::parse(&go_tool_pprof(&["-raw"], file))
    }

    /// `go tool pprof -raw FILE...`: the profiles merged into one, as
    /// pprof merges several files of the same sample types.
    pub fn read_merged(files: &[&Path]) -> Self {
        Self::parse(&go_tool_pprof_files(&["-raw"], files))
    }

    /// `go tool pprof -raw -diff_base=BASE CURRENT`: `current`'s samples
    /// and `base`'s with their values negated.
    pub fn diff(base: &Path, current: &Path) -> Self {
        let diff_base = format!("-diff_base={}", base.display());
        Self::parse(&go_tool_pprof(&["-raw", &diff_base], current))
    }

    /// Reads `Profile.String()`'s Samples and Locations sections. Panics on
    /// a line it does not recognize, so that a change of layout cannot go
    /// unnoticed.
    pub fn parse(text: &str) -> Self {
        let mut lines = text.lines().skip_while(|line| *line != "Samples:").skip(1);
        let sample_types: Vec<String> = lines
            .next()
            .expect("a line of sample types follows Samples:")
            .split_whitespace()
            .map(|t| t.trim_end_matches("[dflt]").to_owned())
            .collect();

        let mut raw_samples = Vec::new();
        for line in lines.by_ref().take_while(|line| *line != "Locations") {
            match sample_line(line, sample_types.len()) {
                Some(sample) => raw_samples.push(sample),
                // Label lines (`key:[values]`, e.g. `bytes:[64]` or
                // `pprof::base:[true]`) are indented by 16 spaces.
                None => assert!(
                    line.starts_with(&" ".repeat(16)) && line.contains(":["),
                    "unrecognized line in the Samples section: {line:?}"
                ),
            }
        }

        let mut functions: HashMap<u64, Vec<String>> = HashMap::new();
        let mut current = None;
        for line in lines.take_while(|line| *line != "Mappings") {
            // `    12: 0x4011f0 M=1 main.f /src/main.go:7 s=5`, then one
            // line per inlined caller, indented by 13 spaces.
            let (id, frame) = match line.trim_start().split_once(": 0x") {
                Some((id, rest)) if !line.starts_with(&" ".repeat(13)) => {
                    let id: u64 = id
                        .parse()
                        .unwrap_or_else(|_| panic!("a location id: {line:?}"));
                    let rest = rest.split_once(' ').map_or("", |(_, rest)| rest);
                    let rest = rest
                        .strip_prefix("M=")
                        .map_or(rest, |r| r.split_once(' ').map_or("", |(_, rest)| rest));
                    let rest = rest.strip_prefix("[F] ").unwrap_or(rest);
                    current = Some(id);
                    (id, rest)
                }
                _ => {
                    let id = current
                        .unwrap_or_else(|| panic!("an inlined frame before a location: {line:?}"));
                    (id, line.trim_start())
                }
            };
            let names = functions.entry(id).or_default();
            if !frame.is_empty() {
                names.push(function_name(frame));
            }
        }

        let samples = raw_samples
            .into_iter()
            .map(|(values, location_ids)| OracleSample {
                values,
                functions: location_ids
                    .iter()
                    .flat_map(|id| {
                        functions
                            .get(id)
                            .unwrap_or_else(|| {
                                panic!("a sample refers to location {id}, not listed")
                            })
                            .iter()
                            .cloned()
                    })
                    .collect(),
            })
            .collect();
        Self {
            sample_types,
            samples,
        }
    }

    /// The position of the sample type named `sample_type` (the part
    /// before `/`, e.g. `alloc_objects`).
    pub fn index(&self, sample_type: &str) -> usize {
        self.sample_types
            .iter()
            .position(|t| t.split('/').next() == Some(sample_type))
            .unwrap_or_else(|| {
                panic!(
                    "no sample type {sample_type:?} among {:?}",
                    self.sample_types
                )
            })
    }

    /// The cum value of `sample_type` for every function on a stack.
    pub fn values_by_function(&self, sample_type: &str) -> BTreeMap<String, i64> {
        let index = self.index(sample_type);
        let mut values = BTreeMap::new();
        for sample in &self.samples {
            let distinct: BTreeSet<&String> = sample.functions.iter().collect();
            for function in distinct {
                *values.entry(function.clone()).or_insert(0) += sample.values[index];
            }
        }
        values
    }

    /// The cum value of `sample_type` for `function` (0 when no stack
    /// holds it).
    pub fn value(&self, sample_type: &str, function: &str) -> i64 {
        self.values_by_function(sample_type)
            .get(function)
            .copied()
            .unwrap_or(0)
    }

    /// The sum of `sample_type` over all samples.
    pub fn total(&self, sample_type: &str) -> i64 {
        let index = self.index(sample_type);
        self.samples.iter().map(|s| s.values[index]).sum()
    }
}

/// The function name of a frame, `NAME FILE:LINE s=START`, possibly
/// followed by `(SYSTEM_NAME)`; `??` when the frame has no function. A Go
/// name may hold spaces (generic shapes), a Go file name does not.
fn function_name(frame: &str) -> String {
    let before_start = frame
        .rfind(" s=")
        .map_or(frame, |at| &frame[..at])
        .trim_end();
    before_start
        .rsplit_once(' ')
        .map_or(before_start, |(name, _file_line)| name)
        .to_owned()
}

/// `values: ids`, with one value per sample type, e.g.
/// `        10        640: 1 2 3 `.
fn sample_line(line: &str, types: usize) -> Option<(Vec<i64>, Vec<u64>)> {
    let (values, ids) = line.split_once(':')?;
    let values: Vec<i64> = values
        .split_whitespace()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let ids: Vec<u64> = ids
        .split_whitespace()
        .map(|id| id.parse().ok())
        .collect::<Option<_>>()?;
    (values.len() == types).then_some((values, ids))
}

/// The cum value of `sample_type` for every function in `profile_file`,
/// as `go tool pprof -raw` says.
pub fn values_by_function(profile_file: &Path, sample_type: &str) -> BTreeMap<String, i64> {
    OracleProfile::read(profile_file).values_by_function(sample_type)
}

/// How much `function`'s cum value of `sample_type` grew from `base` to
/// `current`, as `go tool pprof -raw -diff_base` says (negative when it
/// shrank, e.g. across a restart).
pub fn diff(base: &Path, current: &Path, sample_type: &str, function: &str) -> i64 {
    OracleProfile::diff(base, current).value(sample_type, function)
}

/// What `go tool pprof -symbolize=none ARGS FILE` prints; panics with its
/// error output when it fails. HOME and PPROF_TMPDIR are a fresh temporary
/// folder, so that pprof reads and writes nothing of the user's.
fn go_tool_pprof(args: &[&str], file: &Path) -> String {
    go_tool_pprof_files(args, &[file])
}

/// [`go_tool_pprof`] of several files, which pprof merges.
fn go_tool_pprof_files(args: &[&str], files: &[&Path]) -> String {
    let home = TempDir::new("pprof-oracle");
    let output = Command::new("go")
        .args(["tool", "pprof", "-symbolize=none"])
        .args(args)
        .args(files)
        .env("HOME", home.path())
        .env("PPROF_TMPDIR", home.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run go tool pprof: {e}"));
    assert!(
        output.status.success(),
        "go tool pprof {args:?} {files:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("go tool pprof prints UTF-8")
}
