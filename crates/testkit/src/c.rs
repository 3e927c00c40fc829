//! C and C++ programs for interop tests (gperftools' profiler, the
//! symbolizer), built with `cc` and `c++`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::programs::{self, BuildFailed, Recipe};

/// Builds `source` once as `cc FLAGS -o PROGRAM SOURCE LINK_ARGS`; the path
/// of the program.
pub fn build_once(
    name: &str,
    source: &str,
    flags: &[&str],
    link_args: &[&str],
) -> Result<PathBuf, BuildFailed> {
    build_with("cc", "c", name, source, flags, link_args)
}

/// Builds C++ `source` once as `c++ FLAGS -o PROGRAM SOURCE LINK_ARGS`; the
/// path of the program (or shared library, with `-shared` in `flags`).
pub fn build_cxx_once(
    name: &str,
    source: &str,
    flags: &[&str],
    link_args: &[&str],
) -> Result<PathBuf, BuildFailed> {
    build_with("c++", "cpp", name, source, flags, link_args)
}

/// Builds `source` (a `NAME.EXTENSION` file) once with `compiler`.
fn build_with(
    compiler: &str,
    extension: &str,
    name: &str,
    source: &str,
    flags: &[&str],
    link_args: &[&str],
) -> Result<PathBuf, BuildFailed> {
    let compile = |source: &Path, output: &Path| {
        let mut command = Command::new(compiler);
        command
            .args(flags)
            .arg("-o")
            .arg(output)
            .arg(source)
            .args(link_args);
        command
    };
    programs::build_once(Recipe {
        name,
        source,
        source_file: &format!("{name}.{extension}"),
        compiler,
        version_args: &["--version"],
        compile: &compile,
    })
}
