//! Finding the files to read: include globs, minus exclude globs and the
//! receiver's own folders, each with its identity.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use glob::{MatchOptions, Pattern};

use super::checkpoint::FileIdentity;

/// `*` stops at `/`, and hidden files and folders (like `.failed`) match
/// only a pattern that spells their dot.
pub(super) const MATCH_OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

/// The regular files `include` matches and `exclude` does not, outside
/// `skip` folders, by path; with the problems met on the way.
pub(super) fn scan(
    include: &[String],
    exclude: &[Pattern],
    skip: &[PathBuf],
) -> (BTreeMap<PathBuf, FileIdentity>, Vec<String>) {
    let mut found = BTreeMap::new();
    let mut problems = Vec::new();
    for pattern in include {
        let paths = match glob::glob_with(pattern, MATCH_OPTIONS) {
            Ok(paths) => paths,
            Err(error) => {
                problems.push(format!("{pattern:?}: {error}"));
                continue;
            }
        };
        for entry in paths {
            let path = match entry {
                Ok(path) => path,
                Err(error) => {
                    problems.push(error.to_string());
                    continue;
                }
            };
            let skipped = skip.iter().any(|dir| path.starts_with(dir))
                || exclude
                    .iter()
                    .any(|pattern| pattern.matches_path_with(&path, MATCH_OPTIONS));
            if skipped || found.contains_key(&path) {
                continue;
            }
            match std::fs::metadata(&path) {
                Ok(metadata) if metadata.is_file() => {
                    found.insert(path, identity(&metadata));
                }
                Ok(_) => {}
                // Gone between listing and looking: seen at the next poll, or never.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => problems.push(format!("{}: {error}", path.display())),
            }
        }
    }
    (found, problems)
}

pub(super) fn identity(metadata: &std::fs::Metadata) -> FileIdentity {
    let mtime_ns = metadata
        .modified()
        .map_or(0, crate::receivers::from_pprof::nanos_since_epoch);
    #[cfg(unix)]
    let (inode, device) = {
        use std::os::unix::fs::MetadataExt;
        (metadata.ino(), metadata.dev())
    };
    #[cfg(not(unix))]
    let (inode, device) = (0, 0);
    FileIdentity {
        size: metadata.len(),
        mtime_ns,
        inode,
        device,
    }
}

/// The key a file has in the checkpoint.
pub(super) fn key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_folders_and_skipped_ones_are_not_read() {
        let root = std::env::temp_dir().join(format!("profbridge-scan-{}", std::process::id()));
        for dir in ["a/.failed", "a/b", "a/done"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "a/x.prof",
            "a/.failed/y.prof",
            "a/b/z.prof",
            "a/done/w.prof",
            "a/b/z.tmp",
        ] {
            std::fs::write(root.join(file), b"1").unwrap();
        }
        let include = [format!("{}/a/**/*", root.display())];
        let exclude = [Pattern::new("**/*.tmp").unwrap()];
        let (found, problems) = scan(&include, &exclude, &[root.join("a/done")]);
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<String> = found
            .keys()
            .map(|path| path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a/b/z.prof", "a/x.prof"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
