//! The text google/pprof's `Profile.String()` prints, which is what our
//! `dump` writes and what `go tool pprof -raw` shows, read back into sample
//! types, sample lines and location addresses; and running
//! `go tool pprof -raw` itself.
//!
//! Interop tests include it with
//! `#[path = "support/raw_text.rs"] mod raw_text;`.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// One sample line: its values and its location ids, leaf first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    pub values: Vec<i64>,
    pub location_ids: Vec<u64>,
}

/// Samples merged by their stack of addresses (leaf first): summed values.
pub type AddressStacks = BTreeMap<Vec<u64>, Vec<i64>>;

/// What a `Profile.String()` text says about samples and locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawText {
    /// `type/unit` of each sample type, without the `[dflt]` mark.
    pub sample_types: Vec<String>,
    /// The sample lines, in order (label lines are skipped).
    pub samples: Vec<RawSample>,
    /// Location id → address, from the Locations section.
    pub addresses: HashMap<u64, u64>,
}

impl RawText {
    /// Reads the Samples and Locations sections. Panics on a line that is
    /// neither a sample, a sample's label line, nor a location, so that a
    /// change of layout cannot pass unnoticed.
    pub fn parse(text: &str) -> Self {
        let mut lines = text.lines().skip_while(|line| *line != "Samples:").skip(1);
        let sample_types: Vec<String> = lines
            .next()
            .expect("a sample type line follows Samples:")
            .split_whitespace()
            .map(|t| t.trim_end_matches("[dflt]").to_owned())
            .collect();

        let mut samples = Vec::new();
        for line in lines.by_ref().take_while(|line| *line != "Locations") {
            if let Some(sample) = parse_sample_line(line, sample_types.len()) {
                samples.push(sample);
            } else {
                // Label lines (`key:[values]`) are indented by 16 spaces.
                assert!(
                    line.starts_with("                ") && line.contains(":["),
                    "unrecognized line in the Samples section: {line:?}"
                );
            }
        }

        let mut addresses = HashMap::new();
        for line in lines.take_while(|line| *line != "Mappings") {
            let trimmed = line.trim_start();
            let location = trimmed.split_once(": ").and_then(|(id, rest)| {
                let id = id.parse::<u64>().ok()?;
                let hex = rest.split_whitespace().next()?.strip_prefix("0x")?;
                Some((id, u64::from_str_radix(hex, 16).ok()?))
            });
            match location {
                Some((id, address)) => {
                    assert!(
                        addresses.insert(id, address).is_none(),
                        "location {id} is listed twice"
                    );
                }
                // Lines after a location's first (inlined frames) are
                // indented by 13 spaces.
                None => assert!(
                    line.starts_with("             "),
                    "unrecognized line in the Locations section: {line:?}"
                ),
            }
        }
        Self {
            sample_types,
            samples,
            addresses,
        }
    }

    /// The sum of each sample type's values.
    pub fn totals(&self) -> Vec<i64> {
        let mut totals = vec![0i64; self.sample_types.len()];
        for sample in &self.samples {
            for (total, value) in totals.iter_mut().zip(&sample.values) {
                *total += value;
            }
        }
        totals
    }

    /// The samples merged by their stack of addresses, values summed, as
    /// google/pprof's `Merge` (which `go tool pprof` applies on loading)
    /// merges them; like `Merge`, drops the stacks whose values are all 0.
    pub fn address_stacks(&self) -> AddressStacks {
        let mut stacks = AddressStacks::new();
        for sample in &self.samples {
            let addresses: Vec<u64> = sample
                .location_ids
                .iter()
                .map(|id| {
                    *self
                        .addresses
                        .get(id)
                        .unwrap_or_else(|| panic!("a sample refers to location {id}, not listed"))
                })
                .collect();
            let sums = stacks
                .entry(addresses)
                .or_insert_with(|| vec![0; sample.values.len()]);
            for (sum, value) in sums.iter_mut().zip(&sample.values) {
                *sum += value;
            }
        }
        stacks.retain(|_, values| values.iter().any(|v| *v != 0));
        stacks
    }
}

/// `values: ids` with exactly `types` values, e.g. `   2   20000000: 1 2 3 `.
fn parse_sample_line(line: &str, types: usize) -> Option<RawSample> {
    let (values, ids) = line.split_once(':')?;
    let values: Vec<i64> = values
        .split_whitespace()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let location_ids: Vec<u64> = ids
        .split_whitespace()
        .map(|id| id.parse().ok())
        .collect::<Option<_>>()?;
    (values.len() == types).then_some(RawSample {
        values,
        location_ids,
    })
}

/// Asserts that two texts agree on sample types, totals per sample type, the
/// number of distinct address stacks and the merged stacks themselves.
pub fn assert_same_samples(what: &str, ours: &RawText, theirs: &RawText) {
    assert_eq!(
        ours.sample_types, theirs.sample_types,
        "{what}: sample types (left: ours, right: go tool pprof)"
    );
    assert_eq!(
        ours.totals(),
        theirs.totals(),
        "{what}: totals per sample type {:?} (left: ours, right: go tool pprof)",
        ours.sample_types
    );
    let our_stacks = ours.address_stacks();
    let their_stacks = theirs.address_stacks();
    assert!(
        our_stacks.len() == their_stacks.len() && our_stacks == their_stacks,
        "{what}: merged stacks by address differ: ours has {} distinct stacks, \
         go tool pprof {}\n{}",
        our_stacks.len(),
        their_stacks.len(),
        describe_differences(&our_stacks, &their_stacks)
    );
}

/// The first differences between two sets of merged stacks, one per line.
pub fn describe_differences(ours: &AddressStacks, theirs: &AddressStacks) -> String {
    const SHOWN: usize = 12;
    let mut lines = Vec::new();
    for (stack, values) in ours {
        match theirs.get(stack) {
            None => lines.push(format!(
                "only ours:          {} = {values:?}",
                hex_stack(stack)
            )),
            Some(other) if other != values => lines.push(format!(
                "values differ:      {} = {values:?} (ours), {other:?} (go tool pprof)",
                hex_stack(stack)
            )),
            Some(_) => {}
        }
    }
    for (stack, values) in theirs {
        if !ours.contains_key(stack) {
            lines.push(format!(
                "only go tool pprof: {} = {values:?}",
                hex_stack(stack)
            ));
        }
    }
    let mut text = String::new();
    for line in lines.iter().take(SHOWN) {
        let _ = writeln!(text, "  {line}");
    }
    if lines.len() > SHOWN {
        let _ = writeln!(text, "  ... and {} more", lines.len() - SHOWN);
    }
    text
}

fn hex_stack(stack: &[u64]) -> String {
    let addresses: Vec<String> = stack.iter().map(|a| format!("{a:#x}")).collect();
    format!("[{}]", addresses.join(" "))
}

/// What `go tool pprof -raw -symbolize=none FILE` prints, or, when it fails,
/// its error output. `home` (a temporary folder) becomes HOME and
/// PPROF_TMPDIR, so that pprof reads and writes nothing of the user's.
pub fn go_tool_pprof_raw(file: &Path, home: &Path) -> Result<String, String> {
    go_tool_pprof(&["-raw", "-symbolize=none"], file, home)
}

/// What `go tool pprof ARGS FILE` prints, or its error output; HOME and
/// PPROF_TMPDIR are `home`.
pub fn go_tool_pprof(args: &[&str], file: &Path, home: &Path) -> Result<String, String> {
    let output = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("HOME", home)
        .env("PPROF_TMPDIR", home)
        .output()
        .expect("run go tool pprof");
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).expect("pprof prints UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}
