//! Go's runtime/pprof writes its legacy text profiles (`WriteTo(w, 1)`:
//! heap, goroutine, threadcreate) of a small Go program; our `parse_legacy`
//! reads each as google/pprof does, and agrees with `go tool pprof -raw` on
//! sample types, totals, and the stacks by address.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::process::Command;

use profbridge_pprof::{dump, parse_legacy};
use profbridge_testkit::{require_tool, TempDir};

use crate::raw_text;

use raw_text::{assert_same_samples, go_tool_pprof_raw, RawText};

const PURPOSE: &str = "the Go runtime legacy profile interop test";

/// Allocates through a few call paths with every allocation sampled, keeps
/// some of it live, parks goroutines in a few places (one of them with
/// pprof labels), then writes the three profiles with debug=1.
const PROGRAM: &str = r#"package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
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
		kept = append(kept, make([]byte, 64<<10))
	}
}

//go:noinline
func viaMiddle(n int) { allocSmall(n) }

//go:noinline
func garbage(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 4096)
		b[0] = byte(i)
	}
}

//go:noinline
func parkOnChannel(ready *sync.WaitGroup, release chan struct{}) {
	ready.Done()
	<-release
}

//go:noinline
func parkOnMutex(ready *sync.WaitGroup, mu *sync.Mutex) {
	ready.Done()
	mu.Lock()
	mu.Unlock()
}

func main() {
	runtime.MemProfileRate = 1
	allocSmall(100)
	allocLarge(10)
	viaMiddle(50)
	garbage(200)

	var ready sync.WaitGroup
	release := make(chan struct{})
	var mu sync.Mutex
	mu.Lock()
	for i := 0; i < 3; i++ {
		ready.Add(2)
		go parkOnChannel(&ready, release)
		go parkOnMutex(&ready, &mu)
	}
	ready.Add(1)
	pprof.Do(context.Background(), pprof.Labels("worker", "labelled"), func(context.Context) {
		go parkOnChannel(&ready, release)
	})
	ready.Wait()
	runtime.GC()

	for _, name := range []string{"heap", "goroutine", "threadcreate"} {
		f, err := os.Create(filepath.Join(os.Args[1], name+".txt"))
		if err == nil {
			err = pprof.Lookup(name).WriteTo(f, 1)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	close(release)
	mu.Unlock()
}
"#;

/// Builds the program once (see `profbridge_testkit::programs`) and runs it
/// to write its profiles into `dir`.
fn write_profiles(dir: &Path) {
    let program = profbridge_testkit::go::build_once("legacy-profiles", PROGRAM)
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
fn parse_legacy_agrees_with_go_tool_pprof_on_go_runtime_debug_1_profiles() {
    if require_tool("go", &["version"], PURPOSE).is_none() {
        return;
    }
    let dir = TempDir::new("go-legacy");
    write_profiles(dir.path());

    // google/pprof reads the heap and goroutine profiles. It rejects the
    // threadcreate one ("malformed profile format"): threads started from
    // the system stack, the main thread always among them, are listed as
    // `N @` with no address, and google/pprof's count-profile line pattern
    // wants at least one. There, parse_legacy must reject the file too.
    for (name, google_pprof_reads_it) in
        [("heap", true), ("goroutine", true), ("threadcreate", false)]
    {
        let path = dir.path().join(format!("{name}.txt"));
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let theirs = go_tool_pprof_raw(&path, dir.path());
        let ours = parse_legacy(&bytes);
        match theirs {
            Ok(raw) => {
                let profile = ours.unwrap_or_else(|e| {
                    panic!("{name}: parse_legacy failed ({e}) where google/pprof reads:\n{text}")
                });
                let theirs = RawText::parse(&raw);
                assert!(!theirs.samples.is_empty(), "{name}: no samples:\n{raw}");
                let ours = RawText::parse(&dump(&profile).unwrap());
                assert_same_samples(&format!("Go {name} profile (debug=1)"), &ours, &theirs);
            }
            Err(stderr) => {
                assert!(
                    !google_pprof_reads_it,
                    "{name}: go tool pprof -raw failed: {stderr}\n{text}"
                );
                assert!(
                    ours.is_err(),
                    "{name}: parse_legacy accepts a file google/pprof rejects ({}):\n{text}",
                    stderr.trim()
                );
            }
        }
    }
}
