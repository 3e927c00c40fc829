//! A Go program's own cumulative profiles (allocs, mutex, block), written
//! at four moments of its run: every scrape after the first is a delta,
//! the deltas of each stack and label set add up to its last scrape less
//! its first, and their totals are what `go tool pprof -base` subtracts.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use profbridge_pprof::delta::{value_kinds, ValueKind};
use profbridge_pprof::{decode, validate, DecodeOptions, DeltaOutcome, DeltaTracker, Profile};
use profbridge_testkit::{require_tool, TempDir};

use crate::raw_text::{go_tool_pprof, RawText};

const PURPOSE: &str = "the Go cumulative profile delta interop test";
const SCRAPES: usize = 4;

/// Samples every allocation, contention and blocking event, then four
/// times: allocates, frees half of what it keeps, contends on a mutex,
/// blocks on a channel, collects garbage and writes the three profiles.
const PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var kept [][]byte

//go:noinline
func allocSmall(n int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, 64))
	}
}

//go:noinline
func allocLarge(n int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, 16<<10))
	}
}

//go:noinline
func contend(n int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				mu.Lock()
				time.Sleep(50 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

//go:noinline
func block(n int) {
	ch := make(chan int)
	go func() {
		for i := 0; i < n; i++ {
			time.Sleep(20 * time.Microsecond)
			ch <- i
		}
		close(ch)
	}()
	for range ch {
	}
}

func write(dir string, step int) error {
	for _, name := range []string{"allocs", "mutex", "block"} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s.%d.pb.gz", name, step)))
		if err != nil {
			return err
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	runtime.MemProfileRate = 1
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	for step := 0; step < 4; step++ {
		allocSmall(100 * (step + 1))
		if step%2 == 1 {
			allocLarge(5)
		}
		kept = kept[:len(kept)/2]
		contend(20)
		block(20)
		runtime.GC()
		runtime.GC()
		if err := write(os.Args[1], step); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
"#;

/// Function names leaf first, and labels as text, sorted.
type Key = (Vec<String>, Vec<String>);

/// Each stack and label set's summed values, resolved independently of the
/// library by function name.
fn by_key(profile: &Profile) -> BTreeMap<Key, Vec<i64>> {
    let text = |i: i64| profile.string_table[i as usize].clone();
    let mut out: BTreeMap<Key, Vec<i64>> = BTreeMap::new();
    for sample in &profile.sample {
        let stack = sample
            .location_id
            .iter()
            .flat_map(|id| &profile.location.iter().find(|l| l.id == *id).unwrap().line)
            .map(|line| {
                let function = profile.function.iter().find(|f| f.id == line.function_id);
                text(function.unwrap().name)
            })
            .collect();
        let mut labels: Vec<String> = sample
            .label
            .iter()
            .map(|l| {
                format!(
                    "{}={}{}{}",
                    text(l.key),
                    text(l.str),
                    l.num,
                    text(l.num_unit)
                )
            })
            .collect();
        labels.sort();
        let sums = out
            .entry((stack, labels))
            .or_insert_with(|| vec![0; sample.value.len()]);
        for (sum, value) in sums.iter_mut().zip(&sample.value) {
            *sum += value;
        }
    }
    out
}

fn write_profiles(dir: &Path) {
    let program = profbridge_testkit::go::build_once("delta-profiles", PROGRAM)
        .unwrap_or_else(|failed| panic!("go build failed: {}", failed.stderr));
    let run = Command::new(program)
        .arg(dir)
        .output()
        .expect("run the Go program");
    assert!(
        run.status.success(),
        "the Go program failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn deltas_of_go_profiles_add_up_to_what_go_tool_pprof_subtracts() {
    if require_tool("go", &["version"], PURPOSE).is_none() {
        return;
    }
    let dir = TempDir::new("go-delta");
    write_profiles(dir.path());

    for name in ["allocs", "mutex", "block"] {
        let path = |step: usize| dir.path().join(format!("{name}.{step}.pb.gz"));
        let scrapes: Vec<Profile> = (0..SCRAPES)
            .map(|step| {
                decode(
                    &std::fs::read(path(step)).unwrap(),
                    &DecodeOptions::default(),
                )
                .unwrap()
            })
            .collect();
        let kinds = value_kinds(&scrapes[0]);
        let cumulative: Vec<usize> = (0..kinds.len())
            .filter(|&c| kinds[c] == ValueKind::Cumulative)
            .collect();
        assert!(!cumulative.is_empty(), "{name}: no cumulative values");

        let mut tracker = DeltaTracker::default();
        let mut deltas = Vec::new();
        for (step, scrape) in scrapes.iter().enumerate() {
            match tracker.next(scrape.clone()).unwrap() {
                DeltaOutcome::Baseline => assert_eq!(step, 0, "{name}"),
                DeltaOutcome::Delta(delta) => {
                    validate(&delta).unwrap();
                    assert_eq!(
                        delta.duration_nanos,
                        scrape.time_nanos - scrapes[step - 1].time_nanos
                    );
                    deltas.push(*delta);
                }
                other => panic!("{name} scrape {step}: {other:?}"),
            }
        }

        // Each stack and label set: the deltas add up to last less first.
        let (first, last) = (by_key(&scrapes[0]), by_key(&scrapes[SCRAPES - 1]));
        let mut sums: BTreeMap<Key, Vec<i64>> = BTreeMap::new();
        for delta in &deltas {
            for (key, values) in by_key(delta) {
                let sum = sums.entry(key).or_insert_with(|| vec![0; kinds.len()]);
                for &c in &cumulative {
                    assert!(values[c] >= 0, "{name}: negative delta {values:?}");
                    sum[c] += values[c];
                }
            }
        }
        let mut moved = 0;
        for key in first.keys().chain(last.keys()) {
            let before = first
                .get(key)
                .cloned()
                .unwrap_or_else(|| vec![0; kinds.len()]);
            let after = last
                .get(key)
                .cloned()
                .unwrap_or_else(|| vec![0; kinds.len()]);
            let sum = sums
                .get(key)
                .cloned()
                .unwrap_or_else(|| vec![0; kinds.len()]);
            for &c in &cumulative {
                assert_eq!(sum[c], after[c] - before[c], "{name}: {key:?} column {c}");
                moved += usize::from(sum[c] != 0);
            }
        }
        assert!(moved > 0, "{name}: nothing happened between the scrapes");

        // The totals: what google/pprof subtracts with -base.
        let raw = go_tool_pprof(
            &[
                "-raw",
                "-symbolize=none",
                "-base",
                path(0).to_str().unwrap(),
            ],
            &path(SCRAPES - 1),
            dir.path(),
        )
        .unwrap_or_else(|e| panic!("{name}: go tool pprof -base failed: {e}"));
        let theirs = RawText::parse(&raw).totals();
        for &c in &cumulative {
            let ours: i64 = deltas
                .iter()
                .flat_map(|d| &d.sample)
                .map(|s| s.value[c])
                .sum();
            assert_eq!(ours, theirs[c], "{name}: total of column {c}");
        }

        // Gauges: each delta's are its scrape's.
        for (delta, scrape) in deltas.iter().zip(&scrapes[1..]) {
            for c in (0..kinds.len()).filter(|c| !cumulative.contains(c)) {
                let total = |p: &Profile| p.sample.iter().map(|s| s.value[c]).sum::<i64>();
                assert_eq!(total(delta), total(scrape), "{name}: gauge column {c}");
            }
        }
    }
}
