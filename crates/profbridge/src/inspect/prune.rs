//! The pruning google/pprof applies when it loads a profile
//! (`RemoveUninteresting`): frames matching the profile's `drop_frames`, and
//! not its `keep_frames`, are removed together with everything they called.

use std::collections::{HashMap, HashSet};

use regex::Regex;

use profbridge_pprof::Profile;

/// Names google/pprof does not cut at their `(` when simplifying.
const RESERVED_NAMES: [&str; 2] = ["(anonymous namespace)", "operator()"];

/// A profile's `drop_frames` or `keep_frames` that is not a regexp.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error("drop_frames is not a valid regexp: {0}")]
    DropFrames(regex::Error),
    #[error("keep_frames is not a valid regexp: {0}")]
    KeepFrames(regex::Error),
}

/// Prunes `profile` by its own drop/keep frames. Nothing changes when
/// `drop_frames` is empty; a regexp that does not compile is an error and
/// leaves the profile as it was (google/pprof ignores it likewise).
pub fn remove_uninteresting(profile: &mut Profile) -> Result<(), PruneError> {
    let text = |index: i64| string_at(&profile.string_table, index).to_owned();
    let (drop, keep) = (text(profile.drop_frames), text(profile.keep_frames));
    if drop.is_empty() {
        return Ok(());
    }
    let drop = anchored(&drop).map_err(PruneError::DropFrames)?;
    let keep = if keep.is_empty() {
        None
    } else {
        Some(anchored(&keep).map_err(PruneError::KeepFrames)?)
    };
    prune(
        profile,
        FrameFilter {
            drop,
            keep,
            decided: HashMap::new(),
        },
    );
    Ok(())
}

/// A copy of `profile` pruned by [`remove_uninteresting`], and the reason
/// when its regexps do not compile (the copy is then left as it was).
pub fn pruned_copy(profile: &Profile) -> (Profile, Option<PruneError>) {
    let mut pruned = profile.clone();
    let warning = remove_uninteresting(&mut pruned).err();
    (pruned, warning)
}

fn anchored(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("^({pattern})$"))
}

fn string_at(strings: &[String], index: i64) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| strings.get(i))
        .map_or("", String::as_str)
}

struct FrameFilter {
    drop: Regex,
    keep: Option<Regex>,
    decided: HashMap<String, bool>,
}

impl FrameFilter {
    fn drops(&mut self, function_name: &str) -> bool {
        if let Some(&decided) = self.decided.get(function_name) {
            return decided;
        }
        let simple = simplified(function_name);
        let drops = self.drop.is_match(simple)
            && !self.keep.as_ref().is_some_and(|keep| keep.is_match(simple));
        self.decided.insert(function_name.to_owned(), drops);
        drops
    }
}

/// The name without its argument list: cut at the first `(` that does not
/// start a reserved name, after one leading `.` (PPC ELF v1) is removed.
fn simplified(name: &str) -> &str {
    let name = name.strip_prefix('.').unwrap_or(name);
    let mut at = 0;
    while let Some(rest) = name.get(at..) {
        if let Some(reserved) = RESERVED_NAMES
            .iter()
            .find(|reserved| rest.starts_with(**reserved))
        {
            at += reserved.len();
            continue;
        }
        let Some(c) = rest.chars().next() else {
            break;
        };
        if c == '(' {
            return name.get(..at).unwrap_or(name);
        }
        at += c.len_utf8();
    }
    name
}

fn prune(profile: &mut Profile, mut filter: FrameFilter) {
    let Profile {
        location,
        function,
        string_table,
        sample,
        ..
    } = profile;
    let names: HashMap<u64, &str> = function
        .iter()
        .map(|function| (function.id, string_at(string_table, function.name)))
        .collect();

    // Locations whose outermost line matches go entirely; otherwise the
    // matching line and the lines it inlined go.
    let mut pruned: HashSet<u64> = HashSet::new();
    let mut pruned_beneath: HashSet<u64> = HashSet::new();
    for location in location.iter_mut() {
        let outermost_match = location.line.iter().rposition(|line| {
            names
                .get(&line.function_id)
                .is_some_and(|name| !name.is_empty() && filter.drops(name))
        });
        let Some(position) = outermost_match else {
            continue;
        };
        pruned_beneath.insert(location.id);
        if position + 1 == location.line.len() {
            pruned.insert(location.id);
        } else {
            location.line.drain(..=position);
        }
    }

    // Walking from the root, the first matching location after a frame of
    // the program's own ends the stack; frames before it are kept.
    for sample in sample.iter_mut() {
        let mut seen_own_frame = false;
        let mut keep_from = None;
        for (position, id) in sample.location_id.iter().enumerate().rev() {
            let (whole, beneath) = (pruned.contains(id), pruned_beneath.contains(id));
            if !whole && !beneath {
                seen_own_frame = true;
            } else if seen_own_frame {
                keep_from = Some(if whole { position + 1 } else { position });
                break;
            }
        }
        if let Some(start) = keep_from {
            sample.location_id.drain(..start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_pprof::{Function, Line, Location, Sample};

    #[test]
    fn simplified_names_lose_their_arguments_but_not_reserved_parentheses() {
        assert_eq!(simplified("foo(int, char)"), "foo");
        assert_eq!(simplified(".foo"), "foo");
        assert_eq!(
            simplified("(anonymous namespace)::f(int)"),
            "(anonymous namespace)::f"
        );
        assert_eq!(
            simplified("Lambda::operator()(int) const"),
            "Lambda::operator()"
        );
        assert_eq!(simplified("plain"), "plain");
    }

    /// Functions 1..=n named after `names`; one location per function, with
    /// a single line, except location 10 holding lines for functions 3 and 2
    /// (3 inlined into 2).
    fn profile(names: &[&str], drop: &str, keep: &str, stacks: &[&[u64]]) -> Profile {
        let mut string_table = vec![String::new(), drop.to_owned(), keep.to_owned()];
        let mut function = Vec::new();
        let mut location = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let id = i as u64 + 1;
            string_table.push((*name).to_owned());
            function.push(Function {
                id,
                name: string_table.len() as i64 - 1,
                ..Function::default()
            });
            let line = vec![Line {
                function_id: id,
                ..Line::default()
            }];
            location.push(Location {
                id,
                line,
                ..Location::default()
            });
        }
        let inlined = [3, 2].map(|function_id| Line {
            function_id,
            ..Line::default()
        });
        location.push(Location {
            id: 10,
            line: inlined.to_vec(),
            ..Location::default()
        });
        let sample = stacks
            .iter()
            .map(|stack| Sample {
                location_id: stack.to_vec(),
                value: vec![1],
                ..Sample::default()
            })
            .collect();
        Profile {
            string_table,
            function,
            location,
            sample,
            drop_frames: 1,
            keep_frames: if keep.is_empty() { 0 } else { 2 },
            ..Profile::default()
        }
    }

    fn stacks(profile: &Profile) -> Vec<Vec<u64>> {
        profile
            .sample
            .iter()
            .map(|sample| sample.location_id.clone())
            .collect()
    }

    #[test]
    fn frames_under_a_dropped_frame_go_but_not_those_before_the_first_own_frame() {
        // 1 main, 2 malloc, 3 internal, 4 other.
        let mut p = profile(
            &["main", "malloc", "internal", "other"],
            "malloc|internal",
            "",
            &[&[3, 2, 1], &[4, 1], &[2, 3, 1, 2]],
        );
        remove_uninteresting(&mut p).unwrap();
        assert_eq!(stacks(&p), vec![vec![1], vec![4, 1], vec![1, 2]]);
    }

    #[test]
    fn kept_frames_and_inlined_lines() {
        let mut p = profile(&["main", "malloc(int)", "inner"], "malloc", "", &[&[10, 1]]);
        remove_uninteresting(&mut p).unwrap();
        // Location 10 loses the malloc line and the inner line it inlined;
        // it was the outermost line, so the location goes.
        assert_eq!(stacks(&p), vec![vec![1]]);

        let mut p = profile(&["main", "outer", "malloc"], "malloc", "", &[&[10, 1]]);
        remove_uninteresting(&mut p).unwrap();
        // Line 0 (malloc, inlined) matches, line 1 (outer) stays.
        assert_eq!(stacks(&p), vec![vec![10, 1]]);
        let lines: Vec<u64> = p
            .location
            .iter()
            .find(|l| l.id == 10)
            .unwrap()
            .line
            .iter()
            .map(|l| l.function_id)
            .collect();
        assert_eq!(lines, vec![2]);

        let mut p = profile(&["main", "malloc"], "malloc", "mall.*", &[&[2, 1]]);
        remove_uninteresting(&mut p).unwrap();
        assert_eq!(stacks(&p), vec![vec![2, 1]]);
    }

    #[test]
    fn a_bad_regexp_leaves_the_profile_alone() {
        let mut p = profile(&["main", "malloc"], "malloc(", "", &[&[2, 1]]);
        assert!(remove_uninteresting(&mut p).is_err());
        assert_eq!(stacks(&p), vec![vec![2, 1]]);
    }
}
