//! Go, C and Java helper programs that tests build, kept by source hash so
//! that a program is built once, however many tests (or test runs) need it.
//!
//! Everything lives under one cache folder, `$PROFBRIDGE_CACHE` or else
//! `$HOME/.cache/profbridge`: the Go build cache in `go-build` (so the
//! standard library is compiled once, not by every test) and the programs in
//! `programs/NAME-HASH`. The hash covers the source, the build command and
//! the compiler's version, so an edit or a new toolchain builds anew.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Overrides the cache folder (`$HOME/.cache/profbridge` by default).
pub const CACHE_VAR: &str = "PROFBRIDGE_CACHE";

/// The folder shared by test runs for built programs and the Go build cache.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CACHE_VAR) {
        return PathBuf::from(dir);
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cache"))
        .unwrap_or_else(std::env::temp_dir)
        .join("profbridge")
}

/// A compiler that failed, with what it said.
#[derive(Debug)]
pub struct BuildFailed {
    pub command: String,
    pub stderr: String,
}

impl fmt::Display for BuildFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` failed: {}", self.command, self.stderr.trim())
    }
}

impl std::error::Error for BuildFailed {}

/// How to build one program: `compile(source, output)` is the compiler's
/// command line (its output a file, or a folder of classes for Java);
/// `compiler` run with `version_args` tells its version.
pub(crate) struct Recipe<'a> {
    pub name: &'a str,
    pub source: &'a str,
    pub source_file: &'a str,
    pub compiler: &'a str,
    pub version_args: &'a [&'a str],
    pub compile: &'a dyn Fn(&Path, &Path) -> Command,
}

/// The program built from `recipe`: the cached one when its hash matches,
/// else a fresh build, moved into place only once it is complete (tests
/// running at the same time may both build; either result is the same).
pub(crate) fn build_once(recipe: Recipe<'_>) -> Result<PathBuf, BuildFailed> {
    let key = recipe_hash(&recipe);
    let programs = cache_dir().join("programs");
    let program = programs.join(format!("{}-{key:016x}", recipe.name));
    if program.exists() {
        return Ok(program);
    }
    let work = programs.join(format!(
        "{}-{key:016x}.building-{}-{:?}",
        recipe.name,
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&work).expect("create the program's build folder");
    let built = build_in(&recipe, &work).map(|binary| {
        // A test building the same folder at the same time may have put it
        // in place first; a folder cannot be renamed over another.
        if std::fs::rename(&binary, &program).is_err() && !program.exists() {
            panic!("cannot move {} into the cache", binary.display());
        }
        program
    });
    let _ = std::fs::remove_dir_all(&work);
    built
}

fn build_in(recipe: &Recipe<'_>, work: &Path) -> Result<PathBuf, BuildFailed> {
    let source = work.join(recipe.source_file);
    std::fs::write(&source, recipe.source).expect("write the program's source");
    let binary = work.join(recipe.name);
    let mut command = (recipe.compile)(&source, &binary);
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    if output.status.success() {
        Ok(binary)
    } else {
        Err(BuildFailed {
            command: format!("{command:?}"),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

fn recipe_hash(recipe: &Recipe<'_>) -> u64 {
    let mut hasher = DefaultHasher::new();
    recipe.source.hash(&mut hasher);
    let placeholder = Path::new("SOURCE");
    format!("{:?}", (recipe.compile)(placeholder, placeholder)).hash(&mut hasher);
    if let Ok(output) = Command::new(recipe.compiler)
        .args(recipe.version_args)
        .output()
    {
        output.stdout.hash(&mut hasher);
    }
    hasher.finish()
}
