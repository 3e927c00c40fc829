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
