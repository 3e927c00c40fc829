//! Go programs for interop tests, built in GOPATH mode with the shared Go
//! build cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::programs::{self, BuildFailed, Recipe};

/// Builds `source` (a `package main` that imports only the standard
/// library) once; the path of the program.
pub fn build_once(name: &str, source: &str) -> Result<PathBuf, BuildFailed> {
    build_once_with_gopath(name, source, &programs::cache_dir().join("gopath"))
}

/// [`build_once`] with more `go build` flags (`-ldflags=-w` leaves DWARF
/// out, `-ldflags=-s -w` the symbol table too, `-buildmode=pie`).
pub fn build_once_with_flags(
    name: &str,
    source: &str,
    flags: &[&str],
) -> Result<PathBuf, BuildFailed> {
    build(name, source, &programs::cache_dir().join("gopath"), flags)
}

/// Builds `source`, whose imports outside the standard library are found in
/// `gopath`, once; the path of the program.
pub fn build_once_with_gopath(
    name: &str,
    source: &str,
    gopath: &Path,
) -> Result<PathBuf, BuildFailed> {
    build(name, source, gopath, &[])
}

fn build(name: &str, source: &str, gopath: &Path, flags: &[&str]) -> Result<PathBuf, BuildFailed> {
    let go_cache = programs::cache_dir().join("go-build");
    let compile = |source: &Path, output: &Path| {
        let mut command = Command::new("go");
        command
            .arg("build")
            .args(flags)
            .arg("-o")
            .arg(output)
            .arg(source)
            .env("GO111MODULE", "off")
            .env("GOFLAGS", "")
            .env("GOPATH", gopath)
            .env("GOCACHE", &go_cache);
        command
    };
    programs::build_once(Recipe {
        name,
        source,
        source_file: "main.go",
        compiler: "go",
        version_args: &["version"],
        compile: &compile,
    })
}
