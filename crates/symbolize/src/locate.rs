//! Where files are looked for: the mapping's path under a root, build-id
//! debug directories, and `.gnu_debuglink` names as gdb resolves them.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::elf::hex;
use crate::error::FileError;

/// How many symbolic links one path may pass through, as Linux allows.
const MAX_SYMLINKS: usize = 40;

/// `mapping_path` inside `root`, with symbolic links followed as if `root`
/// were `/`: an absolute link target starts again at `root`, and `..`
/// stops at it, so the path found never leaves `root`. Mapping paths with
/// `..` are refused. A path that is not absolute (such as `[vdso]` or
/// `[heap]`) names no file.
pub(crate) fn under_root(root: &Path, mapping_path: &str) -> Result<Option<PathBuf>, FileError> {
    let path = Path::new(mapping_path);
    if !path.is_absolute() {
        return Ok(None);
    }
    let outside = || FileError::OutsideRoot {
        mapping: mapping_path.to_owned(),
        root: root.to_path_buf(),
    };
    let mut pending: Vec<OsString> = Vec::new();
    for component in path.components().rev() {
        match component {
            Component::Normal(part) => pending.push(part.to_owned()),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    let mut inside = root.to_path_buf();
    let mut depth = 0_usize;
    let mut links = 0_usize;
    while let Some(part) = pending.pop() {
        if part == ".." {
            if depth > 0 {
                inside.pop();
                depth -= 1;
            }
            continue;
        }
        if part == "." || part.is_empty() {
            continue;
        }
        inside.push(&part);
        depth += 1;
        let is_link = fs::symlink_metadata(&inside).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        links += 1;
        if links > MAX_SYMLINKS {
            return Err(FileError::TooManyLinks {
                mapping: mapping_path.to_owned(),
                root: root.to_path_buf(),
            });
        }
        let target = fs::read_link(&inside).map_err(|source| FileError::Read {
            path: inside.clone(),
            source,
        })?;
        inside.pop();
        depth -= 1;
        if target.is_absolute() {
            inside = root.to_path_buf();
            depth = 0;
        }
        for component in target.components().rev() {
            match component {
                Component::Normal(part) => pending.push(part.to_owned()),
                Component::ParentDir => pending.push(OsString::from("..")),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
    }
    Ok(Some(inside))
}

/// How much of a process's `maps` is read.
const MAX_MAPS_BYTES: u64 = 16 << 20;

/// The paths of the files mapped in a process (its `/proc/PID/maps`) whose
/// file name is `base_name`, each once, in the order they are mapped; none
/// when the file cannot be read (the process has exited).
pub(crate) fn mapped_paths_named(maps: &Path, base_name: &str) -> Vec<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read =
        fs::File::open(maps).and_then(|file| file.take(MAX_MAPS_BYTES).read_to_end(&mut bytes));
    if read.is_err() {
        return Vec::new();
    }
    let mut paths: Vec<String> = Vec::new();
    // Paths are bytes: a line that is not UTF-8 names no file an OTLP
    // mapping can name, and does not hide the others.
    let lines = bytes.split(|&byte| byte == b'\n');
    for line in lines.filter_map(|line| std::str::from_utf8(line).ok()) {
        // ADDRESS PERMS OFFSET DEVICE INODE PATH, the path maybe with spaces.
        let mut rest = line;
        for _ in 0..5 {
            rest = rest.trim_start();
            rest = rest
                .find(char::is_whitespace)
                .map_or("", |end| &rest[end..]);
        }
        let path = rest.trim();
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let named = Path::new(path)
            .file_name()
            .is_some_and(|name| name == base_name);
        if path.starts_with('/') && named && !paths.iter().any(|known| known == path) {
            paths.push(path.to_owned());
        }
    }
    paths
}

/// `DIR/.build-id/xx/rest.debug`.
pub(crate) fn by_build_id(debug_dir: &Path, build_id: &[u8]) -> Option<PathBuf> {
    build_id_entry(debug_dir, build_id, ".debug")
}

/// `DIR/.build-id/xx/rest`: the file itself, where gdb looks for the
/// executable of a build id (Fedora's `/usr/lib/.build-id` links).
pub(crate) fn file_by_build_id(debug_dir: &Path, build_id: &[u8]) -> Option<PathBuf> {
    build_id_entry(debug_dir, build_id, "")
}

fn build_id_entry(debug_dir: &Path, build_id: &[u8], suffix: &str) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    Some(
        debug_dir
            .join(".build-id")
            .join(hex(&[*first]))
            .join(format!("{}{suffix}", hex(rest))),
    )
}

/// Where a debuglink `name` may be, in gdb's order: next to the file, in
/// its `.debug` folder, then under each debug directory at the file's
/// original folder (`/usr/lib/debug/usr/bin/NAME`).
pub(crate) fn debuglink_candidates(
    file_on_disk: &Path,
    root: Option<&Path>,
    mapping_path: &str,
    name: &str,
    debug_dirs: &[PathBuf],
) -> Vec<PathBuf> {
    let name = Path::new(name);
    if name.components().count() != 1 {
        return Vec::new();
    }
    let mut candidates = Vec::new();
    let inside_root = root.and_then(|root| Some((root, file_on_disk.strip_prefix(root).ok()?)));
    match (inside_root, file_on_disk.parent()) {
        // Next to a file of a process's root: links followed inside it.
        (Some((root, relative)), _) => {
            let folder = Path::new("/").join(relative.parent().unwrap_or(Path::new("")));
            for candidate in [folder.join(name), folder.join(".debug").join(name)] {
                if let Ok(Some(path)) = under_root(root, &candidate.to_string_lossy()) {
                    candidates.push(path);
                }
            }
        }
        // Next to a file of a debug directory or of the debuginfod cache.
        (None, Some(folder)) => {
            candidates.push(folder.join(name));
            candidates.push(folder.join(".debug").join(name));
        }
        (None, None) => {}
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
    fn symbolic_links_are_followed_inside_the_root() {
        let dir = std::env::temp_dir().join(format!("profbridge-locate-{}", std::process::id()));
        let root = dir.join("root");
        let outside = dir.join("outside");
        fs::create_dir_all(root.join("usr/lib")).unwrap();
        fs::create_dir_all(root.join("lib")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("lib/libm.so"), b"inside").unwrap();
        fs::write(outside.join("libm.so"), b"outside").unwrap();
        let link = |target: &Path, at: &str| std::os::unix::fs::symlink(target, root.join(at));
        link(Path::new("/lib/libm.so"), "usr/lib/absolute.so").unwrap();
        link(Path::new("../../lib/libm.so"), "usr/lib/relative.so").unwrap();
        link(
            Path::new("../../../../../../outside/libm.so"),
            "usr/lib/climbing.so",
        )
        .unwrap();
        link(&outside.join("libm.so"), "usr/lib/escaping.so").unwrap();
        link(Path::new("loop.so"), "usr/lib/loop.so").unwrap();
        let found = |path: &str| under_root(&root, path);
        let inside = root.join("lib/libm.so");
        assert_eq!(found("/usr/lib/absolute.so").unwrap(), Some(inside.clone()));
        assert_eq!(found("/usr/lib/relative.so").unwrap(), Some(inside));
        // `..` stops at the root and absolute targets start again there:
        // neither reaches the file outside it.
        assert_eq!(
            found("/usr/lib/climbing.so").unwrap(),
            Some(root.join("outside/libm.so"))
        );
        let escaped = found("/usr/lib/escaping.so").unwrap().unwrap();
        assert!(
            escaped.starts_with(&root) && !escaped.exists(),
            "{escaped:?}"
        );
        assert!(matches!(
            found("/usr/lib/loop.so"),
            Err(FileError::TooManyLinks { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn debuglinks_next_to_a_file_of_the_root_stay_in_the_root() {
        let dir = std::env::temp_dir().join(format!("profbridge-debuglink-{}", std::process::id()));
        let root = dir.join("root");
        fs::create_dir_all(root.join("usr/bin")).unwrap();
        let outside = dir.join("outside.debug");
        fs::write(&outside, b"not the root's").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("usr/bin/app.debug")).unwrap();
        std::os::unix::fs::symlink("/", root.join("usr/bin/.debug")).unwrap();
        let found = debuglink_candidates(
            &root.join("usr/bin/app"),
            Some(&root),
            "/usr/bin/app",
            "app.debug",
            &[],
        );
        assert_eq!(
            found,
            [
                root.join(outside.strip_prefix("/").unwrap()),
                root.join("app.debug"),
            ]
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn base_names_are_found_in_a_process_maps() {
        let dir = std::env::temp_dir().join(format!("profbridge-maps-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let maps = dir.join("maps");
        fs::write(
            &maps,
            "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234   /usr/bin/app\n\
             55d0c0a02000-55d0c0a05000 r-xp 00002000 fd:01 1234   /usr/bin/app\n\
             7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n\
             7f1000000000-7f1000200000 r-xp 00000000 fd:01 99     /opt/my app/lib/libm.so.6\n\
             7f2000000000-7f2000200000 r-xp 00000000 fd:01 98     /usr/lib/libm.so.6 (deleted)\n\
             7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n",
        )
        .unwrap();
        let mut with_latin1 = fs::read(&maps).unwrap();
        with_latin1.extend(b"7f3000000000-7f3000001000 r-xp 00000000 fd:01 7 /opt/caf\xe9/app\n");
        fs::write(&maps, with_latin1).unwrap();
        assert_eq!(mapped_paths_named(&maps, "app"), ["/usr/bin/app"]);
        assert_eq!(
            mapped_paths_named(&maps, "libm.so.6"),
            ["/opt/my app/lib/libm.so.6", "/usr/lib/libm.so.6"]
        );
        assert!(mapped_paths_named(&maps, "[stack]").is_empty());
        assert!(mapped_paths_named(&dir.join("gone"), "app").is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn build_ids_name_a_file_under_dot_build_id() {
        assert_eq!(
            by_build_id(Path::new("/usr/lib/debug"), &[0xab, 0xcd, 0xef]),
            Some(PathBuf::from("/usr/lib/debug/.build-id/ab/cdef.debug"))
        );
        assert_eq!(by_build_id(Path::new("/d"), &[0xab]), None);
        assert_eq!(
            file_by_build_id(Path::new("/usr/lib"), &[0xab, 0xcd, 0xef]),
            Some(PathBuf::from("/usr/lib/.build-id/ab/cdef"))
        );
    }

    #[test]
    fn debuglinks_are_looked_for_where_gdb_looks() {
        let found = debuglink_candidates(
            Path::new("/root/usr/bin/app"),
            None,
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
        assert!(debuglink_candidates(Path::new("/a/b"), None, "/a/b", "../x", &[]).is_empty());
    }
}
