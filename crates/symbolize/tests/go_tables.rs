//! Go binaries without DWARF, symbolized from Go's own tables
//! (`.gopclntab` and the inline trees), against the Go runtime itself: a
//! program built with `-ldflags=-w` (and `-s -w`, and PIE) prints, for stacks it
//! takes with runtime.Callers, the frames runtime.CallersFrames gives, and
//! writes a CPU profile that runtime/pprof symbolizes. Both are bare
//! addresses for profbridge, which must give the same lines.
//!
//! Addresses: a runtime.Callers stack holds return addresses, and with Go
//! 1.19 one more made-up address per inlined call; CallersFrames gives
//! each frame the address it looked up (one less than the return address,
//! the call instruction). The program prints each inline chain (the frames
//! up to one that is a real function, `Frame.Func != nil`) under the
//! address of its first frame, which is what runtime/pprof stores as a
//! location's address (`Location.address = Frame.PC`). profbridge looks
//! both up as given, with no adjustment.

use crate::support::request_of;
use std::path::{Path, PathBuf};
use std::process::Command;

use profbridge_symbolize::{FileError, MissReason, Sources, Symbolizer};
use profbridge_testkit::native::{locations_of, under};
use profbridge_testkit::TempDir;
use profbridge_translate::keys::{
    HAS_FILENAMES, HAS_FUNCTIONS, HAS_INLINE_FRAMES, HAS_LINE_NUMBERS,
};
use profbridge_translate::otlp::{bool_value, ExportProfilesServiceRequest, Location};

const PURPOSE: &str = "the symbolizer's tests of Go binaries without DWARF";

const PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

//go:noinline
func capture() []uintptr {
	pcs := make([]uintptr, 64)
	return pcs[:runtime.Callers(2, pcs)]
}

func leaf() []uintptr { return capture() }

func mid() []uintptr { return leaf() }

type counter struct{ n int }

func (c *counter) top() []uintptr { c.n++; return mid() }

type celsius float64

func (t celsius) stack() []uintptr { return capture() }

func pick[T any](x T, f func() []uintptr) []uintptr { return f() }

//go:noinline
func run(c *counter) [][]uintptr {
	stacks := [][]uintptr{c.top(), celsius(21).stack(), leaf()}
	stacks = append(stacks, pick(3, capture))
	func() { stacks = append(stacks, mid()) }()
	return stacks
}

var sink float64

func step(x float64) float64 { return x*1.0000001 + 0.5/(x+1.0) }

func steps(x float64, n int) float64 {
	for i := 0; i < n; i++ {
		x = step(x)
	}
	return x
}

//go:noinline
func spin(d time.Duration) {
	x := 1.0
	for start := time.Now(); time.Since(start) < d; {
		x = steps(x, 10000)
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
	spin(300 * time.Millisecond)
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		panic(err)
	}
	for _, pcs := range run(&counter{}) {
		frames := runtime.CallersFrames(pcs)
		chain := false
		for {
			frame, more := frames.Next()
			if !chain {
				fmt.Printf("address %#x\n", frame.PC)
				chain = true
			}
			fmt.Printf("frame %s\t%s\t%d\n", frame.Function, frame.File, frame.Line)
			if frame.Func != nil {
				chain = false
			}
			if !more {
				break
			}
		}
	}
}
"#;

/// A line as Go wrote it or profbridge did: name, system name, file, line.
type GoLine = (String, String, String, u64);

/// One run of a program: its CPU profile as an OTLP request, and the inline
/// chains CallersFrames gave, by address.
struct GoRun {
    program: PathBuf,
    request: ExportProfilesServiceRequest,
    chains: Vec<(u64, Vec<GoLine>)>,
}

fn readelf_sections(program: &Path) -> String {
    let output = Command::new("readelf")
        .arg("-SW")
        .arg(program)
        .output()
        .expect("run readelf");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Builds the program with `flags` and runs it; `None` after a loud skip
/// when Go or binutils are missing.
fn build_and_run(name: &str, flags: &[&str], dir: &Path) -> Option<GoRun> {
    profbridge_testkit::require_tool("go", &["version"], PURPOSE)?;
    profbridge_testkit::require_tool("readelf", &["--version"], PURPOSE)?;
    let program = profbridge_testkit::go::build_once_with_flags(name, PROGRAM, flags)
        .unwrap_or_else(|failed| panic!("{failed}"));
    let sections = readelf_sections(&program);
    assert!(!sections.contains(".debug_info"), "{name}: DWARF left");
    assert!(sections.contains(".gopclntab"), "{name}: no .gopclntab");
    let stripped = flags.iter().any(|f| f.contains("-s"));
    assert_eq!(
        sections.contains(".symtab"),
        !stripped,
        "{name}: {sections}"
    );
    let profile_path = dir.join(format!("{name}.pb.gz"));
    let run = Command::new(&program).arg(&profile_path).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    Some(GoRun {
        program,
        request: request_of(&std::fs::read(&profile_path).unwrap()),
        chains: parse_chains(&String::from_utf8_lossy(&run.stdout)),
    })
}

fn parse_chains(text: &str) -> Vec<(u64, Vec<GoLine>)> {
    let mut chains: Vec<(u64, Vec<GoLine>)> = Vec::new();
    for line in text.lines() {
        if let Some(address) = line.strip_prefix("address 0x") {
            chains.push((u64::from_str_radix(address, 16).unwrap(), Vec::new()));
        } else if let Some(frame) = line.strip_prefix("frame ") {
            let fields: Vec<&str> = frame.split('\t').collect();
            let [function, file, line] = fields[..] else {
                panic!("bad frame line {frame:?}");
            };
            chains.last_mut().expect("an address first").1.push((
                function.to_owned(),
                function.to_owned(),
                file.to_owned(),
                line.parse().unwrap(),
            ));
        }
    }
    chains
}

/// The mapping index of `program` in `request`.
fn mapping_of(request: &ExportProfilesServiceRequest, program: &Path) -> i32 {
    let dictionary = request.dictionary.as_ref().unwrap();
    let wanted = program.to_string_lossy();
    dictionary
        .mapping_table
        .iter()
        .position(|m| dictionary.string_table[m.filename_strindex as usize] == wanted)
        .expect("the program's mapping") as i32
}

/// The lines of location `index` of `request`.
fn lines_of(request: &ExportProfilesServiceRequest, index: usize) -> Vec<GoLine> {
    let dictionary = request.dictionary.as_ref().unwrap();
    let text = |i: i32| dictionary.string_table[i as usize].clone();
    dictionary.location_table[index]
        .lines
        .iter()
        .map(|line| {
            let function = &dictionary.function_table[line.function_index as usize];
            (
                text(function.name_strindex),
                text(function.system_name_strindex),
                text(function.filename_strindex),
                line.line as u64,
            )
        })
        .collect()
}

/// Takes the lines runtime/pprof wrote out of the program's locations and
/// adds one location per CallersFrames chain; the lines Go gave, by
/// location index.
fn bare_addresses(run: &mut GoRun) -> Vec<(usize, Vec<GoLine>)> {
    let mapping = mapping_of(&run.request, &run.program);
    let mut expected = Vec::new();
    for index in 1..run
        .request
        .dictionary
        .as_ref()
        .unwrap()
        .location_table
        .len()
    {
        let lines = lines_of(&run.request, index);
        let dictionary = run.request.dictionary.as_mut().unwrap();
        let location = &mut dictionary.location_table[index];
        if location.mapping_index == mapping {
            location.lines.clear();
            expected.push((index, lines));
        }
    }
    let dictionary = run.request.dictionary.as_mut().unwrap();
    for (address, chain) in &run.chains {
        expected.push((dictionary.location_table.len(), chain.clone()));
        dictionary.location_table.push(Location {
            mapping_index: mapping,
            address: *address,
            ..Default::default()
        });
    }
    expected
}

fn local_sources() -> Sources {
    Sources {
        root: Some(PathBuf::from("/")),
        ..Sources::default()
    }
}

fn assert_mapping_flags(request: &ExportProfilesServiceRequest, program: &Path) {
    let dictionary = request.dictionary.as_ref().unwrap();
    let text = |i: i32| dictionary.string_table[i as usize].as_str();
    let mapping = &dictionary.mapping_table[mapping_of(request, program) as usize];
    for flag in [
        HAS_FUNCTIONS,
        HAS_FILENAMES,
        HAS_LINE_NUMBERS,
        HAS_INLINE_FRAMES,
    ] {
        assert!(
            mapping.attribute_indices.iter().any(|&i| {
                let attribute = &dictionary.attribute_table[i as usize];
                text(attribute.key_strindex) == flag && attribute.value == Some(bool_value(true))
            }),
            "{flag} not set"
        );
    }
}

#[test]
fn go_binaries_without_dwarf_resolve_as_the_go_runtime_does() {
    let dir = TempDir::new("symbolize-gopclntab");
    // The symbol table names `go:func.*`, the base of the inline trees;
    // without it, the runtime's module data does. A position-independent
    // executable keeps the tables in `.data.rel.ro.gopclntab`.
    for (name, flags) in [
        ("gotables-w", &["-ldflags=-w"][..]),
        ("gotables-sw", &["-ldflags=-s -w"]),
        ("gotables-pie", &["-buildmode=pie", "-ldflags=-s -w"]),
    ] {
        let Some(mut run) = build_and_run(name, flags, dir.path()) else {
            return;
        };
        let expected = bare_addresses(&mut run);
        let report = Symbolizer::new(local_sources()).symbolize(&mut run.request);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        for (index, go_lines) in &expected {
            assert!(
                !go_lines.is_empty(),
                "{name}: Go left location {index} bare"
            );
            let address = run.request.dictionary.as_ref().unwrap().location_table[*index].address;
            assert_eq!(
                &lines_of(&run.request, *index),
                go_lines,
                "{name}: location {index} at {address:#x}"
            );
        }
        let from_profile = expected.len() - run.chains.len();
        assert!(
            from_profile >= 3,
            "{name}: {from_profile} profile locations"
        );
        // What the chains cover: a 4-deep inline chain through a pointer
        // method, a value method, a generic function and a closure.
        let functions = |chain: &[GoLine]| chain.iter().map(|l| l.0.clone()).collect::<Vec<_>>();
        let chains: Vec<Vec<String>> = run.chains.iter().map(|(_, c)| functions(c)).collect();
        let want = ["main.leaf", "main.mid", "main.(*counter).top", "main.run"];
        assert!(chains.iter().any(|c| c == &want), "{name}: {chains:?}");
        for function in ["main.celsius.stack", "main.pick[...]", "main.run.func1"] {
            assert!(
                chains.iter().flatten().any(|f| f == function),
                "{name}: no {function} in {chains:?}"
            );
        }
        // And the profile: main.step inlined into main.steps into main.spin.
        let profiled: Vec<Vec<String>> = locations_of(&run.request, &run.program)
            .into_iter()
            .map(|(_, lines)| lines.into_iter().map(|w| w.name).collect())
            .collect();
        assert!(
            profiled
                .iter()
                .any(|names| names.len() >= 2 && names.last().is_some_and(|n| n == "main.spin")),
            "{name}: {profiled:?}"
        );
        assert_mapping_flags(&run.request, &run.program);
    }
}

/// Writes `program` under `root` with its `.gopclntab` changed by `damage`
/// (given the section's bytes).
fn damaged_copy(root: &Path, program: &Path, damage: impl FnOnce(&mut [u8])) -> PathBuf {
    let sections = readelf_sections(program);
    let fields: Vec<&str> = sections
        .lines()
        .find(|line| line.contains(" .gopclntab "))
        .expect("a .gopclntab section")
        .split_whitespace()
        .collect();
    let at = fields.iter().position(|f| *f == ".gopclntab").unwrap();
    let hex = |s: &str| usize::from_str_radix(s, 16).unwrap();
    let (offset, size) = (hex(fields[at + 3]), hex(fields[at + 4]));
    let mut bytes = std::fs::read(program).unwrap();
    damage(&mut bytes[offset..offset + size]);
    let copy = under(root, program);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::write(&copy, bytes).unwrap();
    copy
}

#[test]
fn a_corrupt_gopclntab_is_reported_once_and_the_profile_still_goes_out() {
    let dir = TempDir::new("symbolize-gopclntab-corrupt");
    let Some(mut run) = build_and_run("gotables-sw", &["-ldflags=-s -w"], dir.path()) else {
        return;
    };
    bare_addresses(&mut run);
    let root = dir.path().join("root");
    // A function count far past the section: the table reads as cut short.
    let copy = damaged_copy(&root, &run.program, |table| {
        table[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes())
    });
    let mut symbolizer = Symbolizer::new(Sources {
        root: Some(root),
        ..Sources::default()
    });
    let untouched = run.request.clone();
    let mut request = run.request.clone();
    let report = symbolizer.symbolize(&mut request);
    let named: Vec<String> = report
        .problems
        .iter()
        .filter(|p| matches!(p, FileError::GoTables { .. }))
        .map(ToString::to_string)
        .collect();
    assert_eq!(named.len(), 1, "{:?}", report.problems);
    assert!(named[0].contains(&*copy.to_string_lossy()), "{}", named[0]);
    assert!(named[0].contains("function table"), "{}", named[0]);
    // With neither DWARF nor a symbol table, the program's frames stay
    // addresses, counted; everything else goes out as it came.
    let bare = locations_of(&request, &run.program);
    assert!(bare.iter().all(|(_, lines)| lines.is_empty()));
    assert_eq!(
        report.misses.get(&MissReason::NoSymbol).copied(),
        Some(bare.len() as u64)
    );
    assert_eq!(request, untouched);

    // Met again: counted, not reported again.
    let mut again = run.request.clone();
    let report = symbolizer.symbolize(&mut again);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(
        report.misses.get(&MissReason::NoSymbol).copied(),
        Some(bare.len() as u64)
    );
}

/// A part of `.gopclntab`, and whether opening the file checks it.
type Region = (&'static str, std::ops::Range<usize>, bool);

/// The byte ranges of `.gopclntab`'s tables, from its header (Go 1.18+,
/// 64-bit, little-endian): the header, function names, compilation units,
/// file names, pc-value tables, the function table, the function records.
fn table_regions(table: &[u8]) -> Vec<Region> {
    let word =
        |i: usize| u64::from_le_bytes(table[8 + 8 * i..16 + 8 * i].try_into().unwrap()) as usize;
    let functab_end = word(7) + word(0) * 8 + 4;
    vec![
        ("header", 0..72, true),
        ("function names", word(3)..word(4), false),
        ("compilation units", word(4)..word(5), false),
        ("file names", word(5)..word(6), false),
        ("pc-value tables", word(6)..word(7), false),
        ("function table", word(7)..functab_end, true),
        ("function records", functab_end..table.len(), true),
        ("everything after the header", 72..table.len(), true),
    ]
}

#[test]
fn damaged_go_tables_never_stop_the_symbolizer() {
    let dir = TempDir::new("symbolize-gopclntab-damaged");
    let Some(mut run) = build_and_run("gotables-sw", &["-ldflags=-s -w"], dir.path()) else {
        return;
    };
    bare_addresses(&mut run);
    let bare_locations = run.request.dictionary.as_ref().unwrap().location_table[1..]
        .iter()
        .filter(|l| l.lines.is_empty())
        .count() as u64;
    let mut regions = Vec::new();
    damaged_copy(&dir.path().join("probe"), &run.program, |table| {
        regions = table_regions(table)
    });
    assert!(
        regions.iter().all(|(_, r, _)| r.start < r.end),
        "{regions:?}"
    );
    // Noise over each table in turn, on a fresh copy each time.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for (what, range, checked_at_open) in regions {
        let root = dir.path().join(what.replace(' ', "-"));
        damaged_copy(&root, &run.program, |table| {
            for byte in &mut table[range] {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                *byte = (seed >> 56) as u8;
            }
        });
        let mut request = run.request.clone();
        let report = Symbolizer::new(Sources {
            root: Some(root),
            ..Sources::default()
        })
        .symbolize(&mut request);
        // Whatever the tables say now, each bare location is looked at
        // once and the request keeps every location. What opening checks
        // (the header, the function table and the records it points to)
        // is reported once; damage found by a lookup leaves that address
        // bare (`no_symbol`).
        assert_eq!(
            report.locations_symbolized + report.missed() + report.left_alone,
            bare_locations,
            "{what}"
        );
        if checked_at_open {
            assert_eq!(report.problems.len(), 1, "{what}: {:?}", report.problems);
            assert_eq!(report.locations_symbolized, 0, "{what}");
        } else {
            assert!(report.problems.is_empty(), "{what}: {:?}", report.problems);
        }
        assert_eq!(
            request.dictionary.as_ref().unwrap().location_table.len(),
            run.request
                .dictionary
                .as_ref()
                .unwrap()
                .location_table
                .len()
        );
    }
}
