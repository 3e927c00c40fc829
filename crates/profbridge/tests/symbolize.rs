//! `profbridge symbolize`, end to end on the built binary: gperftools CPU
//! profiles of optimized C++ (crates/testkit/src/native.rs), every location
//! of our program and shared library compared with `llvm-symbolizer --inlines`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::process::{Command, Output};

use profbridge_pprof::{parse_any, DecodeOptions};
use profbridge_testkit::native::{
    assert_matches_oracle, gperftools_cpu_profile_of, locations_of, native_programs,
    split_into_build_id_tree, truncated_copy,
};
use profbridge_testkit::TempDir;
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};
use prost::Message;

const PURPOSE: &str = "the `profbridge symbolize` tests against llvm-symbolizer";

fn profbridge(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .arg("symbolize")
        .args(args)
        .output()
        .expect("run profbridge")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The pprof file `path`, as OTLP (the translation keeps every field).
fn pprof_as_request(path: &Path) -> ExportProfilesServiceRequest {
    let (profile, _) = parse_any(&std::fs::read(path).unwrap(), &DecodeOptions::default()).unwrap();
    pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    )
    .request
}

#[test]
fn symbolize_writes_pprof_that_llvm_symbolizer_agrees_with() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize");
    for program in [&programs.pie, &programs.non_pie] {
        let profile = dir.path().join("cpu.prof");
        std::fs::write(&profile, gperftools_cpu_profile_of(program, dir.path())).unwrap();
        let out = dir.path().join("cpu.pb.gz");
        let run = profbridge(&[&profile, Path::new("-o"), &out]);
        assert!(run.status.success(), "{}", stderr(&run));
        assert!(
            stderr(&run).contains("locations symbolized"),
            "{}",
            stderr(&run)
        );
        let request = pprof_as_request(&out);
        let (compared, inlined) = assert_matches_oracle(&request, program, program);
        assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
        let (in_library, _) = assert_matches_oracle(&request, &programs.library, &programs.library);
        assert!(in_library >= 1);
    }
}

#[test]
fn symbolize_reads_stripped_files_under_root_and_debug_files_by_build_id() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize-debug-dir");
    let root = dir.path().join("root");
    let debug_dir = dir.path().join("debug");
    for file in [&programs.pie, &programs.library] {
        split_into_build_id_tree(file, &root, &debug_dir);
    }
    let profile = dir.path().join("cpu.prof");
    std::fs::write(
        &profile,
        gperftools_cpu_profile_of(&programs.pie, dir.path()),
    )
    .unwrap();
    let out = dir.path().join("cpu.otlp.pb");
    let run = profbridge(&[
        &profile,
        Path::new("-o"),
        &out,
        Path::new("--root"),
        &root,
        Path::new("--debug-dir"),
        Path::new("/nonexistent"),
        Path::new("--debug-dir"),
        &debug_dir,
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let request = ExportProfilesServiceRequest::decode(&*std::fs::read(&out).unwrap()).unwrap();
    for file in [&programs.pie, &programs.library] {
        let (compared, _) = assert_matches_oracle(&request, file, file);
        assert!(compared >= 1, "{}", file.display());
    }
}

#[test]
fn a_truncated_elf_is_named_and_the_profile_is_still_written() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize-truncated");
    let root = dir.path().join("root");
    let program = &programs.pie;
    let copy = truncated_copy(&root, program);
    let profile = dir.path().join("cpu.prof");
    std::fs::write(&profile, gperftools_cpu_profile_of(program, dir.path())).unwrap();
    let out = dir.path().join("cpu.pb.gz");
    let run = profbridge(&[&profile, Path::new("-o"), &out, Path::new("--root"), &root]);
    assert!(run.status.success(), "{}", stderr(&run));
    let said = stderr(&run);
    assert_eq!(
        said.matches(&*copy.to_string_lossy()).count(),
        1,
        "named once: {said}"
    );
    assert!(said.contains("file_unusable"), "{said}");
    let request = pprof_as_request(&out);
    let locations = locations_of(&request, program);
    assert!(!locations.is_empty());
    assert!(locations.iter().all(|(_, lines)| lines.is_empty()));
}
