//! `go tool pprof -raw` reads what profbridge writes and agrees with our dump.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use profbridge_pprof::{canonicalize, decode, dump, encode, DecodeOptions, EncodeOptions};
use profbridge_testkit::{corpus_files, require_tool, CorpusFile, TempDir};

use crate::raw_text;

use raw_text::{go_tool_pprof_raw, RawText};

#[test]
fn go_tool_pprof_reads_our_gzip_output_of_each_corpus_proto() {
    let protos: Vec<CorpusFile> = corpus_files()
        .into_iter()
        .filter(CorpusFile::is_gzip)
        .collect();
    if protos.is_empty() {
        return;
    }
    if require_tool("go", &["version"], "the go tool pprof interop test").is_none() {
        return;
    }
    let dir = TempDir::new("go-interop");
    for file in protos {
        let profile = decode(&file.bytes, &DecodeOptions::default()).unwrap();
        let ours = RawText::parse(&dump(&profile).unwrap());
        let written = dir.path().join(format!("{}.pb.gz", file.name));
        std::fs::write(&written, encode(&profile, &EncodeOptions::default())).unwrap();

        let raw = go_tool_pprof_raw(&written, dir.path()).unwrap_or_else(|stderr| {
            panic!("go tool pprof -raw {} failed: {stderr}", written.display())
        });
        let theirs = RawText::parse(&raw);
        assert_eq!(
            theirs.sample_types, ours.sample_types,
            "{}: sample types",
            file.name
        );
        assert_eq!(
            theirs.totals(),
            ours.totals(),
            "{}: totals per sample type",
            file.name
        );
        // pprof merges samples with equal stacks and labels when it loads a
        // profile, as our canonical form does.
        let merged = canonicalize(&profile).unwrap().sample.len();
        assert_eq!(
            theirs.samples.len(),
            merged,
            "{}: merged sample count",
            file.name
        );
    }
}
