//! `profbridge symbolize`, end to end on the built binary: gperftools CPU
//! profiles of optimized C++ (crates/testkit/src/native.rs), every location
//! of our program and shared library compared with `llvm-symbolizer --inlines`;
//! and `profbridge serve` with the `symbolize` processor on a request
//! shaped as the OpenTelemetry eBPF profiler writes it, read back by
//! Python's opentelemetry-proto.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use profbridge_pprof::{parse_any, DecodeOptions};
use profbridge_testkit::ebpf_profiler::{
    base_name, ebpf_profiler_native_request, python_decoded_locations, DecodedLocation,
    InterpretedFrame, KernelFrame, NativeFrames,
};
use profbridge_testkit::kernel::kallsyms_oracle;
use profbridge_testkit::native::{
    assert_frames_match_oracle, assert_matches_oracle, gperftools_cpu_profile_of, locations_of,
    native_programs, split_into_build_id_tree, truncated_copy, under,
};
use profbridge_testkit::{files_under, venv_python, TempDir};
use profbridge_translate::otlp::{int_value, key_value, ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};
use prost::Message;

use crate::support::collector::Collector;

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
    pprof_bytes_as_request(&std::fs::read(path).unwrap(), &[])
}

/// A pprof profile (or a legacy one, such as gperftools'), as OTLP with
/// these resource attributes.
pub(crate) fn pprof_bytes_as_request(
    bytes: &[u8],
    resource_attributes: &[KeyValue],
) -> ExportProfilesServiceRequest {
    let (profile, _) = parse_any(bytes, &DecodeOptions::default()).unwrap();
    pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes,
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
fn symbolize_opens_each_process_files_in_its_root_with_process_roots() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    // A /proc of our own, where process 4242's root holds the program and
    // the library at their paths; the --root is empty.
    let dir = TempDir::new("cli-symbolize-process-roots");
    let proc = dir.path().join("proc");
    for file in [&programs.pie, &programs.library] {
        let copy = under(&proc.join("4242").join("root"), file);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(file, &copy).unwrap();
    }
    let request = pprof_bytes_as_request(
        &gperftools_cpu_profile_of(&programs.pie, dir.path()),
        &[key_value("process.pid", int_value(4242))],
    );
    let sent = dir.path().join("sent.otlp.pb");
    std::fs::write(&sent, request.encode_to_vec()).unwrap();
    let out = dir.path().join("out.otlp.pb");
    let empty_root = dir.path().join("empty-root");
    let run = profbridge(&[
        &sent,
        Path::new("-o"),
        &out,
        Path::new("--root"),
        &empty_root,
        Path::new("--process-roots"),
        &proc,
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let written = ExportProfilesServiceRequest::decode(&*std::fs::read(&out).unwrap()).unwrap();
    let (compared, inlined) = assert_matches_oracle(&written, &programs.pie, &programs.pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let (in_library, _) = assert_matches_oracle(&written, &programs.library, &programs.library);
    assert!(in_library >= 1);
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

fn grpc_export(address: SocketAddr, request: ExportProfilesServiceRequest) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = ProfilesServiceClient::connect(format!("http://{address}"))
            .await
            .unwrap();
        let response = client.export(request).await.unwrap().into_inner();
        assert_eq!(response.partial_success, None);
    });
}

/// The (ELF address, lines) of `file`'s locations, which the eBPF profiler
/// names by base name.
fn ebpf_frames_of(
    locations: &[DecodedLocation],
    file: &Path,
) -> Vec<(u64, Vec<profbridge_testkit::native::Written>)> {
    let name = base_name(file);
    locations
        .iter()
        .filter(|l| l.mapping_filename == name)
        .map(|l| (l.address, l.lines.clone()))
        .collect()
}

/// `profbridge serve` with an OTLP receiver, the `symbolize` processor
/// (debug files by build id, /proc/kallsyms) and a file exporter writing
/// OTLP gets an eBPF-profiler request of our PIE program and library,
/// kernel frames and interpreted frames. Python's opentelemetry-proto
/// reads what it writes: native frames as llvm-symbolizer gives them,
/// kernel frames as a separate reader of /proc/kallsyms names them, every
/// frame type and every other frame as sent. `profbridge symbolize` with
/// the same sources writes the same.
#[test]
fn serve_symbolizes_an_ebpf_profiler_request_as_the_oracles_do() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let Some(python) = venv_python(
        "opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2",
        "opentelemetry-proto",
        PURPOSE,
    ) else {
        return;
    };
    let kallsyms = Path::new("/proc/kallsyms");
    // None (said loudly) when the kernel hides its addresses here.
    let kernel_answers = kallsyms_oracle(kallsyms, 40, 3, PURPOSE).unwrap_or_default();
    let dir = TempDir::new("serve-symbolize-ebpf");
    let debug_dir = dir.path().join("debug");
    for file in [&programs.pie, &programs.library] {
        // The stripped files are not given to the collector.
        split_into_build_id_tree(file, &dir.path().join("stripped"), &debug_dir);
    }
    let sampled = pprof_as_request(&{
        let profile = dir.path().join("cpu.prof");
        std::fs::write(
            &profile,
            gperftools_cpu_profile_of(&programs.pie, dir.path()),
        )
        .unwrap();
        profile
    });
    let native: Vec<NativeFrames> = [&programs.pie, &programs.library]
        .into_iter()
        .map(|file| NativeFrames {
            file: file.clone(),
            addresses: locations_of(&sampled, file)
                .into_iter()
                .map(|(a, _)| a)
                .collect(),
        })
        .collect();
    let kernel: Vec<KernelFrame> = kernel_answers
        .iter()
        .map(|a| KernelFrame::Unnamed { address: a.address })
        .chain([KernelFrame::Named {
            function: "do_syscall_64".to_owned(),
            offset: 0x1a2b,
        }])
        .collect();
    let interpreted = [
        ("cpython", Some(("handle", "/srv/app/views.py", 42))),
        ("cpython", None),
        ("jvm", Some(("com.example.Main.run", "Main.java", 17))),
    ]
    .map(|(frame_type, function)| InterpretedFrame {
        frame_type: frame_type.to_owned(),
        function: function.map(|(n, f, l): (&str, &str, i64)| (n.to_owned(), f.to_owned(), l)),
    });
    let request = ebpf_profiler_native_request(&programs.pie, &native, &kernel, &interpreted);
    let sent_file = dir.path().join("sent.otlp.pb");
    std::fs::write(&sent_file, request.encode_to_vec()).unwrap();
    let sent = python_decoded_locations(&python, &sent_file);

    let config = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  symbolize:\n    root: /\n    debug_directories: [{}]\n    kallsyms: {}\n    timeout: 0s\n\
         exporters:\n  file:\n    path: {{data}}\n    format: otlp\n\
         service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      processors: [symbolize]\n      exporters: [file]\n  telemetry:\n    metrics:\n      address: \"\"\n",
        debug_dir.display(),
        kallsyms.display(),
    );
    let collector = Collector::start("serve-symbolize-ebpf", &config);
    let data = collector.data.clone();
    grpc_export(collector.grpc.unwrap(), request);
    // Shutting down writes everything accepted.
    let (status, _collector_dir) = collector.terminate();
    assert!(status.success(), "{status}");
    let written = files_under(&data, ".pb");
    assert_eq!(written.len(), 1, "{written:?}");
    let received = python_decoded_locations(&python, &written[0]);

    assert_eq!(received.len(), sent.len());
    for (sent, received) in sent.iter().zip(&received) {
        assert_eq!(
            (&sent.mapping_filename, sent.address, &sent.frame_type),
            (
                &received.mapping_filename,
                received.address,
                &received.frame_type
            ),
        );
        match sent.frame_type.as_str() {
            "native" => assert!(!received.lines.is_empty(), "{received:?}"),
            "kernel" if sent.lines.is_empty() => {}
            _ => assert_eq!(sent, received, "not native: as sent"),
        }
    }
    let (pie, library) = (&programs.pie, &programs.library);
    let (compared, inlined) = assert_frames_match_oracle(&ebpf_frames_of(&received, pie), pie, pie);
    assert!(compared >= 3 && inlined >= 1, "{compared} {inlined}");
    let (in_library, _) =
        assert_frames_match_oracle(&ebpf_frames_of(&received, library), library, library);
    assert!(in_library >= 1);
    let named: Vec<Option<(String, Option<String>)>> = received
        .iter()
        .filter(|l| l.frame_type == "kernel" && l.mapping_filename.is_empty())
        .map(|l| {
            l.lines.first().map(|line| {
                let module = line
                    .file
                    .strip_prefix('[')
                    .and_then(|m| m.strip_suffix(']'));
                (line.name.clone(), module.map(ToOwned::to_owned))
            })
        })
        .collect();
    let expected: Vec<_> = kernel_answers.iter().map(|a| a.symbol.clone()).collect();
    assert_eq!(named, expected);

    // The command line, from the same sources, writes the same.
    let out = dir.path().join("cli.otlp.pb");
    let run = Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .arg("symbolize")
        .arg(&sent_file)
        .args([Path::new("-o"), &out, Path::new("--debug-dir"), &debug_dir])
        .arg("--kallsyms")
        .arg(kallsyms)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(python_decoded_locations(&python, &out), received);
}
