//! No process-wide mutable state in library code: a `static` whose type
//! can change after start (atomics, locks, cells, once-cells) would be
//! shared by every collector in a process, tests' in-process collectors
//! included, without any caller seeing it. Immutable statics (a compiled
//! regex behind `LazyLock`, or the legacy parsers' `Pattern`, compiled once
//! from constant text) and the binary's `#[global_allocator]` are fine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// Types a static may have: ones that cannot change after start. Any
/// other type (an atomic, a lock, a cell, or a struct that may hold one)
/// is refused.
const IMMUTABLE_TYPES: &[&str] = &[
    "LazyLock<Option<Regex>>",
    "LazyLock<Regex>",
    "LazyLock<Vec<(Regex, &'static str)>>",
    "Pattern",
    "&",
    "[",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// `static` items (and `thread_local!`) of a type not known to be
/// immutable, as `file:line: text`.
fn mutable_statics(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut found = Vec::new();
    let mut previous = "";
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        let declaration = [
            "static ",
            "pub static ",
            "pub(crate) static ",
            "pub(super) static ",
        ]
        .iter()
        .find_map(|start| code.strip_prefix(start));
        let global_allocator = previous.trim() == "#[global_allocator]";
        let mutable = declaration.is_some_and(|rest| {
            let type_name = rest.split_once(':').map_or("", |(_, after)| {
                after.split('=').next().unwrap_or("").trim()
            });
            rest.starts_with("mut ")
                || !IMMUTABLE_TYPES
                    .iter()
                    .any(|immutable| type_name.starts_with(immutable))
        });
        if (mutable && !global_allocator) || code.starts_with("thread_local!") {
            found.push(format!("{}:{}: {}", file.display(), number + 1, code));
        }
        previous = line;
    }
    found
}

#[test]
fn library_code_keeps_no_process_wide_mutable_statics() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for crate_dir in std::fs::read_dir(workspace.join("crates")).unwrap() {
        let crate_dir = crate_dir.unwrap().path();
        // The testkit is test code (and holds Java source in strings).
        if crate_dir.ends_with("testkit") {
            continue;
        }
        let source = crate_dir.join("src");
        if source.is_dir() {
            rust_files(&source, &mut files);
        }
    }
    assert!(files.len() > 100, "found only {} source files", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| mutable_statics(file))
        .collect();
    assert!(
        found.is_empty(),
        "process-wide mutable statics; own the state where it is used instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_mutable_static() {
    let dir = std::env::temp_dir().join(format!("profbridge-statics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sample.rs");
    std::fs::write(
        &file,
        "static COUNT: AtomicU64 = AtomicU64::new(0);\n\
         static PATTERN: LazyLock<Option<Regex>> = LazyLock::new(|| None);\n\
         #[global_allocator]\nstatic ALLOCATOR: MiMalloc = MiMalloc;\n\
         pub(crate) static POOL: Mutex<Vec<u8>> = Mutex::new(Vec::new());\n\
         static SPARE: Spare = Spare::new();\n\
         static NAMES: &[&str] = &[\"a\"];\n",
    )
    .unwrap();
    let found = mutable_statics(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].ends_with(":1: static COUNT: AtomicU64 = AtomicU64::new(0);"));
    assert!(found[1].contains(":5: pub(crate) static POOL"));
    assert!(found[2].contains(":6: static SPARE"));
}
