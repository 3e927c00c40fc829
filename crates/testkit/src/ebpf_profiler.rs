//! OTLP requests shaped exactly as the OpenTelemetry eBPF profiler writes
//! them, for native code we built (crates/testkit/src/native.rs), and
//! Python's opentelemetry-proto to read requests back independently.
//!
//! What the profiler writes, from open-telemetry/opentelemetry-ebpf-profiler
//! at b442421a (2026-08-21):
//!
//! - reporter/internal/pdata/generate.go: a mapping per (file, start, end,
//!   offset), shared by every process, with `memory_start`, `memory_limit`
//!   and `file_offset` from libpf.FrameMappingData, the file name, and the
//!   attributes `process.executable.build_id.gnu` (hex), `.go` and
//!   `.htlhash` (its 128-bit file id, 32 hex digits), each only when not
//!   empty; a location's `address` is libpf.Frame.AddressOrLineno, its
//!   frame type a `profile.frame.type` location attribute (libpf/
//!   interpretertype.go: `native`, `kernel`, `cpython`, `jvm`, `php`,
//!   `ruby`, `perl`, `v8js`, `dotnet`, `beam`, `luajit`, `go`, and
//!   `abort-marker`); a frame with a function or a file gets one line
//!   (function name and file name only, no system name); `process.pid`,
//!   `process.executable.path` and `.name` are resource attributes.
//! - processmanager/processinfo.go: the file name is the base name of the
//!   mapped path (`path.Base`); start is the ELF virtual address of the
//!   mapping's file offset (libpf/pfelf/addressmapper.go, over the
//!   executable PT_LOAD segments, offsets page-aligned), end is start plus
//!   the mapping's length: the mapping is in the file's address space.
//! - processmanager/manager.go and support/ebpf: a native frame's address
//!   is `pc - bias`, the ELF virtual address, minus one for return
//!   addresses; no lines.
//! - processmanager/kernelsymbolization.go (since #1629): kernel frames are
//!   named by the profiler from /proc/kallsyms; their mapping is the
//!   module's (`vmlinux` or the module's name, start, end and offset 0,
//!   the kernel's GNU build id from /sys/kernel/notes) and the address is
//!   `pc - 1 - module start`. An address in no module keeps `pc - 1`, no
//!   mapping and no function.
//! - An interpreted frame the profiler could not symbolize has only its
//!   type: address 0, no mapping, no lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::native::{build_id, load_segments, written_lines, Written};

/// A native file and ELF addresses in its code, as the profiler's frames
/// hold them.
#[derive(Debug, Clone)]
pub struct NativeFrames {
    pub file: PathBuf,
    pub addresses: Vec<u64>,
}

/// A kernel frame.
#[derive(Debug, Clone)]
pub enum KernelFrame {
    /// Named by the profiler: in the `vmlinux` mapping, `offset` from the
    /// kernel's start.
    Named { function: String, offset: u64 },
    /// In no module the profiler knew: an address, no mapping, no name.
    Unnamed { address: u64 },
}

/// An interpreted frame: its type and, when the profiler symbolized it, a
/// function, file and line.
#[derive(Debug, Clone)]
pub struct InterpretedFrame {
    pub frame_type: String,
    pub function: Option<(String, String, i64)>,
}

/// The GNU build id the profiler would write for the kernel; any will do.
pub const KERNEL_BUILD_ID: &str = "8e2a4b6c8d0f1e3a5b7c9d1e2f4a6b8c0d2e4f6a";

/// The mappings of `file`'s code as the profiler writes them: (start,
/// limit, file offset) in the file's own addresses, one per executable
/// PT_LOAD segment, as the loader maps it (offset and start page-aligned).
pub fn profiler_mappings(file: &Path) -> Vec<(u64, u64, u64)> {
    const PAGE: u64 = 4096;
    load_segments(file)
        .into_iter()
        .filter(|segment| segment.executable)
        .map(|segment| {
            let file_offset = segment.offset & !(PAGE - 1);
            let start = segment.vaddr - (segment.offset - file_offset);
            let limit = (segment.vaddr + segment.file_size).div_ceil(PAGE) * PAGE;
            (start, limit, file_offset)
        })
        .collect()
}

fn string(value: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(value.to_owned())),
    })
}

/// The dictionary as the profiler's reporter fills it: zero entries first,
/// strings and attributes each added once.
struct Tables {
    d: ProfilesDictionary,
}

impl Tables {
    fn new() -> Self {
        Self {
            d: ProfilesDictionary {
                mapping_table: vec![Mapping::default()],
                location_table: vec![Location::default()],
                function_table: vec![Function::default()],
                link_table: vec![Link::default()],
                attribute_table: vec![KeyValueAndUnit {
                    key_strindex: 0,
                    value: Some(AnyValue { value: None }),
                    unit_strindex: 0,
                }],
                stack_table: vec![Stack::default()],
                string_table: vec![String::new()],
            },
        }
    }

    fn string(&mut self, s: &str) -> i32 {
        let table = &mut self.d.string_table;
        let index = table.iter().position(|t| t == s).unwrap_or_else(|| {
            table.push(s.to_owned());
            table.len() - 1
        });
        index as i32
    }

    fn attribute(&mut self, key: &str, value: &str) -> i32 {
        let entry = KeyValueAndUnit {
            key_strindex: self.string(key),
            value: string(value),
            unit_strindex: 0,
        };
        let table = &mut self.d.attribute_table;
        let index = table.iter().position(|a| *a == entry).unwrap_or_else(|| {
            table.push(entry);
            table.len() - 1
        });
        index as i32
    }

    fn mapping(&mut self, name: &str, range: (u64, u64, u64), build_ids: &[(&str, &str)]) -> i32 {
        let filename_strindex = self.string(name);
        let attribute_indices = build_ids
            .iter()
            .map(|(key, value)| self.attribute(key, value))
            .collect();
        self.d.mapping_table.push(Mapping {
            memory_start: range.0,
            memory_limit: range.1,
            file_offset: range.2,
            filename_strindex,
            attribute_indices,
        });
        (self.d.mapping_table.len() - 1) as i32
    }

    fn location(
        &mut self,
        frame_type: &str,
        mapping_index: i32,
        address: u64,
        function: Option<(&str, &str, i64)>,
    ) -> i32 {
        let lines = match function {
            Some((name, file, line)) => {
                let name_strindex = self.string(name);
                let filename_strindex = self.string(file);
                self.d.function_table.push(Function {
                    name_strindex,
                    filename_strindex,
                    ..Function::default()
                });
                vec![Line {
                    function_index: (self.d.function_table.len() - 1) as i32,
                    line,
                    column: 0,
                }]
            }
            None => Vec::new(),
        };
        let attribute_indices = vec![self.attribute("profile.frame.type", frame_type)];
        self.d.location_table.push(Location {
            mapping_index,
            address,
            lines,
            attribute_indices,
        });
        (self.d.location_table.len() - 1) as i32
    }
}

/// A request of one `cpu` profile from the profiler, with a location per
/// native address (in the mapping of the code segment that holds it),
/// per kernel frame and per interpreted frame; `program` is the process's
/// executable. Each sample's stack is leaf first: kernel frames, native
/// frames, interpreted frames; every location is in some stack. The
/// `htlhash` attributes are stand-ins (the profiler hashes the file).
pub fn ebpf_profiler_native_request(
    program: &Path,
    native: &[NativeFrames],
    kernel: &[KernelFrame],
    interpreted: &[InterpretedFrame],
) -> ExportProfilesServiceRequest {
    let mut t = Tables::new();
    let mut native_locations = Vec::new();
    for frames in native {
        let gnu = build_id(&frames.file);
        let htlhash = format!("{:0<32}", &gnu[..gnu.len().min(32)]);
        let name = base_name(&frames.file);
        let mut mappings = Vec::new();
        for range in profiler_mappings(&frames.file) {
            mappings.push((
                range,
                t.mapping(
                    &name,
                    range,
                    &[
                        ("process.executable.build_id.gnu", &gnu),
                        ("process.executable.build_id.htlhash", &htlhash),
                    ],
                ),
            ));
        }
        for &address in &frames.addresses {
            let (_, mapping) = mappings
                .iter()
                .find(|((start, limit, _), _)| (*start..*limit).contains(&address))
                .unwrap_or_else(|| {
                    panic!(
                        "{address:#x} is in no code segment of {}",
                        frames.file.display()
                    )
                });
            native_locations.push(t.location("native", *mapping, address, None));
        }
    }
    let mut kernel_mapping = None;
    let mut kernel_locations = Vec::new();
    for frame in kernel {
        let location = match frame {
            KernelFrame::Named { function, offset } => {
                let mapping = *kernel_mapping.get_or_insert_with(|| {
                    t.mapping(
                        "vmlinux",
                        (0, 0, 0),
                        &[
                            ("process.executable.build_id.gnu", KERNEL_BUILD_ID),
                            (
                                "process.executable.build_id.htlhash",
                                &KERNEL_BUILD_ID[..32],
                            ),
                        ],
                    )
                });
                t.location("kernel", mapping, *offset, Some((function, "", 0)))
            }
            KernelFrame::Unnamed { address } => t.location("kernel", 0, *address, None),
        };
        kernel_locations.push(location);
    }
    let interpreted_locations: Vec<i32> = interpreted
        .iter()
        .map(|frame| {
            let function = frame
                .function
                .as_ref()
                .map(|(name, file, line)| (name.as_str(), file.as_str(), *line));
            t.location(&frame.frame_type, 0, 0, function)
        })
        .collect();

    // Stacks of 1 to 3 kernel frames, 2 to 4 native frames and 1 to 3
    // interpreted frames, until every location is in one.
    let pick = |list: &[i32], at: usize, count: usize| -> Vec<i32> {
        if list.is_empty() {
            return Vec::new();
        }
        (0..count).map(|k| list[(at + k) % list.len()]).collect()
    };
    let mut samples = Vec::new();
    let longest = native_locations
        .len()
        .max(kernel_locations.len())
        .max(interpreted_locations.len());
    let start = 1_700_000_000_000_000_000u64;
    for at in 0..longest {
        let mut stack = Vec::new();
        stack.extend(pick(&kernel_locations, at, 1 + at % 3));
        stack.extend(pick(&native_locations, at, 2 + at % 3));
        stack.extend(pick(&interpreted_locations, at, 1 + at % 3));
        t.d.stack_table.push(Stack {
            location_indices: stack,
        });
        let tid = 1000 + (at % 4) as i64;
        let attribute_indices = vec![t.attribute("thread.name", &format!("worker-{tid}"))];
        samples.push(Sample {
            stack_index: (t.d.stack_table.len() - 1) as i32,
            attribute_indices,
            link_index: 0,
            values: Vec::new(),
            timestamps_unix_nano: vec![start + at as u64 * 50_000_000],
        });
    }
    let sample_type = ValueType {
        type_strindex: t.string("samples"),
        unit_strindex: t.string("count"),
    };
    let period_type = ValueType {
        type_strindex: t.string("cpu"),
        unit_strindex: t.string("nanoseconds"),
    };
    let profile = Profile {
        sample_type: Some(sample_type),
        samples,
        time_unix_nano: start,
        duration_nano: 5_000_000_000,
        period_type: Some(period_type),
        period: 50_000_000,
        ..Profile::default()
    };
    let plain = |key: &str, value: any_value::Value| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        key_strindex: 0,
    };
    let schema_url = "https://opentelemetry.io/schemas/1.37.0".to_owned();
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: vec![
                    plain("process.pid", any_value::Value::IntValue(4242)),
                    plain(
                        "process.executable.path",
                        any_value::Value::StringValue(program.to_string_lossy().into_owned()),
                    ),
                    plain(
                        "process.executable.name",
                        any_value::Value::StringValue(base_name(program)),
                    ),
                ],
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "opentelemetry-ebpf-profiler".into(),
                    version: "v0.0.202547".into(),
                    ..InstrumentationScope::default()
                }),
                profiles: vec![profile],
                schema_url: schema_url.clone(),
            }],
            schema_url,
        }],
        dictionary: Some(t.d),
    }
}

/// The base name of `path`, as the profiler names mappings.
pub fn base_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One location as Python's opentelemetry-proto reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedLocation {
    pub mapping_filename: String,
    pub address: u64,
    /// The `profile.frame.type` attribute, empty without one.
    pub frame_type: String,
    pub lines: Vec<Written>,
}

const DECODE_SCRIPT: &str = r#"
import json, sys
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2

request = profiles_service_pb2.ExportProfilesServiceRequest()
with open(sys.argv[1], "rb") as f:
    request.ParseFromString(f.read())
d = request.dictionary
text = lambda i: d.string_table[i]
out = []
for location in d.location_table[1:]:
    frame_type = ""
    for i in location.attribute_indices:
        a = d.attribute_table[i]
        if text(a.key_strindex) == "profile.frame.type":
            frame_type = a.value.string_value
    lines = []
    for line in location.lines:
        f = d.function_table[line.function_index]
        lines.append([text(f.name_strindex), text(f.system_name_strindex),
                      text(f.filename_strindex), line.line, line.column])
    mapping = d.mapping_table[location.mapping_index]
    out.append([text(mapping.filename_strindex) if location.mapping_index else "",
                location.address, frame_type, lines])
json.dump(out, sys.stdout)
"#;

/// Every location of the OTLP request in `file` (protobuf), read by
/// Python's opentelemetry-proto with `python`.
pub fn python_decoded_locations(python: &Path, file: &Path) -> Vec<DecodedLocation> {
    let output = Command::new(python)
        .args(["-c", DECODE_SCRIPT])
        .arg(file)
        .output()
        .expect("run Python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    /// (name, system name, file, line, column)
    type Line = (String, String, String, u64, u64);
    let rows: Vec<(String, u64, String, Vec<Line>)> =
        serde_json::from_slice(&output.stdout).expect("the script's JSON");
    rows.into_iter()
        .map(
            |(mapping_filename, address, frame_type, lines)| DecodedLocation {
                mapping_filename,
                address,
                frame_type,
                lines: lines
                    .into_iter()
                    .map(|(name, system_name, file, line, column)| Written {
                        name,
                        system_name,
                        file,
                        line,
                        column,
                    })
                    .collect(),
            },
        )
        .collect()
}

/// (ELF address, lines) of the locations in `file`'s mappings, which the
/// profiler names by the file's base name and whose addresses are ELF
/// addresses.
pub fn profiler_locations_of(
    request: &ExportProfilesServiceRequest,
    file: &Path,
) -> Vec<(u64, Vec<Written>)> {
    let dictionary = request.dictionary.as_ref().expect("a dictionary");
    let name = base_name(file);
    dictionary
        .location_table
        .iter()
        .skip(1)
        .filter(|l| {
            l.mapping_index != 0
                && dictionary.string_table
                    [dictionary.mapping_table[l.mapping_index as usize].filename_strindex as usize]
                    == name
        })
        .map(|l| (l.address, written_lines(dictionary, l)))
        .collect()
}
