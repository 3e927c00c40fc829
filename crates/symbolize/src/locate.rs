//! Where files are looked for: the mapping's path under a root, build-id
//! debug directories, and `.gnu_debuglink` names as gdb resolves them.

use std::path::{Component, Path, PathBuf};

use crate::elf::hex;
use crate::error::FileError;

/// `mapping_path` inside `root`; paths with `..` are refused. A path that
/// is not absolute (such as `[vdso]` or `[heap]`) names no file.
pub(crate) fn under_root(root: &Path, mapping_path: &str) -> Result<Option<PathBuf>, FileError> {
    let path = Path::new(mapping_path);
    if !path.is_absolute() {
        return Ok(None);
    }
    let mut inside = root.to_path_buf();
    for component in path.components() {
        match component {
            Component::Normal(part) => inside.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(FileError::OutsideRoot {
                    mapping: mapping_path.to_owned(),
                    root: root.to_path_buf(),
                })
            }
        }
    }
    Ok(Some(inside))
}

/// `DIR/.build-id/xx/rest.debug`.
pub(crate) fn by_build_id(debug_dir: &Path, build_id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    Some(
        debug_dir
            .join(".build-id")
            .join(hex(&[*first]))
            .join(format!("{}.debug", hex(rest))),
    )
}

/// Where a debuglink `name` may be, in gdb's order: next to the file, in
/// its `.debug` folder, then under each debug directory at the file's
/// original folder (`/usr/lib/debug/usr/bin/NAME`).
pub(crate) fn debuglink_candidates(
    file_on_disk: &Path,
    mapping_path: &str,
    name: &str,
    debug_dirs: &[PathBuf],
) -> Vec<PathBuf> {
    let name = Path::new(name);
    if name.components().count() != 1 {
        return Vec::new();
    }
    let mut candidates = Vec::new();
    if let Some(folder) = file_on_disk.parent() {
        candidates.push(folder.join(name));
        candidates.push(folder.join(".debug").join(name));
    }
    if let Some(original) = Path::new(mapping_path).parent() {
        for dir in debug_dirs {
            if let Ok(Some(folder)) = under_root(dir, &original.to_string_lossy()) {
                candidates.push(folder.join(name));
            }
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_paths_stay_under_the_root() {
        let root = Path::new("/proc/42/root");
        assert_eq!(
            under_root(root, "/usr/lib/libc.so.6").unwrap(),
            Some(PathBuf::from("/proc/42/root/usr/lib/libc.so.6"))
        );
        assert_eq!(under_root(root, "[vdso]").unwrap(), None);
        assert!(matches!(
            under_root(root, "/usr/../../etc/shadow"),
            Err(FileError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn build_ids_name_a_file_under_dot_build_id() {
        assert_eq!(
            by_build_id(Path::new("/usr/lib/debug"), &[0xab, 0xcd, 0xef]),
            Some(PathBuf::from("/usr/lib/debug/.build-id/ab/cdef.debug"))
        );
        assert_eq!(by_build_id(Path::new("/d"), &[0xab]), None);
    }

    #[test]
    fn debuglinks_are_looked_for_where_gdb_looks() {
        let found = debuglink_candidates(
            Path::new("/root/usr/bin/app"),
            "/usr/bin/app",
            "app.debug",
            &[PathBuf::from("/usr/lib/debug")],
        );
        assert_eq!(
            found,
            [
                PathBuf::from("/root/usr/bin/app.debug"),
                PathBuf::from("/root/usr/bin/.debug/app.debug"),
                PathBuf::from("/usr/lib/debug/usr/bin/app.debug"),
            ]
        );
        assert!(debuglink_candidates(Path::new("/a/b"), "/a/b", "../x", &[]).is_empty());
    }
}
