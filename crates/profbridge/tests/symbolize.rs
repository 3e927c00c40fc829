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
    assert_matches_oracle, build_id, gperftools_cpu_profile_of, locations_of, native_programs,
    split_debug_info, truncated_copy, under,
};
use profbridge_testkit::TempDir;
use profbridge_translate::keys::BUILD_ID_GNU;
use profbridge_translate::otlp::{string_value, ExportProfilesServiceRequest, KeyValueAndUnit};
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
        let id = build_id(file);
        let debug = debug_dir
            .join(".build-id")
            .join(&id[..2])
            .join(format!("{}.debug", &id[2..]));
        split_debug_info(file, &under(&root, file), &debug);
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

#[test]
fn a_debuginfod_server_that_never_answers_is_named_and_the_profile_is_still_written() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("cli-symbolize-debuginfod-hang");
    let program = &programs.pie;
    let profile = dir.path().join("cpu.prof");
    std::fs::write(&profile, gperftools_cpu_profile_of(program, dir.path())).unwrap();
    let mut request = pprof_as_request(&profile);
    let dictionary = request.dictionary.as_mut().unwrap();
    let key = dictionary.string_table.len() as i32;
    dictionary.string_table.push(BUILD_ID_GNU.to_owned());
    dictionary.attribute_table.push(KeyValueAndUnit {
        key_strindex: key,
        value: Some(string_value(build_id(program))),
        unit_strindex: 0,
    });
    let attribute = dictionary.attribute_table.len() as i32 - 1;
    let wanted = program.to_string_lossy().into_owned();
    let strings = dictionary.string_table.clone();
    for mapping in &mut dictionary.mapping_table {
        if strings[mapping.filename_strindex as usize] == wanted {
            mapping.attribute_indices.push(attribute);
        }
    }
    let input = dir.path().join("in.otlp.pb");
    std::fs::write(&input, request.encode_to_vec()).unwrap();
    // Connections complete in the kernel's backlog; nothing ever answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let out = dir.path().join("out.otlp.pb");
    let cache = dir.path().join("cache");
    let root = dir.path().join("empty-root");
    let run = profbridge(&[
        &input,
        Path::new("-o"),
        &out,
        Path::new("--root"),
        &root,
        Path::new("--debuginfod"),
        Path::new(&url),
        Path::new("--debuginfod-timeout"),
        Path::new("0.5"),
        Path::new("--debuginfod-cache"),
        &cache,
    ]);
    drop(listener);
    assert!(run.status.success(), "{}", stderr(&run));
    let said = stderr(&run);
    assert!(said.contains("debuginfod_failed"), "{said}");
    assert_eq!(said.matches(&*url).count(), 1, "named once: {said}");
    let written =
        ExportProfilesServiceRequest::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let locations = locations_of(&written, program);
    assert!(!locations.is_empty());
    assert!(locations.iter().all(|(_, lines)| lines.is_empty()));
}
