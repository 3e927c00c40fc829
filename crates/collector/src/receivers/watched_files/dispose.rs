//! Moving files aside: delivered ones to `move_to`, failed ones to
//! `failed_dir`.

use std::path::{Path, PathBuf};

/// Moves `path` into `dir` (created when missing), keeping its name, or
/// adding `.1`, `.2`… when the name is taken. Returns where it went.
pub(super) fn move_into(path: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path has no file name"))?;
    let mut target = dir.join(name);
    let mut suffix = 0u32;
    while target.exists() {
        suffix += 1;
        let mut numbered = name.to_owned();
        numbered.push(format!(".{suffix}"));
        target = dir.join(numbered);
    }
    if let Err(rename_error) = std::fs::rename(path, &target) {
        // Another file system: copy, then remove.
        if std::fs::copy(path, &target).is_err() {
            return Err(rename_error);
        }
        std::fs::remove_file(path)?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_taken_get_a_number() {
        let dir = std::env::temp_dir().join(format!("profbridge-dispose-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let aside = dir.join("aside");
        for round in 0..2 {
            let file = dir.join("cpu.pb.gz");
            std::fs::write(&file, [round]).unwrap();
            let moved = move_into(&file, &aside).unwrap();
            let expected = if round == 0 {
                "cpu.pb.gz"
            } else {
                "cpu.pb.gz.1"
            };
            assert_eq!(moved, aside.join(expected));
            assert!(!file.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
