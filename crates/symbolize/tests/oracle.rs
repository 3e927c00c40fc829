//! profbridge's symbolizer against `llvm-symbolizer --inlines` on real
//! gperftools CPU profiles of optimized C++ (crates/testkit/src/native.rs):
//! every location of our program and our shared library, PIE and non-PIE,
//! from the binaries themselves and from separate debug files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::path::{Path, PathBuf};

use profbridge_symbolize::{CacheLimits, FileError, MissReason, Sources, Symbolizer};
use profbridge_testkit::native::add_build_id;
use profbridge_testkit::native::{
    add_debuglink, assert_matches_oracle, build_id, build_id_path, gperftools_cpu_profile_of,
    locations_of, native_programs, split_debug_info, split_into_build_id_tree, truncated_copy,
    under,
};
use profbridge_testkit::TempDir;
use profbridge_translate::keys::{FRAME_TYPE, HAS_FUNCTIONS, HAS_INLINE_FRAMES};
use profbridge_translate::otlp::{string_value, ExportProfilesServiceRequest, KeyValueAndUnit};
use support::request_of;

const PURPOSE: &str = "the symbolizer's tests against llvm-symbolizer";

fn local_sources() -> Sources {
    Sources {
        root: Some(PathBuf::from("/")),
        debug_dirs: Vec::new(),
        ..Sources::default()
    }
}

#[test]
fn gperftools_profiles_resolve_as_llvm_symbolizer_says() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-oracle");
    let mut library_locations = 0;
    for program in [&programs.pie, &programs.non_pie] {
        let profile = gperftools_cpu_profile_of(program, dir.path());
        let mut request = request_of(&profile);
        let mut symbolizer = Symbolizer::new(local_sources());
        let report = symbolizer.symbolize(&mut request);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        // Again, from the files and addresses it has cached: the same.
        let mut again = request_of(&profile);
        symbolizer.symbolize(&mut again);
        assert_eq!(again, request);
        let (compared, inlined) = assert_matches_oracle(&request, program, program);
        assert!(compared >= 3, "{}: {compared} locations", program.display());
        assert!(inlined >= 1, "{}: no inlined frames", program.display());
        let (in_library, _) = assert_matches_oracle(&request, &programs.library, &programs.library);
        library_locations += in_library;
        assert!(report.frames_symbolized as usize >= compared);
        let names: Vec<String> = locations_of(&request, program)
            .into_iter()
            .flat_map(|(_, lines)| lines.into_iter().map(|w| w.name))
            .collect();
        // A method, a function of the anonymous namespace and a template's
        // member, inlined into it.
        for wanted in [
            "shapes::Circle::area_sum(long) const",
            "spin_template",
            "add",
        ] {
            assert!(
                names.iter().any(|n| n == wanted),
                "{}: no {wanted} in {names:?}",
                program.display()
            );
        }
        assert_mapping_flags(&request, program);
    }
    assert!(library_locations >= 1, "no samples in our shared library");
}

/// The program's mapping now says it has functions and inline frames.
fn assert_mapping_flags(request: &ExportProfilesServiceRequest, program: &Path) {
    let dictionary = request.dictionary.as_ref().expect("a dictionary");
    let text = |i: i32| dictionary.string_table[i as usize].as_str();
    let wanted = program.to_string_lossy();
    let mapping = dictionary
        .mapping_table
        .iter()
        .find(|m| text(m.filename_strindex) == wanted)
        .expect("the program's mapping");
    for flag in [HAS_FUNCTIONS, HAS_INLINE_FRAMES] {
        assert!(
            mapping.attribute_indices.iter().any(|&i| {
                let a = &dictionary.attribute_table[i as usize];
                text(a.key_strindex) == flag
                    && a.value == Some(profbridge_translate::otlp::bool_value(true))
            }),
            "{flag} not set"
        );
    }
}

#[test]
fn stripped_binaries_resolve_through_build_id_debug_files() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-build-id");
    let root = dir.path().join("root");
    let debug_dir = dir.path().join("debug");
    for file in [&programs.pie, &programs.library] {
        split_into_build_id_tree(file, &root, &debug_dir);
    }
    let mut request = request_of(&gperftools_cpu_profile_of(&programs.pie, dir.path()));
    let sources = Sources {
        root: Some(root.clone()),
        debug_dirs: vec![debug_dir.clone()],
        ..Sources::default()
    };
    let report = Symbolizer::new(sources).symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    for file in [&programs.pie, &programs.library] {
        // The oracle reads the unstripped file.
        let (compared, _) = assert_matches_oracle(&request, file, file);
        assert!(compared >= 1, "{}", file.display());
    }
}

#[test]
fn stripped_binaries_resolve_through_gnu_debuglink() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-debuglink");
    let root = dir.path().join("root");
    let program = &programs.pie;
    let stripped = under(&root, program);
    let debug = stripped.with_file_name("symtest.debug");
    split_debug_info(program, &stripped, &debug);
    add_debuglink(&stripped, &debug);
    // gdb's second place: the `.debug` folder next to the file.
    let hidden = stripped.with_file_name(".debug").join("symtest.debug");
    std::fs::create_dir_all(hidden.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &hidden).unwrap();
    let mut request = request_of(&gperftools_cpu_profile_of(program, dir.path()));
    let sources = Sources {
        root: Some(root),
        debug_dirs: Vec::new(),
        ..Sources::default()
    };
    let report = Symbolizer::new(sources).symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let (compared, _) = assert_matches_oracle(&request, program, program);
    assert!(compared >= 1);
}

/// Locations of `file` that have lines.
fn symbolized(request: &ExportProfilesServiceRequest, file: &Path) -> usize {
    locations_of(request, file)
        .iter()
        .filter(|(_, lines)| !lines.is_empty())
        .count()
}

#[test]
fn a_truncated_elf_is_reported_once_and_its_frames_stay_addresses() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-truncated");
    let root = dir.path().join("root");
    let program = &programs.pie;
    let copy = truncated_copy(&root, program);
    let profile = gperftools_cpu_profile_of(program, dir.path());
    let mut symbolizer = Symbolizer::new(Sources {
        root: Some(root),
        debug_dirs: Vec::new(),
        ..Sources::default()
    });

    let mut request = request_of(&profile);
    let report = symbolizer.symbolize(&mut request);
    let named: Vec<&FileError> = report
        .problems
        .iter()
        .filter(|p| p.to_string().contains(&*copy.to_string_lossy()))
        .collect();
    assert_eq!(named.len(), 1, "{:?}", report.problems);
    let misses = report.misses.get(&MissReason::FileUnusable).copied();
    assert_eq!(misses, Some(locations_of(&request, program).len() as u64));
    assert_eq!(symbolized(&request, program), 0);

    // Met again: counted, not reported again.
    let mut again = request_of(&profile);
    let report = symbolizer.symbolize(&mut again);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(
        report.misses.get(&MissReason::FileUnusable).copied(),
        misses
    );
}

#[test]
fn a_debug_file_alone_does_not_place_runtime_addresses() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-debug-only");
    let debug_dir = dir.path().join("debug");
    let program = &programs.pie;
    split_debug_info(
        program,
        &dir.path().join("stripped"),
        &build_id_path(&debug_dir, program),
    );
    let mut request = request_of(&gperftools_cpu_profile_of(program, dir.path()));
    add_build_id(&mut request, program, &build_id(program));
    let sources = Sources {
        root: Some(dir.path().join("empty-root")),
        debug_dirs: vec![debug_dir],
        ..Sources::default()
    };
    let report = Symbolizer::new(sources).symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(
        report.misses.get(&MissReason::OnlyDebugFile).copied(),
        Some(locations_of(&request, program).len() as u64)
    );
    assert_eq!(symbolized(&request, program), 0);
}

#[test]
fn a_build_id_that_does_not_match_is_reported_and_skipped() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-mismatch");
    let program = &programs.pie;
    let mut request = request_of(&gperftools_cpu_profile_of(program, dir.path()));
    let wrong = "00112233445566778899aabbccddeeff00112233";
    add_build_id(&mut request, program, wrong);
    let report = Symbolizer::new(local_sources()).symbolize(&mut request);
    let mismatches: Vec<String> = report
        .problems
        .iter()
        .filter(|p| matches!(p, FileError::BuildIdMismatch { .. }))
        .map(ToString::to_string)
        .collect();
    assert_eq!(mismatches.len(), 1, "{:?}", report.problems);
    assert!(mismatches[0].contains(wrong), "{}", mismatches[0]);
    assert!(
        mismatches[0].contains(&build_id(program)),
        "{}",
        mismatches[0]
    );
    assert_eq!(symbolized(&request, program), 0);
    assert!(report.misses.values().sum::<u64>() >= locations_of(&request, program).len() as u64);
    // The shared library, whose mapping carries no build id, still resolves.
    assert!(symbolized(&request, &programs.library) >= 1);
}

#[test]
fn interpreted_frames_are_left_alone() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-interpreted");
    let program = &programs.pie;
    let mut request = request_of(&gperftools_cpu_profile_of(program, dir.path()));
    let wanted = program.to_string_lossy().into_owned();
    let (index, marked) = {
        let dictionary = request.dictionary.as_mut().unwrap();
        // A location of the program, which would resolve if it were native.
        let index = (1..dictionary.location_table.len())
            .find(|&i| {
                let mapping = dictionary.location_table[i].mapping_index as usize;
                dictionary.string_table
                    [dictionary.mapping_table[mapping].filename_strindex as usize]
                    == wanted
            })
            .unwrap();
        let key = dictionary.string_table.len() as i32;
        dictionary.string_table.push(FRAME_TYPE.to_owned());
        let attribute = dictionary.attribute_table.len() as i32;
        dictionary.attribute_table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(string_value("python")),
            unit_strindex: 0,
        });
        let location = &mut dictionary.location_table[index];
        location.attribute_indices.push(attribute);
        (index, location.clone())
    };
    let report = Symbolizer::new(local_sources()).symbolize(&mut request);
    assert_eq!(report.left_alone, 1);
    assert_eq!(request.dictionary.unwrap().location_table[index], marked);
    assert!(report.locations_symbolized >= 1);
}

#[test]
fn nothing_is_resolved_after_the_deadline() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-deadline");
    let program = &programs.pie;
    let profile = gperftools_cpu_profile_of(program, dir.path());
    let mut request = request_of(&profile);
    let untouched = request.clone();
    // A deadline already past: every native location is out of time.
    let report = Symbolizer::new(local_sources())
        .symbolize_until(&mut request, Some(std::time::Instant::now()));
    assert_eq!(request, untouched);
    assert_eq!(report.locations_symbolized, 0);
    let late = report.misses.get(&MissReason::OutOfTime).copied();
    assert!(late >= Some(locations_of(&request, program).len() as u64));
}

const GO_PROGRAM: &str = r#"package main

import (
	"os"
	"runtime/pprof"
	"time"
)

var sink float64

func step(x float64) float64 { return x*1.0000001 + 0.5/(x+1.0) }

//go:noinline
func spin(d time.Duration) {
	x := 1.0
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 10000; i++ {
			x = step(x)
		}
	}
	sink += x
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	spin(400 * time.Millisecond)
	pprof.StopCPUProfile()
	f.Close()
}
"#;

#[test]
fn go_binaries_resolve_from_their_dwarf() {
    let purpose = "the symbolizer's Go test against llvm-symbolizer";
    if native_programs(purpose).is_none()
        || profbridge_testkit::require_tool("go", &["version"], purpose).is_none()
    {
        return;
    }
    let program = profbridge_testkit::go::build_once("symbolize-go", GO_PROGRAM).unwrap();
    let dir = TempDir::new("symbolize-go");
    let profile_path = dir.path().join("cpu.pb.gz");
    let run = std::process::Command::new(&program)
        .arg(&profile_path)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut request = request_of(&std::fs::read(&profile_path).unwrap());
    // Go symbolizes its own profiles: make them bare addresses.
    for location in &mut request.dictionary.as_mut().unwrap().location_table {
        location.lines.clear();
    }
    let report = Symbolizer::new(local_sources()).symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let (compared, inlined) = assert_matches_oracle(&request, &program, &program);
    assert!(compared >= 3, "{compared} locations");
    assert!(inlined >= 1, "main.step is inlined into main.spin");
    let names: Vec<String> = locations_of(&request, &program)
        .into_iter()
        .flat_map(|(_, lines)| lines.into_iter().map(|w| w.name))
        .collect();
    assert!(names.iter().any(|n| n == "main.spin"), "{names:?}");
}

/// `request` as sampled in process `pid`, as a resource attribute says.
fn in_process(mut request: ExportProfilesServiceRequest, pid: i64) -> ExportProfilesServiceRequest {
    for resource_profiles in &mut request.resource_profiles {
        let resource = resource_profiles
            .resource
            .get_or_insert_with(Default::default);
        resource
            .attributes
            .push(profbridge_translate::otlp::KeyValue {
                key: "process.pid".to_owned(),
                value: Some(profbridge_translate::otlp::int_value(pid)),
                ..Default::default()
            });
    }
    request
}

#[test]
fn each_process_opens_mapping_paths_in_its_own_root() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-process-root");
    let proc = dir.path().join("proc");
    let process_root = proc.join("4242").join("root");
    for file in [&programs.pie, &programs.library] {
        let copy = under(&process_root, file);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(file, &copy).unwrap();
    }
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let sources = Sources {
        root: Some(dir.path().join("empty-root")),
        process_roots: Some(proc),
        ..Sources::default()
    };
    let mut symbolizer = Symbolizer::new(sources);
    let mut request = in_process(request_of(&profile), 4242);
    let report = symbolizer.symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let (compared, _) = assert_matches_oracle(&request, &programs.pie, &programs.pie);
    assert!(compared >= 3, "{compared} locations");
    assert_matches_oracle(&request, &programs.library, &programs.library);

    // Another process, whose root holds nothing: its files are not taken
    // from process 4242's root, nor from the local machine.
    let mut elsewhere = in_process(request_of(&profile), 4343);
    let report = symbolizer.symbolize(&mut elsewhere);
    assert_eq!(report.locations_symbolized, 0);
    assert!(report.misses[&MissReason::FileNotFound] >= 3, "{report:?}");

    // Mappings that name their build id: a file opened for one process
    // serves every process that names the same build id, without being
    // looked for again.
    let with_build_ids = |pid| {
        let mut request = in_process(request_of(&profile), pid);
        for file in [&programs.pie, &programs.library] {
            add_build_id(&mut request, file, &build_id(file));
        }
        request
    };
    let mut first = with_build_ids(4242);
    let opened = symbolizer.symbolize(&mut first);
    let mut second = with_build_ids(4343);
    let shared = symbolizer.symbolize(&mut second);
    assert_eq!(second, in_process_of(&first, 4343));
    assert_eq!(shared.locations_symbolized, opened.locations_symbolized);
    assert_eq!(
        shared.cache.file_misses + 2,
        opened.cache.file_misses,
        "{shared:?} {opened:?}"
    );
}

/// `request` with its `process.pid` attributes made `pid`.
fn in_process_of(request: &ExportProfilesServiceRequest, pid: i64) -> ExportProfilesServiceRequest {
    let mut request = request.clone();
    for resource_profiles in &mut request.resource_profiles {
        for attribute in &mut resource_profiles.resource.as_mut().unwrap().attributes {
            if attribute.key == "process.pid" {
                attribute.value = Some(profbridge_translate::otlp::int_value(pid));
            }
        }
    }
    request
}

#[test]
fn a_cache_budget_smaller_than_a_file_keeps_one_file_and_resolves_the_same() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-cache-budget");
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let mut roomy = Symbolizer::new(local_sources());
    let limits = CacheLimits {
        files: 64,
        bytes: 1,
    };
    let mut tight = Symbolizer::with_limits(local_sources(), limits);
    // Every file the profile's mappings name, the C++ runtime included.
    let request = request_of(&profile);
    let dictionary = request.dictionary.as_ref().unwrap();
    let largest = dictionary
        .mapping_table
        .iter()
        .filter_map(|m| {
            std::fs::metadata(&dictionary.string_table[m.filename_strindex as usize]).ok()
        })
        .map(|metadata| metadata.len())
        .max()
        .unwrap();
    for round in 0..2 {
        let mut from_roomy = request_of(&profile);
        let roomy_report = roomy.symbolize(&mut from_roomy);
        let mut from_tight = request_of(&profile);
        let tight_report = tight.symbolize(&mut from_tight);
        assert_eq!(from_tight, from_roomy);
        assert!(tight_report.locations_symbolized >= 3);
        // Only the newest file is kept (and one resolved address): each
        // mapping met again is opened again.
        assert!(
            tight.cached_bytes() <= largest + 4096,
            "{}",
            tight.cached_bytes()
        );
        if round == 1 {
            assert_eq!(roomy_report.cache.file_misses, 0, "{roomy_report:?}");
            assert!(tight_report.cache.file_misses >= 2, "{tight_report:?}");
        }
    }
    assert_matches_oracle(
        &request_of_symbolized(&mut tight, &profile),
        &programs.pie,
        &programs.pie,
    );
}

fn request_of_symbolized(
    symbolizer: &mut Symbolizer,
    profile: &[u8],
) -> ExportProfilesServiceRequest {
    let mut request = request_of(profile);
    symbolizer.symbolize(&mut request);
    request
}

mod go_tables;
