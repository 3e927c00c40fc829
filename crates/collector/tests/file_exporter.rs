//! The file and debug exporters: each format's files read back, path
//! templates expand, hostile attribute values stay inside the directory,
//! concurrent exports do not collide, retention removes the oldest files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message;

use profbridge_collector::config::units;
use profbridge_collector::exporters::debug::config::{DebugExporterConfig, Verbosity};
use profbridge_collector::exporters::debug::{summarize, DebugExporter};
use profbridge_collector::exporters::file::config::{FileExporterConfig, FileFormat, Retention};
use profbridge_collector::exporters::file::{FileExporter, SWEEP_EVERY_EXPORTS};
use profbridge_collector::exporters::{ExportCause, ExportError};
use profbridge_collector::pipeline::Profiles;
use profbridge_pprof::{canonical_diff, decode, parse_any, DecodeOptions};
use profbridge_testkit::{corpus_file, ebpf_like_request, TempDir};
use profbridge_translate::json::request_from_json;
use profbridge_translate::otlp::{
    int_value, key_value, string_value, ExportProfilesServiceRequest, Function, KeyValue,
    KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary, Resource,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use profbridge_translate::{
    otlp_to_pprof, otlp_to_unassembled_pprof, pprof_to_otlp, validate_request, PprofInput,
    ToOtlpOptions, ToPprofOptions,
};

/// 2026-11-21 06:15:00.123 UTC.
const RECEIVED_MS: u64 = 1_795_241_700_123;
const RECEIVED_TEXT: &str = "20261121T061500.123Z";

fn batch_at(request: ExportProfilesServiceRequest, millis: u64) -> Profiles {
    let encoded_size = request.encoded_len();
    let mut batch = Profiles::new(request, encoded_size);
    batch.received_at = UNIX_EPOCH + Duration::from_millis(millis);
    batch
}

fn batch(request: ExportProfilesServiceRequest) -> Profiles {
    batch_at(request, RECEIVED_MS)
}

fn config(root: &Path, format: FileFormat, template: Option<&str>) -> FileExporterConfig {
    FileExporterConfig {
        path: root.to_string_lossy().into_owned(),
        format,
        path_template: template.map(str::to_owned),
        ..FileExporterConfig::default()
    }
}

fn exporter(root: &Path, format: FileFormat, template: Option<&str>) -> FileExporter {
    FileExporter::new(&config(root, format, template)).unwrap()
}

/// Corpus files as one request, each under a resource with its service
/// name; `None` when the corpus is absent.
fn corpus_request(files: &[(&str, &str)]) -> Option<ExportProfilesServiceRequest> {
    let mut profiles = Vec::new();
    for (name, _) in files {
        let file = corpus_file(name)?;
        profiles.push(parse_any(&file.bytes, &DecodeOptions::default()).unwrap().0);
    }
    let resources: Vec<Vec<KeyValue>> = files
        .iter()
        .map(|(_, service)| vec![key_value("service.name", string_value(*service))])
        .collect();
    let inputs: Vec<PprofInput<'_>> = profiles
        .iter()
        .zip(&resources)
        .map(|(profile, resource_attributes)| PprofInput {
            profile,
            resource_attributes,
            scope: None,
            original_payload: None,
        })
        .collect();
    let converted = pprof_to_otlp(&inputs, &ToOtlpOptions::default());
    assert!(converted.rejected.is_empty(), "{:?}", converted.rejected);
    Some(converted.request)
}

/// A small request (one CPU sample of value `seed + 1`) whose resource
/// has these attributes: quick to write and read back many times, unlike
/// the eBPF-like one with its 20,000 locations.
fn request_with_resource(attributes: Vec<KeyValue>, seed: u64) -> ExportProfilesServiceRequest {
    let strings = ["", "cpu", "nanoseconds", "main", "main.c"];
    let dictionary = ProfilesDictionary {
        string_table: strings.iter().map(|s| (*s).to_owned()).collect(),
        mapping_table: vec![Mapping::default()],
        function_table: vec![
            Function::default(),
            Function {
                name_strindex: 3,
                system_name_strindex: 3,
                filename_strindex: 4,
                start_line: 1,
            },
        ],
        location_table: vec![
            Location::default(),
            Location {
                address: 0x1000,
                lines: vec![Line {
                    function_index: 1,
                    line: 7,
                    column: 0,
                }],
                ..Location::default()
            },
        ],
        link_table: vec![Link::default()],
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![
            Stack::default(),
            Stack {
                location_indices: vec![1],
            },
        ],
    };
    let cpu_nanoseconds = ValueType {
        type_strindex: 1,
        unit_strindex: 2,
    };
    let profile = Profile {
        sample_type: Some(cpu_nanoseconds),
        samples: vec![Sample {
            stack_index: 1,
            values: vec![seed as i64 + 1],
            ..Sample::default()
        }],
        time_unix_nano: 1_700_000_000_000_000_000,
        duration_nano: 10_000_000_000,
        period_type: Some(cpu_nanoseconds),
        period: 10_000_000,
        ..Profile::default()
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes,
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                profiles: vec![profile],
                ..ScopeProfiles::default()
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dictionary),
    }
}

fn small_request(seed: u64) -> ExportProfilesServiceRequest {
    request_with_resource(
        vec![key_value("service.name", string_value("checkout"))],
        seed,
    )
}

/// Every file under `root`, hidden ones too, relative to it, sorted.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            assert!(!kind.is_symlink(), "{}", entry.path().display());
            if kind.is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path().strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

/// Every component is a plain, visible name of safe characters: nothing
/// escaped, no odd names, no temporary files left.
fn assert_sane_names(root: &Path) {
    for file in files_under(root) {
        for component in file.components() {
            let name = component.as_os_str().to_str().unwrap();
            assert!(
                !name.starts_with(".profbridge-"),
                "a temporary file was left: {}",
                file.display()
            );
            assert!(
                !name.is_empty()
                    && !name.starts_with('.')
                    && name.len() <= 255
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "odd name {name:?} in {}",
                file.display()
            );
        }
    }
}

fn relative(exporter: &FileExporter, paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|path| {
            assert!(path.starts_with(exporter.root()), "{}", path.display());
            path.strip_prefix(exporter.root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn the_exporter_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<FileExporter>();
    shareable::<DebugExporter>();
}

#[test]
fn pprof_files_are_what_otlp_to_pprof_gives() {
    let Some(request) = corpus_request(&[("large.cpu", "checkout"), ("cppbench.heap", "cart")])
    else {
        return; // corpus absent: corpus_dir() said so.
    };
    let dir = TempDir::new("file-exporter-pprof");
    let exporter = exporter(dir.path(), FileFormat::Pprof, None);
    let report = exporter.export(&batch(request.clone())).unwrap();

    assert_eq!(
        relative(&exporter, &report.files),
        [
            format!("checkout/cpu/{RECEIVED_TEXT}-000000.pb.gz"),
            format!("cart/space/{RECEIVED_TEXT}-000001.pb.gz"),
        ]
    );
    assert_eq!(report.profiles, 2);
    let expected = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    assert_eq!(expected.profiles.len(), report.files.len());
    for (path, output) in report.files.iter().zip(&expected.profiles) {
        let bytes = std::fs::read(path).unwrap();
        assert!(profbridge_pprof::is_gzip(&bytes), "{}", path.display());
        let written = decode(&bytes, &DecodeOptions::default()).unwrap();
        assert_eq!(
            canonical_diff(&written, &output.profile).unwrap(),
            None,
            "{}",
            path.display()
        );
    }
    assert_sane_names(exporter.root());
}

/// `gzip_level` trades bytes for CPU; every level writes the same profile.
#[test]
fn gzip_level_sets_how_hard_pprof_files_are_compressed() {
    let request = ebpf_like_request(200, 5);
    let expected = otlp_to_pprof(&request, &ToPprofOptions::default()).unwrap();
    let mut sizes = Vec::new();
    for level in [0, 1, 9] {
        let dir = TempDir::new("file-exporter-gzip-level");
        let exporter = FileExporter::new(&FileExporterConfig {
            gzip_level: level,
            ..config(dir.path(), FileFormat::Pprof, None)
        })
        .unwrap();
        let report = exporter.export(&batch(request.clone())).unwrap();
        let [path] = &report.files[..] else {
            panic!("one file expected: {:?}", report.files);
        };
        let bytes = std::fs::read(path).unwrap();
        assert!(profbridge_pprof::is_gzip(&bytes), "level {level}");
        let written = decode(&bytes, &DecodeOptions::default()).unwrap();
        assert_eq!(
            canonical_diff(&written, &expected.profiles[0].profile).unwrap(),
            None
        );
        sizes.push(bytes.len());
    }
    assert!(
        sizes[0] > sizes[1] && sizes[1] > sizes[2],
        "stored > level 1 > level 9: {sizes:?}"
    );
}

#[test]
fn otlp_files_hold_one_request_each() {
    let dir = TempDir::new("file-exporter-otlp");
    let exporter = exporter(dir.path(), FileFormat::Otlp, None);
    let first = ebpf_like_request(20, 1);
    let second = ebpf_like_request(20, 2);
    let a = exporter.export(&batch(first.clone())).unwrap();
    let b = exporter
        .export(&batch_at(second.clone(), RECEIVED_MS + 1))
        .unwrap();

    assert_eq!(
        relative(&exporter, &[a.files.clone(), b.files.clone()].concat()),
        [
            format!("checkout/{RECEIVED_TEXT}-000000.otlp.pb"),
            "checkout/20261121T061500.124Z-000001.otlp.pb".to_owned(),
        ]
    );
    assert_eq!(a.profiles, 1);
    for (path, request) in [(&a.files[0], first), (&b.files[0], second)] {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(
            ExportProfilesServiceRequest::decode(&bytes[..]).unwrap(),
            request
        );
    }
    assert_eq!(files_under(exporter.root()).len(), 2);
    assert_sane_names(exporter.root());
}

#[test]
fn otlp_json_appends_one_request_per_line() {
    let Some(corpus) = corpus_request(&[("cppbench.heap", "checkout")]) else {
        return;
    };
    let dir = TempDir::new("file-exporter-json");
    let exporter = exporter(dir.path(), FileFormat::OtlpJson, None);
    let requests = [ebpf_like_request(15, 3), corpus, ebpf_like_request(15, 4)];
    for request in &requests {
        let report = exporter.export(&batch(request.clone())).unwrap();
        assert_eq!(
            relative(&exporter, &report.files),
            ["checkout/profiles.jsonl"]
        );
    }

    let text = std::fs::read_to_string(exporter.root().join("checkout/profiles.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), requests.len());
    assert!(text.ends_with('\n'));
    for (line, request) in lines.iter().zip(&requests) {
        let read = request_from_json(line.as_bytes()).unwrap();
        assert!(profbridge_translate::canonical::canonical_eq(
            &read, request
        ));
    }
    assert_sane_names(exporter.root());
}

#[test]
fn templates_expand_attributes_profile_type_time_and_seq() {
    let dir = TempDir::new("file-exporter-template");
    let template =
        "{deployment.environment}/{service.name}-{profile_type}/{pid}/{nope}/{time}_{seq}.bin";
    let exporter = exporter(dir.path(), FileFormat::Otlp, Some(template));
    let request = request_with_resource(
        vec![
            key_value("service.name", string_value("checkout")),
            key_value("deployment.environment", string_value("prod")),
            key_value("pid", int_value(4242)),
        ],
        5,
    );
    let report = exporter.export(&batch(request)).unwrap();
    assert_eq!(
        relative(&exporter, &report.files),
        [format!(
            "prod/checkout-cpu/4242/unknown/{RECEIVED_TEXT}_000000.bin"
        )]
    );

    let pprof = self::exporter(
        &dir.path().join("pprof"),
        FileFormat::Pprof,
        Some("{profile_type}.{service.name}.{seq}.pb.gz"),
    );
    let report = pprof.export(&batch(small_request(6))).unwrap();
    assert_eq!(
        relative(&pprof, &report.files),
        ["cpu.checkout.000000.pb.gz"]
    );
}

#[test]
fn fsync_writes_read_back_too() {
    let dir = TempDir::new("file-exporter-fsync");
    for format in [FileFormat::Pprof, FileFormat::Otlp, FileFormat::OtlpJson] {
        let exporter = FileExporter::new(&FileExporterConfig {
            fsync: true,
            ..config(&dir.path().join(format!("{format:?}")), format, None)
        })
        .unwrap();
        let report = exporter.export(&batch(small_request(1))).unwrap();
        assert_eq!(report.files.len(), 1);
        assert!(!std::fs::read(&report.files[0]).unwrap().is_empty());
        assert_sane_names(exporter.root());
    }
}

#[test]
fn a_request_without_profiles_writes_nothing() {
    let dir = TempDir::new("file-exporter-empty");
    for format in [FileFormat::Pprof, FileFormat::Otlp, FileFormat::OtlpJson] {
        let exporter = exporter(dir.path(), format, None);
        let report = exporter
            .export(&batch(ExportProfilesServiceRequest::default()))
            .unwrap();
        assert!(report.files.is_empty());
        assert_eq!(report.profiles, 0);
    }
    assert!(files_under(dir.path()).is_empty());
}

const HOSTILE_VALUES: [&str; 12] = [
    "../../etc/passwd",
    "/abs/path",
    "a\\b",
    "\n\t\0",
    "..",
    ".",
    "",
    "...",
    ".hidden",
    "サービス名",
    "C:\\Windows\\system32",
    "ok/../../..",
];

/// A request whose service name, other attribute and sample type are all
/// `value`.
fn hostile_request(value: &str, seed: u64) -> ExportProfilesServiceRequest {
    let mut request = request_with_resource(
        vec![
            key_value("service.name", string_value(value)),
            key_value("host.name", string_value(value)),
        ],
        seed,
    );
    let strings = &mut request.dictionary.as_mut().unwrap().string_table;
    let cpu = strings.iter().position(|s| s == "cpu").unwrap();
    strings[cpu] = value.to_owned();
    request
}

#[test]
fn hostile_attribute_values_stay_inside_the_directory_with_sane_names() {
    let dir = TempDir::new("file-exporter-hostile");
    let root = dir.path().join("root");
    let long = "x/".repeat(5_000);
    let values: Vec<&str> = HOSTILE_VALUES
        .iter()
        .copied()
        .chain([long.as_str()])
        .collect();
    let formats = [
        (FileFormat::Pprof, None),
        (FileFormat::Otlp, None),
        (FileFormat::OtlpJson, None),
        (
            FileFormat::Otlp,
            Some("{host.name}/{profile_type}/{service.name}-{seq}"),
        ),
    ];
    let mut written = 0;
    for (format, template) in formats {
        let exporter = exporter(&root, format, template);
        for (seed, value) in values.iter().enumerate() {
            let report = exporter
                .export(&batch(hostile_request(value, seed as u64)))
                .unwrap_or_else(|e| panic!("{value:?}: {e}"));
            assert_eq!(report.files.len(), 1, "{value:?}");
            for path in &report.files {
                assert!(path.starts_with(exporter.root()), "{}", path.display());
                assert!(path.is_file(), "{}", path.display());
            }
            written += 1;
        }
    }
    assert!(written > 0);
    let beside_root: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside_root,
        ["root"],
        "something was written outside the root"
    );
    assert_sane_names(&root);
    assert!(!root.join("..").join("etc").exists());
}

#[test]
fn long_values_are_cut_and_stay_distinct() {
    let dir = TempDir::new("file-exporter-long");
    let exporter = exporter(
        dir.path(),
        FileFormat::Otlp,
        Some("{service.name}/{seq}.pb"),
    );
    let a = format!("{}a", "s".repeat(10_000));
    let b = format!("{}b", "s".repeat(10_000));
    let mut directories = Vec::new();
    for (seed, value) in [a, b].iter().enumerate() {
        let request = request_with_resource(
            vec![key_value("service.name", string_value(value))],
            seed as u64,
        );
        let report = exporter.export(&batch(request)).unwrap();
        let name = relative(&exporter, &report.files)[0].clone();
        let directory = name.split('/').next().unwrap().to_owned();
        assert!(directory.len() <= 100, "{} bytes", directory.len());
        assert!(directory.starts_with("sss"));
        directories.push(directory);
    }
    assert_ne!(directories[0], directories[1]);
    assert_sane_names(exporter.root());
}

#[test]
fn unsafe_templates_are_rejected() {
    let dir = TempDir::new("file-exporter-bad-template");
    for template in [
        "../{seq}.pb",
        "a/../../{seq}.pb",
        "..",
        "/etc/{seq}.pb",
        "./{seq}.pb",
        "a//{seq}.pb",
        "a/",
        "{service.name",
        "{service.name}/{seq.pb",
        "a\\..\\{seq}.pb",
        "",
    ] {
        let result = FileExporter::new(&config(dir.path(), FileFormat::Otlp, Some(template)));
        assert!(
            matches!(result, Err(ExportError::Permanent(_))),
            "{template:?} was accepted"
        );
    }
    assert!(FileExporter::new(&config(
        dir.path(),
        FileFormat::Otlp,
        Some("a..b/{seq}..pb")
    ))
    .is_ok());
}

#[test]
fn concurrent_exports_write_distinct_files_and_whole_lines() {
    let dir = TempDir::new("file-exporter-threads");
    const THREADS: u64 = 8;
    const EACH: u64 = 10;
    for format in [FileFormat::Otlp, FileFormat::OtlpJson, FileFormat::Pprof] {
        let exporter = Arc::new(exporter(
            &dir.path().join(format!("{format:?}")),
            format,
            None,
        ));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let exporter = Arc::clone(&exporter);
                std::thread::spawn(move || {
                    (0..EACH)
                        .flat_map(|i| {
                            let request = small_request(t * 100 + i);
                            exporter.export(&batch(request)).unwrap().files
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut files: Vec<PathBuf> = threads
            .into_iter()
            .flat_map(|thread| thread.join().unwrap())
            .collect();
        let total = (THREADS * EACH) as usize;
        assert_eq!(files.len(), total);
        files.sort();
        files.dedup();
        match format {
            FileFormat::OtlpJson => {
                assert_eq!(files.len(), 1);
                let text = std::fs::read_to_string(&files[0]).unwrap();
                assert_eq!(text.lines().count(), total);
                for line in text.lines() {
                    request_from_json(line.as_bytes()).unwrap();
                }
            }
            FileFormat::Otlp => {
                assert_eq!(files.len(), total, "{format:?} files collided");
                for file in &files {
                    ExportProfilesServiceRequest::decode(&std::fs::read(file).unwrap()[..])
                        .unwrap();
                }
            }
            FileFormat::Pprof => {
                assert_eq!(files.len(), total, "{format:?} files collided");
                for file in &files {
                    decode(&std::fs::read(file).unwrap(), &DecodeOptions::default()).unwrap();
                }
            }
        }
        assert_eq!(files_under(exporter.root()).len(), files.len());
        assert_sane_names(exporter.root());
    }
}

fn retention_config(root: &Path, retention: Retention) -> FileExporterConfig {
    FileExporterConfig {
        retention,
        ..config(
            root,
            FileFormat::Otlp,
            Some("{service.name}/{time}-{seq}.otlp.pb"),
        )
    }
}

/// Exports the `i`-th request, received `i` seconds after the others.
fn export_numbered(exporter: &FileExporter, i: u64) -> Vec<PathBuf> {
    let request = small_request(i);
    exporter
        .export(&batch_at(request, RECEIVED_MS + i * 1000))
        .unwrap()
        .files
}

fn names_under(root: &Path) -> Vec<String> {
    files_under(root)
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

fn newest_three(exporter: &FileExporter, written: &[PathBuf]) -> Vec<String> {
    relative(exporter, &written[written.len() - 3..])
}

#[test]
fn retention_by_count_removes_the_oldest_files() {
    let dir = TempDir::new("file-exporter-retention");
    let exporter = FileExporter::new(&retention_config(
        dir.path(),
        Retention {
            max_files: Some(3),
            max_age: None,
        },
    ))
    .unwrap();
    let mut written = Vec::new();
    for i in 0..5 {
        written.extend(export_numbered(&exporter, i));
    }
    // The first export swept (with one file); the next sweep is due later.
    assert_eq!(files_under(exporter.root()).len(), 5);
    assert_eq!(exporter.enforce_retention().unwrap(), 2);
    assert_eq!(
        names_under(exporter.root()),
        newest_three(&exporter, &written)
    );

    // Exports go on; the sweep every SWEEP_EVERY_EXPORTS exports keeps the count.
    for i in 5..=SWEEP_EVERY_EXPORTS {
        written.extend(export_numbered(&exporter, i));
    }
    assert_eq!(
        names_under(exporter.root()),
        newest_three(&exporter, &written)
    );
    assert_sane_names(exporter.root());
}

#[test]
fn retention_by_age_removes_old_files_and_keeps_directories() {
    let dir = TempDir::new("file-exporter-age");
    let exporter = FileExporter::new(&retention_config(
        dir.path(),
        Retention {
            max_files: None,
            max_age: Some(units::Duration::from_secs(3600)),
        },
    ))
    .unwrap();
    let old = exporter.root().join("checkout/old.otlp.pb");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, b"old").unwrap();
    let file = std::fs::File::options().write(true).open(&old).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    drop(file);

    let report = exporter.export(&batch(small_request(9))).unwrap();
    assert!(!old.exists(), "an old file was kept");
    assert!(report.files[0].is_file(), "a new file was removed");
    assert!(exporter.root().join("checkout").is_dir());
}

#[test]
fn io_failures_are_retryable_and_bad_requests_permanent() {
    let dir = TempDir::new("file-exporter-errors");
    let exporter = exporter(dir.path(), FileFormat::Pprof, None);
    // A file where the exporter needs a directory.
    std::fs::write(exporter.root().join("checkout"), b"in the way").unwrap();
    match exporter.export(&batch(ebpf_like_request(5, 10))) {
        Err(ExportError::Retryable { cause, .. }) => {
            assert!(matches!(cause, ExportCause::Io { .. }), "{cause:?}");
            let reason = cause.to_string();
            assert!(reason.contains("checkout"), "{reason}")
        }
        other => panic!("expected a retryable error, got {other:?}"),
    }

    let mut broken = ebpf_like_request(5, 11);
    broken.dictionary = None;
    match exporter.export(&batch(broken)) {
        Err(ExportError::Permanent(cause)) => {
            assert!(matches!(cause, ExportCause::ToPprof(_)), "{cause:?}");
            let message = cause.to_string();
            assert!(message.contains("pprof"), "{message}")
        }
        other => panic!("expected a permanent error, got {other:?}"),
    }
    assert_sane_names(exporter.root());
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn validated_batch(request: ExportProfilesServiceRequest) -> Profiles {
    let validation = validate_request(&request).unwrap();
    Profiles::validated(request, 100, validation)
}

/// The exporter converts in memory it keeps between exports and skips
/// validating batches a receiver validated; neither changes a byte.
#[test]
fn reused_memory_and_validated_batches_write_the_bytes_of_a_fresh_conversion() {
    let dir = TempDir::new("file-exporter-reuse");
    let exporter = exporter(dir.path(), FileFormat::Pprof, Some("{seq}.pb.gz"));
    let tree = profbridge_testkit::profiler_like_request(300, 1);
    let requests = [
        tree.clone(),
        ebpf_like_request(200, 2),
        small_request(3),
        corpus_request(&[("large.cpu", "checkout"), ("cppbench.heap", "cart")])
            .unwrap_or_else(|| small_request(4)),
        tree,
    ];
    for request in requests {
        let expected: Vec<Vec<u8>> =
            otlp_to_unassembled_pprof(&request, &ToPprofOptions::default())
                .unwrap()
                .profiles
                .iter()
                .map(|output| output.profile.encode())
                .collect();
        for batch in [batch(request.clone()), validated_batch(request)] {
            let report = exporter.export(&batch).unwrap();
            let written: Vec<Vec<u8>> = report
                .files
                .iter()
                .map(|path| gunzip(&std::fs::read(path).unwrap()))
                .collect();
            assert!(written == expected, "the bytes written differ");
        }
    }
}

/// A profile whose sample names a stack the dictionary does not have.
fn with_an_invalid_profile(seed: u64) -> ExportProfilesServiceRequest {
    let mut request = ebpf_like_request(5, seed);
    request.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index = 1 << 30;
    request
}

fn permanent_error(exporter: &FileExporter, batch: &Profiles) -> String {
    match exporter.export(batch) {
        Err(ExportError::Permanent(cause)) => cause.to_string(),
        other => panic!("expected a permanent error, got {other:?}"),
    }
}

/// Only a batch that carries the validation of its request as it is skips
/// validation: any other batch gets the errors a fresh conversion gives.
#[test]
fn batches_not_known_valid_are_validated_by_the_exporter() {
    let dir = TempDir::new("file-exporter-validation");
    let exporter = exporter(dir.path(), FileFormat::Pprof, None);
    let mut no_dictionary = ebpf_like_request(5, 11);
    no_dictionary.dictionary = None;
    let error = validate_request(&no_dictionary).unwrap_err();
    let expected = format!("cannot convert to pprof: {error}");
    assert_eq!(permanent_error(&exporter, &batch(no_dictionary)), expected);

    // Validated, then changed (as a processor changes it).
    let mut changed = validated_batch(ebpf_like_request(5, 12));
    changed.request_mut().dictionary = None;
    assert_eq!(permanent_error(&exporter, &changed), expected);

    let invalid = with_an_invalid_profile(13);
    let (at, reason) = validate_request(&invalid).unwrap().invalid.remove(0);
    let expected = format!("cannot convert to pprof: {at:?}: {reason}");
    assert_eq!(permanent_error(&exporter, &batch(invalid)), expected);
    let mut changed = validated_batch(ebpf_like_request(5, 13));
    *changed.request_mut() = with_an_invalid_profile(13);
    assert_eq!(permanent_error(&exporter, &changed), expected);
    assert!(files_under(exporter.root()).is_empty());
}

#[test]
fn debug_summary_grows_with_verbosity() {
    let request = ebpf_like_request(4, 12);
    let batch = batch(request.clone());
    let profile = &request.resource_profiles[0].scope_profiles[0].profiles[0];
    let total: i64 = profile.samples.iter().flat_map(|s| &s.values).sum();

    let basic = summarize(&batch, Verbosity::Basic);
    assert_eq!(
        basic,
        [format!(
            "profiles request: 1 resources, 1 profiles, 4 samples, {} bytes",
            batch.encoded_size
        )]
    );

    let normal = summarize(&batch, Verbosity::Normal);
    assert_eq!(normal.len(), 2);
    assert_eq!(normal[0], basic[0]);
    assert_eq!(
        normal[1],
        format!(
            "resource 0, scope 0, profile 0: service.name=\"checkout\" sample_type=cpu/nanoseconds samples=4 total={total}"
        )
    );

    let detailed = summarize(&batch, Verbosity::Detailed);
    assert_eq!(detailed.len(), 2 + 4);
    assert_eq!(detailed[..2], normal[..]);
    let dictionary = request.dictionary.as_ref().unwrap();
    for (line, sample) in detailed[2..].iter().zip(&profile.samples) {
        let depth = dictionary.stack_table[sample.stack_index as usize]
            .location_indices
            .len();
        let value: i64 = sample.values.iter().sum();
        assert!(
            line.ends_with(&format!(
                "depth={depth} value={value} attributes={}",
                sample.attribute_indices.len()
            )),
            "{line}"
        );
    }

    let exporter = DebugExporter::new(&DebugExporterConfig {
        verbosity: Verbosity::Detailed,
        ..DebugExporterConfig::default()
    });
    exporter.export(&batch).unwrap();
}
