//! profbridge's symbolizer fetching through a real debuginfod server
//! (Debian's `debuginfod`, elfutils) on loopback, checked against
//! `llvm-symbolizer --inlines` as tests/oracle.rs does; its on-disk cache
//! and its negative cache with the server stopped; and a server that never
//! answers, bounded by the read timeout and then left alone.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use profbridge_symbolize::{
    Debuginfod, FetchError, FileError, MissReason, Report, Sources, Symbolizer,
};
use profbridge_testkit::debuginfod::DebuginfodServer;
use profbridge_testkit::native::add_build_id;
use profbridge_testkit::native::{
    assert_matches_oracle, build_id, gperftools_cpu_profile_of, locations_of, native_programs,
    NativePrograms,
};
use profbridge_testkit::{require_tool, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use support::request_of;

const PURPOSE: &str = "the symbolizer's tests against a debuginfod server";

/// A build id no server has.
const UNKNOWN_BUILD_ID: &str = "00112233445566778899aabbccddeeff00112233";

fn debuginfod_sources(urls: Vec<String>, cache_dir: &Path, root: &Path) -> Sources {
    Sources {
        root: Some(root.to_path_buf()),
        debuginfod: Some(Debuginfod {
            timeout: Duration::from_secs(10),
            ..Debuginfod::new(urls, cache_dir.to_path_buf())
        }),
        ..Sources::default()
    }
}

/// The PIE program's gperftools `profile` as OTLP, the program's and the
/// library's mappings each given its build id.
fn profile_by_build_id(programs: &NativePrograms, profile: &[u8]) -> ExportProfilesServiceRequest {
    let mut request = request_of(profile);
    for file in [&programs.pie, &programs.library] {
        add_build_id(&mut request, file, &build_id(file));
    }
    request
}

/// The same `profile` with the program's mappings given a build id no
/// server has.
fn profile_by_unknown_build_id(
    programs: &NativePrograms,
    profile: &[u8],
) -> ExportProfilesServiceRequest {
    let mut request = request_of(profile);
    add_build_id(&mut request, &programs.pie, UNKNOWN_BUILD_ID);
    request
}

#[test]
fn files_fetched_from_debuginfod_resolve_as_llvm_symbolizer_says_and_are_cached() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    if require_tool("debuginfod", &["--version"], PURPOSE).is_none() {
        return;
    }
    let dir = TempDir::new("symbolize-debuginfod");
    // The mapping paths do not exist under the root.
    let server = DebuginfodServer::serving_programs(&programs, dir.path());
    // Profiled while the server indexes the folder.
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let ids = [build_id(&programs.pie), build_id(&programs.library)];
    server.wait_for(&ids);

    let cache = dir.path().join("cache");
    let root = dir.path().join("empty-root");
    let mut request = profile_by_build_id(&programs, &profile);
    let mut unknown = profile_by_unknown_build_id(&programs, &profile);

    let mut symbolizer =
        Symbolizer::new(debuginfod_sources(vec![server.url.clone()], &cache, &root));
    let report = symbolizer.symbolize(&mut request);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let (compared, inlined) = assert_matches_oracle(&request, &programs.pie, &programs.pie);
    assert!(compared >= 3, "{compared} locations of the program");
    assert!(inlined >= 1, "no inlined frames");
    let (in_library, _) = assert_matches_oracle(&request, &programs.library, &programs.library);
    assert!(in_library >= 1, "no samples in our shared library");
    for (id, kind) in [
        (&ids[0], "executable"),
        (&ids[0], "debuginfo"),
        (&ids[1], "executable"),
    ] {
        assert!(
            cache.join(id).join(kind).is_file(),
            "{id}/{kind} not cached"
        );
    }
    let report = symbolizer.symbolize(&mut unknown);
    assert_unknown_missed(&report, &unknown, &programs.pie);
    assert!(cache
        .join(UNKNOWN_BUILD_ID)
        .join("executable.missing")
        .is_file());

    // With the server stopped, a new symbolizer on the same cache: the
    // same frames, and the 404 remembered; a request would have failed
    // (connection refused) and been reported.
    drop(server);
    let mut again = profile_by_build_id(&programs, &profile);
    let mut symbolizer = Symbolizer::new(debuginfod_sources(
        vec![format!("http://{}", closed_address())],
        &cache,
        &root,
    ));
    let report = symbolizer.symbolize(&mut again);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_matches_oracle(&again, &programs.pie, &programs.pie);
    assert_matches_oracle(&again, &programs.library, &programs.library);
    let mut unknown = profile_by_unknown_build_id(&programs, &profile);
    let report = symbolizer.symbolize(&mut unknown);
    assert_unknown_missed(&report, &unknown, &programs.pie);
}

/// No location of `program` (whose build id no server has) resolved, each
/// counted as not found, and no server failed.
fn assert_unknown_missed(report: &Report, request: &ExportProfilesServiceRequest, program: &Path) {
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let locations = locations_of(request, program);
    assert!(!locations.is_empty());
    assert!(locations.iter().all(|(_, lines)| lines.is_empty()));
    let not_found = report.misses.get(&MissReason::FileNotFound).copied();
    assert!(
        not_found >= Some(locations.len() as u64),
        "{:?}",
        report.misses
    );
    assert_eq!(report.misses.get(&MissReason::DebuginfodFailed), None);
}

/// An address nothing listens on.
fn closed_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn a_server_that_never_answers_costs_one_read_timeout_and_is_then_left_alone() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-debuginfod-hang");
    // Connections complete in the kernel's backlog; nothing ever answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let mut request = profile_by_build_id(&programs, &profile);
    let mut sources = debuginfod_sources(
        vec![url],
        &dir.path().join("cache"),
        &dir.path().join("empty-root"),
    );
    if let Some(debuginfod) = sources.debuginfod.as_mut() {
        debuginfod.read_timeout = Duration::from_millis(300);
    }
    let report = Symbolizer::new(sources).symbolize(&mut request);
    let wanted = (locations_of(&request, &programs.pie).len()
        + locations_of(&request, &programs.library).len()) as u64;
    assert!(wanted > 0);
    assert_eq!(
        report.misses.get(&MissReason::DebuginfodFailed).copied(),
        Some(wanted),
        "{:?}",
        report.misses
    );
    assert_eq!(report.locations_symbolized, 0);
    // The first file waited for the server and named it; the second was
    // not asked (the server rests), and neither is asked again.
    let timed_out = report
        .problems
        .iter()
        .filter(|p| {
            matches!(
                p,
                FileError::Debuginfod {
                    source: FetchError::TimedOut(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(timed_out, 1, "{:?}", report.problems);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    listener.set_nonblocking(true).unwrap();
    assert_eq!(std::iter::from_fn(|| listener.accept().ok()).count(), 1);
}

#[test]
fn the_request_time_budget_cuts_a_fetch_short_without_blaming_the_server() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-debuginfod-budget");
    // Nothing ever answers, and the server's own timeouts are far away:
    // only the request's budget ends the wait.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let mut sources = debuginfod_sources(
        vec![url],
        &dir.path().join("cache"),
        &dir.path().join("empty-root"),
    );
    if let Some(debuginfod) = sources.debuginfod.as_mut() {
        debuginfod.timeout = Duration::from_secs(600);
        debuginfod.read_timeout = Duration::from_secs(600);
    }
    let mut symbolizer = Symbolizer::new(sources);
    for round in 1..=2 {
        let mut request = profile_by_build_id(&programs, &profile);
        let deadline = std::time::Instant::now() + Duration::from_millis(300);
        let report = symbolizer.symbolize_until(&mut request, Some(deadline));
        let wanted = (locations_of(&request, &programs.pie).len()
            + locations_of(&request, &programs.library).len()) as u64;
        // Every location of our files is out of time, none is the
        // server's failure, and nothing is reported against it.
        assert!(
            report.misses.get(&MissReason::OutOfTime).copied() >= Some(wanted),
            "{:?}",
            report.misses
        );
        assert_eq!(report.misses.get(&MissReason::DebuginfodFailed), None);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        // The server was not set aside: each request asks it again.
        listener.set_nonblocking(true).unwrap();
        let asked = std::iter::from_fn(|| listener.accept().ok()).count();
        listener.set_nonblocking(false).unwrap();
        assert_eq!(asked, 1, "round {round}");
    }
}

#[test]
fn a_file_a_server_failed_to_give_is_asked_for_again_after_the_rest() {
    let Some(programs) = native_programs(PURPOSE) else {
        return;
    };
    let dir = TempDir::new("symbolize-debuginfod-rest");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let profile = gperftools_cpu_profile_of(&programs.pie, dir.path());
    let mut sources = debuginfod_sources(
        vec![url],
        &dir.path().join("cache"),
        &dir.path().join("empty-root"),
    );
    let rest = Duration::from_secs(1);
    if let Some(debuginfod) = sources.debuginfod.as_mut() {
        debuginfod.read_timeout = Duration::from_millis(100);
        debuginfod.rest = rest;
    }
    let mut symbolizer = Symbolizer::new(sources);
    let asked = || {
        listener.set_nonblocking(true).unwrap();
        let count = std::iter::from_fn(|| listener.accept().ok()).count();
        listener.set_nonblocking(false).unwrap();
        count
    };
    let mut symbolize = || {
        let mut request = profile_by_build_id(&programs, &profile);
        symbolizer.symbolize(&mut request)
    };
    // Failed once; within the rest, the failure is kept and nobody asks.
    let first = symbolize();
    assert!(first.misses.contains_key(&MissReason::DebuginfodFailed));
    let within = symbolize();
    assert!(within.misses.contains_key(&MissReason::DebuginfodFailed));
    assert_eq!(asked(), 1);
    // After it, the file is looked for again and the server asked again.
    std::thread::sleep(rest + rest / 4);
    let after = symbolize();
    assert!(after.misses.contains_key(&MissReason::DebuginfodFailed));
    assert_eq!(asked(), 1);
}
