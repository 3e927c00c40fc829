//! Requests shaped exactly as the OpenTelemetry eBPF profiler writes them
//! (crates/testkit/src/ebpf_profiler.rs cites its sources): native frames
//! at ELF addresses of our optimized C++ programs (PIE, non-PIE and a
//! shared library; the addresses of real gperftools samples) in mappings
//! named by base name with build ids, beside kernel and interpreted
//! frames. Native frames resolve as `llvm-symbolizer --inlines` says, from
//! the binaries or from debug files found by build id; frame types and
//! every other frame are kept as they came. Kernel frames resolve from
//! /proc/kallsyms as a separate reader (a Python script) says, and from a
//! made-up kallsyms file for the cases a machine rarely shows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use profbridge_symbolize::{FileError, KallsymsError, MissReason, Report, Sources, Symbolizer};
use profbridge_testkit::ebpf_profiler::{
    ebpf_profiler_native_request, profiler_locations_of, InterpretedFrame, KernelFrame,
    NativeFrames,
};
use profbridge_testkit::kernel::{kallsyms_oracle, KernelAnswer};
use profbridge_testkit::native::{
    add_build_id, assert_frames_match_oracle, build_id, gperftools_cpu_profile_of, locations_of,
    native_programs, split_debug_info, under, written_lines, NativePrograms, Written,
};
use profbridge_testkit::TempDir;
use profbridge_translate::keys::HAS_FUNCTIONS;
use profbridge_translate::otlp::{
    bool_value, ExportProfilesServiceRequest, KeyValueAndUnit, Location, Mapping,
};
use support::request_of;

const PURPOSE: &str = "the symbolizer's eBPF-profiler tests against llvm-symbolizer";

/// ELF addresses of gperftools samples in the PIE program, the non-PIE
/// program and the library, profiled once for all tests.
fn sampled_frames(programs: &NativePrograms) -> &'static [NativeFrames] {
    static FRAMES: OnceLock<Vec<NativeFrames>> = OnceLock::new();
    FRAMES.get_or_init(|| {
        let dir = TempDir::new("ebpf-profiles");
        let mut library = Vec::new();
        let mut frames = Vec::new();
        for program in [&programs.pie, &programs.non_pie] {
            let request = request_of(&gperftools_cpu_profile_of(program, dir.path()));
            let addresses = |file| -> Vec<u64> {
                locations_of(&request, file)
                    .into_iter()
                    .map(|(a, _)| a)
                    .collect()
            };
            frames.push(NativeFrames {
                file: program.clone(),
                addresses: addresses(program),
            });
            library.extend(addresses(&programs.library));
        }
        library.sort_unstable();
        library.dedup();
        frames.push(NativeFrames {
            file: programs.library.clone(),
            addresses: library,
        });
        frames
    })
}

fn interpreted_frames() -> Vec<InterpretedFrame> {
    let frame = |frame_type: &str, function: Option<(&str, &str, i64)>| InterpretedFrame {
        frame_type: frame_type.to_owned(),
        function: function.map(|(n, f, l)| (n.to_owned(), f.to_owned(), l)),
    };
    vec![
        frame("cpython", Some(("handle", "/srv/app/views.py", 42))),
        frame("cpython", Some(("<module>", "/srv/app/main.py", 7))),
        // Frames the profiler could not symbolize: only their type.
        frame("cpython", None),
        frame("jvm", Some(("com.example.Main.run", "Main.java", 17))),
        frame("v8js", None),
        frame("abort-marker", None),
    ]
}

/// What the symbolizer must leave as it is: every location but the native
/// ones, each with its lines' strings, and every location's mapping,
/// address and attributes (its frame type).
fn kept(request: &ExportProfilesServiceRequest) -> Vec<(Location, Vec<Written>)> {
    let dictionary = request.dictionary.as_ref().unwrap();
    dictionary
        .location_table
        .iter()
        .map(|location| {
            let mut location = location.clone();
            let native = frame_type(request, &location) == "native";
            if native {
                location.lines.clear();
            }
            let lines = if native {
                Vec::new()
            } else {
                written_lines(dictionary, &location)
            };
            (location, lines)
        })
        .collect()
}

fn frame_type(request: &ExportProfilesServiceRequest, location: &Location) -> String {
    let dictionary = request.dictionary.as_ref().unwrap();
    let text = |i: i32| dictionary.string_table[i as usize].clone();
    location
        .attribute_indices
        .iter()
        .map(|&i| &dictionary.attribute_table[i as usize])
        .find(|a| text(a.key_strindex) == "profile.frame.type")
        .map(|a| match a.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(profbridge_translate::otlp::any_value::Value::StringValue(s)) => s.clone(),
            other => panic!("{other:?}"),
        })
        .unwrap_or_default()
}

/// Symbolizes an eBPF-profiler request of our programs with `sources` and
/// checks it against llvm-symbolizer and against what it was.
fn assert_resolves_as_the_oracle(programs: &NativePrograms, sources: Sources) -> Report {
    let native = sampled_frames(programs);
    let kernel = [
        KernelFrame::Named {
            function: "do_syscall_64".to_owned(),
            offset: 0x1a2b,
        },
        KernelFrame::Unnamed {
            address: 0xffff_ffff_8123_4567,
        },
    ];
    let mut request =
        ebpf_profiler_native_request(&programs.pie, native, &kernel, &interpreted_frames());
    let before = kept(&request);
    let report = Symbolizer::new(sources).symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(kept(&request), before, "only native lines were added");
    // The kernel frame the profiler could not name (there are no kernel
    // symbols to read), and the interpreted frames it could not symbolize.
    assert_eq!(report.left_alone, 1 + 3);
    let natives: usize = native.iter().map(|f| f.addresses.len()).sum();
    assert_eq!(report.locations_symbolized as usize, natives, "{report:?}");
    for (frames, program) in native.iter().zip([&programs.pie, &programs.non_pie]) {
        let (compared, inlined) =
            assert_frames_match_oracle(&profiler_locations_of(&request, program), program, program);
        assert_eq!(compared, frames.addresses.len());
        assert!(compared >= 3, "{}: {compared}", program.display());
        assert!(inlined >= 1, "{}: no inlined frames", program.display());
    }
    let library = &programs.library;
    let (compared, _) =
        assert_frames_match_oracle(&profiler_locations_of(&request, library), library, library);
    assert!(compared >= 1, "no samples in our shared library");
    report
}

/// Copies `file` to where gdb finds a build id's file in `debug_dir`:
/// `.build-id/xx/rest`.
fn place_by_build_id(debug_dir: &Path, file: &Path, suffix: &str) -> PathBuf {
    let id = build_id(file);
    let path = debug_dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}{suffix}", &id[2..]));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    path
}

fn all_files(programs: &NativePrograms) -> [&PathBuf; 3] {
    [&programs.pie, &programs.non_pie, &programs.library]
}

#[test]
fn native_frames_resolve_from_the_binaries_found_by_build_id() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("ebpf-binaries");
    let debug_dir = dir.path().join("build-ids");
    for file in all_files(&programs) {
        std::fs::copy(file, place_by_build_id(&debug_dir, file, "")).unwrap();
    }
    assert_resolves_as_the_oracle(
        &programs,
        Sources {
            // The profiler names files by their base names: no path to open.
            root: Some(PathBuf::from("/")),
            debug_dirs: vec![debug_dir],
            ..Sources::default()
        },
    );
}

#[test]
fn native_frames_resolve_from_the_process_root_through_its_maps() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    // A process (4242, the request's `process.pid`) seen through a /proc
    // of our own: its files in its root, at the paths its maps name. The
    // profiler gives only their base names.
    let dir = TempDir::new("ebpf-process-root");
    let proc = dir.path().join("proc");
    let process = proc.join("4242");
    let mut maps = String::new();
    for (i, file) in all_files(&programs).into_iter().enumerate() {
        let copy = under(&process.join("root"), file);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(file, &copy).unwrap();
        let start = 0x7f00_0000_0000_u64 + (i as u64) * 0x100_0000;
        maps.push_str(&format!(
            "{start:x}-{:x} r-xp 00000000 fd:01 {} {}\n",
            start + 0x10_0000,
            100 + i,
            file.display()
        ));
    }
    std::fs::write(process.join("maps"), maps).unwrap();
    assert_resolves_as_the_oracle(
        &programs,
        Sources {
            root: Some(dir.path().join("empty-root")),
            process_roots: Some(proc),
            ..Sources::default()
        },
    );
}

#[test]
fn native_frames_resolve_from_debug_files_found_by_build_id() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("ebpf-debug-files");
    // Debug files alone, and stripped binaries with their debug files.
    let alone = dir.path().join("alone");
    let beside = dir.path().join("beside");
    for file in all_files(&programs) {
        let debug = place_by_build_id(&alone, file, ".debug");
        split_debug_info(file, &dir.path().join("stripped"), &debug);
        split_debug_info(
            file,
            &place_by_build_id(&beside, file, ""),
            &place_by_build_id(&beside, file, ".debug"),
        );
    }
    for debug_dir in [alone, beside] {
        assert_resolves_as_the_oracle(
            &programs,
            Sources {
                root: None,
                debug_dirs: vec![debug_dir],
                ..Sources::default()
            },
        );
    }
}

#[test]
fn addresses_outside_the_mapping_are_misses() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("ebpf-outside");
    let debug_dir = dir.path().join("build-ids");
    let program = &programs.pie;
    std::fs::copy(program, place_by_build_id(&debug_dir, program, "")).unwrap();
    let frames = &sampled_frames(&programs)[0];
    let mut request = ebpf_profiler_native_request(program, std::slice::from_ref(frames), &[], &[]);
    let dictionary = request.dictionary.as_mut().unwrap();
    let mapping = dictionary.location_table[1].mapping_index as usize;
    dictionary.location_table[1].address = dictionary.mapping_table[mapping].memory_limit;
    let report = Symbolizer::new(Sources {
        root: None,
        debug_dirs: vec![debug_dir],
        ..Sources::default()
    })
    .symbolize(&mut request);
    assert_eq!(report.misses.get(&MissReason::AddressOutsideFile), Some(&1));
    assert_eq!(
        report.locations_symbolized as usize,
        frames.addresses.len() - 1
    );
}

/// `kernel` and nothing else, as the profiler writes them.
fn kernel_request(
    programs: &NativePrograms,
    kernel: &[KernelFrame],
) -> ExportProfilesServiceRequest {
    ebpf_profiler_native_request(&programs.pie, &[], kernel, &[])
}

/// The one line each location has, as (name, module), or `None` without
/// lines.
fn kernel_symbols(request: &ExportProfilesServiceRequest) -> Vec<Option<(String, Option<String>)>> {
    let dictionary = request.dictionary.as_ref().unwrap();
    dictionary
        .location_table
        .iter()
        .skip(1)
        .map(|location| {
            let lines = written_lines(dictionary, location);
            assert!(lines.len() <= 1, "{lines:?}");
            lines.first().map(|line| {
                // The profiler writes no system name.
                assert!(line.system_name == line.name || line.system_name.is_empty());
                assert_eq!((line.line, line.column), (0, 0));
                let module = line
                    .file
                    .strip_prefix('[')
                    .and_then(|m| m.strip_suffix(']'))
                    .map(ToOwned::to_owned);
                assert!(module.is_some() || line.file.is_empty(), "{}", line.file);
                (line.name.clone(), module)
            })
        })
        .collect()
}

#[test]
fn kernel_frames_resolve_from_proc_kallsyms_as_another_reader_says() {
    let kallsyms = Path::new("/proc/kallsyms");
    let purpose = "the kernel-frame test against /proc/kallsyms";
    let Some(programs) = native_programs(purpose) else {
        return;
    };
    let Some(answers) = kallsyms_oracle(kallsyms, 400, 11, purpose) else {
        return;
    };
    let frames: Vec<KernelFrame> = answers
        .iter()
        .map(|a| KernelFrame::Unnamed { address: a.address })
        .chain([KernelFrame::Named {
            function: "do_syscall_64".to_owned(),
            offset: 0x1a2b,
        }])
        .collect();
    let mut request = kernel_request(&programs, &frames);
    let named_before = request
        .dictionary
        .as_ref()
        .unwrap()
        .location_table
        .last()
        .cloned();
    let report = Symbolizer::new(Sources {
        root: None,
        debug_dirs: Vec::new(),
        kallsyms: Some(kallsyms.to_path_buf()),
        ..Sources::default()
    })
    .symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let expected: Vec<Option<(String, Option<String>)>> = answers
        .iter()
        .map(|KernelAnswer { symbol, .. }| symbol.clone())
        .chain([Some(("do_syscall_64".to_owned(), None))])
        .collect();
    assert_eq!(kernel_symbols(&request), expected);
    // The one below every function, and nothing else, is missed.
    assert_eq!(answers.iter().filter(|a| a.symbol.is_none()).count(), 1);
    assert_eq!(report.misses.get(&MissReason::NoSymbol), Some(&1));
    assert_eq!(report.locations_symbolized as usize, answers.len() - 1);
    // The frame the profiler named keeps its name and mapping.
    assert_eq!(
        request
            .dictionary
            .as_ref()
            .unwrap()
            .location_table
            .last()
            .cloned(),
        named_before
    );
}

const MADE_UP_KALLSYMS: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 D __init_begin_data
ffffffff81000100 T _stext
ffffffff81000100 t first_function
ffffffff81000200 T second_function
ffffffff81000300 W weak_function
ffffffff81000400 T _etext
ffffffff81000500 d some_data
ffffffffc0002000 t ext4_readdir\t[ext4]
ffffffffc0001000 t ext4_fill_super\t[ext4]
ffffffffc0010000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]
";

/// One location per (mapping, frame type, address), each with the
/// `profile.frame.type` it has, and what its line must say afterwards.
struct KernelCase {
    mapping: &'static str,
    frame_type: &'static str,
    address: u64,
    expected: Option<(&'static str, Option<&'static str>)>,
}

#[test]
fn kernel_frames_resolve_from_a_made_up_kallsyms_file() {
    let dir = TempDir::new("kallsyms-made-up");
    let kallsyms = dir.path().join("kallsyms");
    std::fs::write(&kallsyms, MADE_UP_KALLSYMS).unwrap();
    let cases = [
        // No mapping: the address as it is.
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_8100_00ff,
            expected: None,
        },
        // Several symbols at one address: the first listed.
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_8100_0100,
            expected: Some(("_stext", None)),
        },
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_8100_0250,
            expected: Some(("second_function", None)),
        },
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_8100_0301,
            expected: Some(("weak_function", None)),
        },
        // Modules' symbols, listed out of order, name their module.
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_c000_1fff,
            expected: Some(("ext4_fill_super", Some("ext4"))),
        },
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_c000_2010,
            expected: Some(("ext4_readdir", Some("ext4"))),
        },
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_c001_0040,
            expected: Some(("bpf_prog_6deef7357e7b4530_sd_fw_ingress", Some("bpf"))),
        },
        // perf_to_profile's kernel mappings, with no frame type: absolute.
        KernelCase {
            mapping: "[kernel.kallsyms]_text",
            frame_type: "",
            address: 0xffff_ffff_8100_0210,
            expected: Some(("second_function", None)),
        },
        KernelCase {
            mapping: "[kernel.kallsyms]",
            frame_type: "",
            address: 0xffff_ffff_c000_1000,
            expected: Some(("ext4_fill_super", Some("ext4"))),
        },
        // The eBPF profiler's vmlinux mapping: from the first function.
        KernelCase {
            mapping: "vmlinux",
            frame_type: "kernel",
            address: 0x100,
            expected: Some(("second_function", None)),
        },
        // Its module mappings count from where the module was loaded.
        KernelCase {
            mapping: "ext4",
            frame_type: "kernel",
            address: 0x10,
            expected: None,
        },
    ];
    let mut request = made_up_request(&cases);
    let report = Symbolizer::new(Sources {
        root: None,
        debug_dirs: Vec::new(),
        kallsyms: Some(kallsyms.clone()),
        ..Sources::default()
    })
    .symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let expected: Vec<Option<(String, Option<String>)>> = cases
        .iter()
        .map(|c| {
            c.expected
                .map(|(n, m)| (n.to_owned(), m.map(ToOwned::to_owned)))
        })
        .collect();
    assert_eq!(kernel_symbols(&request), expected);
    assert_eq!(report.misses.get(&MissReason::NoSymbol), Some(&1));
    assert_eq!(
        report.misses.get(&MissReason::KernelModuleRelative),
        Some(&1)
    );
    assert_eq!(report.locations_symbolized, 9);
    // The mappings that now name functions say so.
    let dictionary = request.dictionary.as_ref().unwrap();
    let text = |i: i32| dictionary.string_table[i as usize].as_str();
    for mapping in &dictionary.mapping_table[1..] {
        let flagged = mapping.attribute_indices.iter().any(|&i| {
            let a = &dictionary.attribute_table[i as usize];
            text(a.key_strindex) == HAS_FUNCTIONS && a.value == Some(bool_value(true))
        });
        assert_eq!(flagged, text(mapping.filename_strindex) != "ext4");
    }
}

/// A request of the cases' locations: each mapping once (`[kernel.kallsyms]…`
/// as perf_to_profile writes it, from the kernel's start to the top, the
/// others as the eBPF profiler writes them).
fn made_up_request(cases: &[KernelCase]) -> ExportProfilesServiceRequest {
    let mut request = ebpf_profiler_native_request(Path::new("/usr/bin/app"), &[], &[], &[]);
    let dictionary = request.dictionary.as_mut().unwrap();
    let mut string = |s: &str| {
        let table = &mut dictionary.string_table;
        table.iter().position(|t| t == s).unwrap_or_else(|| {
            table.push(s.to_owned());
            table.len() - 1
        }) as i32
    };
    let frame_type_key = string("profile.frame.type");
    let mut prepared = Vec::new();
    for case in cases {
        let name = string(case.mapping);
        let value = string(case.frame_type);
        prepared.push((case, name, value));
    }
    for (case, name, value) in prepared {
        let mapping_index = if case.mapping.is_empty() {
            0
        } else {
            let position = dictionary
                .mapping_table
                .iter()
                .position(|m| m.filename_strindex == name);
            position.unwrap_or_else(|| {
                let perf = case.mapping.starts_with("[kernel.kallsyms]");
                dictionary.mapping_table.push(Mapping {
                    memory_start: if perf { 0xffff_ffff_8100_0000 } else { 0 },
                    memory_limit: if perf { u64::MAX } else { 0 },
                    file_offset: if perf { 0xffff_ffff_8100_0000 } else { 0 },
                    filename_strindex: name,
                    attribute_indices: Vec::new(),
                });
                dictionary.mapping_table.len() - 1
            }) as i32
        };
        let attribute_indices = if case.frame_type.is_empty() {
            Vec::new()
        } else {
            dictionary.attribute_table.push(KeyValueAndUnit {
                key_strindex: frame_type_key,
                value: Some(profbridge_translate::otlp::string_value(
                    dictionary.string_table[value as usize].clone(),
                )),
                unit_strindex: 0,
            });
            vec![(dictionary.attribute_table.len() - 1) as i32]
        };
        dictionary.location_table.push(Location {
            mapping_index,
            address: case.address,
            lines: Vec::new(),
            attribute_indices,
        });
    }
    request
}

#[test]
fn unreadable_kernel_symbols_are_reported_once_and_counted() {
    let dir = TempDir::new("kallsyms-unreadable");
    let hidden = dir.path().join("kallsyms");
    std::fs::write(
        &hidden,
        "0000000000000000 T _stext\n0000000000000000 t first_function\n",
    )
    .unwrap();
    let cases = [
        KernelCase {
            mapping: "",
            frame_type: "kernel",
            address: 0xffff_ffff_8100_0100,
            expected: None,
        },
        KernelCase {
            mapping: "[kernel.kallsyms]_stext",
            frame_type: "",
            address: 0xffff_ffff_8100_0100,
            expected: None,
        },
    ];
    let kind = |error: &KallsymsError| match error {
        KallsymsError::AddressesHidden { .. } => "hidden",
        KallsymsError::Read { .. } => "read",
        _ => "other",
    };
    for (path, expected_kind) in [(hidden, "hidden"), (dir.path().join("missing"), "read")] {
        let mut symbolizer = Symbolizer::new(Sources {
            root: None,
            debug_dirs: Vec::new(),
            kallsyms: Some(path.clone()),
            ..Sources::default()
        });
        for time in 0..2 {
            let mut request = made_up_request(&cases);
            let untouched = request.clone();
            let report = symbolizer.symbolize(&mut request);
            assert_eq!(request, untouched);
            assert_eq!(report.misses.get(&MissReason::KallsymsUnreadable), Some(&2));
            let said: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
            if time == 0 {
                assert!(
                    matches!(&report.problems[..], [FileError::Kallsyms(e)] if kind(e) == expected_kind),
                    "{said:?}"
                );
                assert!(said[0].contains(&*path.to_string_lossy()), "{said:?}");
            } else {
                assert!(said.is_empty(), "reported once: {said:?}");
            }
        }
    }
    // Without kernel symbols to read, kernel frames are left alone.
    let mut request = made_up_request(&cases);
    let report = Symbolizer::new(Sources::default()).symbolize(&mut request);
    assert_eq!((report.left_alone, report.missed()), (2, 0));
}

/// Raw ELF notes as `/sys/kernel/notes` holds them: one GNU build id note
/// after a note of another kind (the kernel writes a Xen note first on some
/// builds).
fn kernel_notes_with(build_id: &[u8]) -> Vec<u8> {
    let mut notes = Vec::new();
    for (name, kind, desc) in [
        (&b"Xen\0"[..], 1u32, &[7u8; 6][..]),
        (b"GNU\0", 3, build_id),
    ] {
        for word in [name.len() as u32, desc.len() as u32, kind] {
            notes.extend(word.to_ne_bytes());
        }
        for part in [name, desc] {
            notes.extend(part);
            notes.resize(notes.len().next_multiple_of(4), 0);
        }
    }
    notes
}

#[test]
fn kernel_frames_of_another_kernel_are_left_as_addresses() {
    let dir = TempDir::new("kernel-notes");
    let kallsyms = dir.path().join("kallsyms");
    std::fs::write(
        &kallsyms,
        "ffffffff81000000 T _stext\nffffffff81000100 t first_function\n",
    )
    .unwrap();
    let running = [0x5au8; 20];
    let notes = dir.path().join("notes");
    std::fs::write(&notes, kernel_notes_with(&running)).unwrap();
    let case = [KernelCase {
        mapping: "[kernel.kallsyms]",
        frame_type: "",
        address: 0xffff_ffff_8100_0120,
        expected: Some(("first_function", None)),
    }];
    let sources = Sources {
        kallsyms: Some(kallsyms),
        kernel_notes: Some(notes),
        ..Sources::default()
    };
    let mapping = Path::new("[kernel.kallsyms]");
    // The running kernel's build id, none, and another kernel's.
    for (build_id, named) in [
        (Some(hex(&running)), true),
        (None, true),
        (Some(hex(&[0xa5; 20])), false),
    ] {
        let mut request = made_up_request(&case);
        if let Some(id) = &build_id {
            add_build_id(&mut request, mapping, id);
        }
        let report = Symbolizer::new(sources.clone()).symbolize(&mut request);
        let expected = named.then(|| ("first_function".to_owned(), None));
        assert_eq!(kernel_symbols(&request), [expected], "{build_id:?}");
        let other = report.misses.get(&MissReason::OtherKernel).copied();
        assert_eq!(other, (!named).then_some(1), "{build_id:?}: {report:?}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
