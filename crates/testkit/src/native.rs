//! Native programs with debug information for the symbolizer's tests: a
//! C++ program (inlining, templates, an anonymous namespace, methods) built
//! PIE and non-PIE against a shared library of our own, profiled by
//! gperftools; and the oracle, `llvm-symbolizer --inlines`, with binutils
//! (`readelf`, `objcopy`, `strip`) for what the oracle needs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::profiles::v1development::{Location, ProfilesDictionary};

use crate::c::build_cxx_once;
use crate::{missing_prerequisite, require_tool};

const LIBRARY: &str = r#"
namespace work {
template <int N> static inline double step(double x) {
    return x * 1.0000003 + N * 0.25 / (x + 2.0);
}
}  // namespace work

extern "C" __attribute__((noinline)) double lib_work(long n, double x) {
    for (long i = 0; i < n; i++) x = work::step<3>(x);
    return x;
}
"#;

const PROGRAM: &str = r#"
#include <cstdio>
#include <ctime>

extern "C" double lib_work(long n, double x);

namespace {
template <typename T> struct Accumulator {
    T total{};
    inline void add(T v) { total = total * static_cast<T>(1.0000001) + v / (total + 3); }
};

double spin_template(long n) {
    Accumulator<double> acc;
    for (long i = 0; i < n; i++) acc.add(static_cast<double>(i & 7));
    return acc.total;
}
}  // namespace

namespace shapes {
class Circle {
public:
    explicit Circle(double r) : r_(r) {}
    __attribute__((noinline)) double area_sum(long n) const;
private:
    double r_;
};

static inline double square(double x) { return x * x; }

double Circle::area_sum(long n) const {
    double s = 0;
    for (long i = 0; i < n; i++) s += square(r_ + i * 1e-9) / (s + 1.0);
    return s;
}
}  // namespace shapes

static volatile double sink;

__attribute__((noinline)) static void run_all() {
    sink += spin_template(200000);
    sink += shapes::Circle(2.0).area_sum(200000);
    sink += lib_work(200000, 1.5);
}

int main() {
    clock_t start = clock();
    while ((double)(clock() - start) < 0.5 * CLOCKS_PER_SEC) run_all();
    std::printf("%f\n", sink);
    return 0;
}
"#;

/// The built files: the shared library and the program linked to it, PIE
/// and non-PIE.
#[derive(Debug, Clone)]
pub struct NativePrograms {
    pub library: PathBuf,
    pub pie: PathBuf,
    pub non_pie: PathBuf,
}

/// Builds the programs, or `None` after a loud skip when a tool or
/// libprofiler is missing. Also checks for `llvm-symbolizer` and binutils.
pub fn native_programs(purpose: &str) -> Option<NativePrograms> {
    require_tool("c++", &["--version"], purpose)?;
    require_tool("llvm-symbolizer", &["--version"], purpose)?;
    for tool in ["readelf", "objcopy", "strip"] {
        require_tool(tool, &["--version"], purpose)?;
    }
    let built = (|| {
        let library = build_cxx_once(
            "libsymwork",
            LIBRARY,
            &["-g", "-O2", "-fPIC", "-shared", "-Wl,--build-id"],
            &[],
        )?;
        let library_arg = library.to_string_lossy().into_owned();
        let link = [library_arg.as_str(), "-Wl,--no-as-needed", "-lprofiler"];
        let build = |name, pie: &[&str]| {
            let mut flags = vec!["-g", "-O2", "-fno-omit-frame-pointer", "-Wl,--build-id"];
            flags.extend_from_slice(pie);
            build_cxx_once(name, PROGRAM, &flags, &link)
        };
        let pie = build("symtest-pie", &["-fPIE", "-pie"])?;
        let non_pie = build("symtest-nopie", &["-fno-pie", "-no-pie"])?;
        Ok::<_, crate::programs::BuildFailed>(NativePrograms {
            library,
            pie,
            non_pie,
        })
    })();
    match built {
        Ok(programs) => Some(programs),
        Err(failed) if !failed.stderr.contains("lprofiler") => panic!("{failed}"),
        Err(failed) => {
            missing_prerequisite(
                "gperftools' libprofiler (Debian's libgoogle-perftools-dev)",
                &format!("{purpose} (building failed: {failed})"),
            );
            None
        }
    }
}

/// Runs `program` under gperftools' CPU profiler; the profile's bytes.
pub fn gperftools_cpu_profile_of(program: &Path, dir: &Path) -> Vec<u8> {
    let profile = dir.join(format!(
        "{}.prof",
        program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let run = Command::new(program)
        .env("CPUPROFILE", &profile)
        .env("CPUPROFILE_FREQUENCY", "2000")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        run.status.success(),
        "{}: {}",
        program.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(&profile).unwrap_or_else(|e| panic!("{}: {e}", profile.display()))
}

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A PT_LOAD program header as `readelf -lW` prints it.
#[derive(Debug, Clone, Copy)]
pub struct LoadSegment {
    pub offset: u64,
    pub vaddr: u64,
    pub file_size: u64,
    /// Its flags hold `E`: the segment is code.
    pub executable: bool,
}

/// The PT_LOAD headers of `file`, read by binutils' readelf.
pub fn load_segments(file: &Path) -> Vec<LoadSegment> {
    let text = run(Command::new("readelf").arg("-lW").arg(file));
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg... Align,
            // the flags in one to three fields (`R E`).
            (fields.first() == Some(&"LOAD")).then(|| LoadSegment {
                offset: hex(fields[1]),
                vaddr: hex(fields[2]),
                file_size: hex(fields[4]),
                executable: fields[6..fields.len() - 1].contains(&"E"),
            })
        })
        .collect()
}

/// The ELF address of runtime `address` in a mapping (start, file offset)
/// of `file`, by pprof's rule: the file offset of the address, placed in
/// the PT_LOAD segment that holds it.
pub fn elf_address(segments: &[LoadSegment], start: u64, file_offset: u64, address: u64) -> u64 {
    let offset = address - start + file_offset;
    let segment = segments
        .iter()
        .find(|s| offset >= s.offset && offset < s.offset + s.file_size)
        .unwrap_or_else(|| panic!("no PT_LOAD holds file offset {offset:#x}"));
    offset - segment.offset + segment.vaddr
}

/// The GNU build id of `file`, as `readelf -n` prints it (hex).
pub fn build_id(file: &Path) -> String {
    let text = run(Command::new("readelf").arg("-n").arg(file));
    text.lines()
        .find_map(|line| line.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("{} has no build id", file.display()))
        .trim()
        .to_owned()
}

/// Where a debug directory keeps the debug file of `file`:
/// `DEBUG_DIR/.build-id/xx/rest.debug`, by its build id.
pub fn build_id_path(debug_dir: &Path, file: &Path) -> PathBuf {
    let id = build_id(file);
    debug_dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
}

/// Puts `file` stripped at its own path under `root`, and its debug
/// information under `debug_dir` by build id.
pub fn split_into_build_id_tree(file: &Path, root: &Path, debug_dir: &Path) {
    split_debug_info(file, &under(root, file), &build_id_path(debug_dir, file));
}

/// Writes `file` stripped to `stripped` and its debug information
/// (`objcopy --only-keep-debug`) to `debug`.
pub fn split_debug_info(file: &Path, stripped: &Path, debug: &Path) {
    for path in [stripped, debug] {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folder");
        }
    }
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(file)
        .arg(debug));
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(stripped)
        .arg(file));
}

/// `objcopy --add-gnu-debuglink=DEBUG FILE` in place.
pub fn add_debuglink(file: &Path, debug: &Path) {
    let mut arg = std::ffi::OsString::from("--add-gnu-debuglink=");
    arg.push(debug);
    run(Command::new("objcopy").arg(arg).arg(file));
}

/// One frame as llvm-symbolizer gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleFrame {
    pub function: String,
    pub file: String,
    pub line: u64,
    pub column: u64,
}

/// `llvm-symbolizer --inlines --obj=FILE` for each ELF address: the inline
/// chain, innermost first (mangled names with `demangle` false).
pub fn llvm_symbolize(file: &Path, addresses: &[u64], demangle: bool) -> Vec<Vec<OracleFrame>> {
    let mut obj = std::ffi::OsString::from("--obj=");
    obj.push(file);
    let mut command = Command::new("llvm-symbolizer");
    command
        .args(["--inlines", "--output-style=JSON"])
        .arg(if demangle {
            "--demangle"
        } else {
            "--no-demangle"
        })
        .arg(obj)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("run llvm-symbolizer");
    let input: String = addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write addresses");
    let output = child.wait_with_output().expect("llvm-symbolizer");
    assert!(
        output.status.success(),
        "llvm-symbolizer: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<Vec<OracleFrame>> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            value["Symbol"]
                .as_array()
                .map(|frames| {
                    frames
                        .iter()
                        .map(|frame| OracleFrame {
                            function: frame["FunctionName"].as_str().unwrap_or("").to_owned(),
                            file: frame["FileName"].as_str().unwrap_or("").to_owned(),
                            line: frame["Line"].as_u64().unwrap_or(0),
                            column: frame["Column"].as_u64().unwrap_or(0),
                        })
                        .filter(|f| !f.function.is_empty() || !f.file.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        answers.len(),
        addresses.len(),
        "one answer per address: {text}"
    );
    answers
}

/// One resolved frame as profbridge wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub name: String,
    pub system_name: String,
    pub file: String,
    pub line: u64,
    pub column: u64,
}

/// Per location of `file`'s mappings: (ELF address, the lines written).
pub fn locations_of(
    request: &ExportProfilesServiceRequest,
    file: &Path,
) -> Vec<(u64, Vec<Written>)> {
    let dictionary = request.dictionary.as_ref().expect("a dictionary");
    let text = |i: i32| dictionary.string_table[i as usize].clone();
    let segments = load_segments(file);
    let wanted = file.to_string_lossy();
    let mut found = Vec::new();
    for location in dictionary.location_table.iter().skip(1) {
        let mapping = &dictionary.mapping_table[location.mapping_index as usize];
        if location.mapping_index == 0 || text(mapping.filename_strindex) != wanted {
            continue;
        }
        let address = elf_address(
            &segments,
            mapping.memory_start,
            mapping.file_offset,
            location.address,
        );
        found.push((address, written_lines(dictionary, location)));
    }
    found
}

/// The lines of `location`, with their functions' strings.
pub fn written_lines(dictionary: &ProfilesDictionary, location: &Location) -> Vec<Written> {
    let text = |i: i32| dictionary.string_table[i as usize].clone();
    location
        .lines
        .iter()
        .map(|line| {
            let function = &dictionary.function_table[line.function_index as usize];
            Written {
                name: text(function.name_strindex),
                system_name: text(function.system_name_strindex),
                file: text(function.filename_strindex),
                line: line.line as u64,
                column: line.column as u64,
            }
        })
        .collect()
}

/// Checks every location of `file` against llvm-symbolizer on `oracle_file`
/// (the same ELF address); returns how many locations and how many with
/// inlined frames were compared.
pub fn assert_matches_oracle(
    request: &ExportProfilesServiceRequest,
    file: &Path,
    oracle_file: &Path,
) -> (usize, usize) {
    assert_frames_match_oracle(&locations_of(request, file), file, oracle_file)
}

/// Checks each (ELF address, lines written) of `file` against
/// llvm-symbolizer on `oracle_file`; returns how many locations and how
/// many with inlined frames were compared.
pub fn assert_frames_match_oracle(
    locations: &[(u64, Vec<Written>)],
    file: &Path,
    oracle_file: &Path,
) -> (usize, usize) {
    let addresses: Vec<u64> = locations.iter().map(|(a, _)| *a).collect();
    let demangled = llvm_symbolize(oracle_file, &addresses, true);
    let mangled = llvm_symbolize(oracle_file, &addresses, false);
    let mut inlined = 0;
    for (((address, written), demangled), mangled) in locations.iter().zip(&demangled).zip(&mangled)
    {
        let expected: Vec<(&str, &str, &str, u64, u64)> = demangled
            .iter()
            .zip(mangled)
            .map(|(d, m): (&OracleFrame, &OracleFrame)| {
                (
                    d.function.as_str(),
                    m.function.as_str(),
                    d.file.as_str(),
                    d.line,
                    d.column,
                )
            })
            .collect();
        let got: Vec<(&str, &str, &str, u64, u64)> = written
            .iter()
            .map(|w| {
                (
                    w.name.as_str(),
                    w.system_name.as_str(),
                    w.file.as_str(),
                    w.line,
                    w.column,
                )
            })
            .collect();
        assert!(
            !expected.is_empty(),
            "{}: llvm-symbolizer knows nothing at {address:#x}",
            file.display()
        );
        assert_eq!(got, expected, "{} at {address:#x}", file.display());
        if got.len() > 1 {
            inlined += 1;
        }
    }
    (locations.len(), inlined)
}

/// `root/PATH`, where a symbolizer with `root` looks for the mapping path
/// `path` (absolute).
pub fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").expect("an absolute path"))
}

/// Writes the first third of `program` at its place under `root`: an ELF
/// file cut short. Returns where.
pub fn truncated_copy(root: &Path, program: &Path) -> PathBuf {
    let copy = under(root, program);
    std::fs::create_dir_all(copy.parent().expect("a folder")).expect("create the folder");
    let bytes = std::fs::read(program).expect("read the program");
    std::fs::write(&copy, &bytes[..bytes.len() / 3]).expect("write the truncated copy");
    copy
}

/// Gives `file`'s mappings the GNU build id `id` (hex), as the eBPF
/// profiler and pprof's `Mapping.build_id` do.
pub fn add_build_id(request: &mut ExportProfilesServiceRequest, file: &Path, id: &str) {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
    use opentelemetry_proto::tonic::profiles::v1development::KeyValueAndUnit;
    let dictionary = request.dictionary.as_mut().expect("a dictionary");
    let wanted = file.to_string_lossy().into_owned();
    let key = dictionary.string_table.len() as i32;
    dictionary
        .string_table
        .push("process.executable.build_id.gnu".to_owned());
    let attribute = dictionary.attribute_table.len() as i32;
    dictionary.attribute_table.push(KeyValueAndUnit {
        key_strindex: key,
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(id.to_owned())),
        }),
        unit_strindex: 0,
    });
    let strings = dictionary.string_table.clone();
    for mapping in &mut dictionary.mapping_table {
        if strings[mapping.filename_strindex as usize] == wanted {
            mapping.attribute_indices.push(attribute);
        }
    }
}
