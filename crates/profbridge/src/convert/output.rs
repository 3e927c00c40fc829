//! Where converted bytes go: a file, standard output, or a folder.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::{ConvertArgs, OutputFormat};
use crate::input::Input;

/// The output format an output path's extension implies.
pub fn format_from_extension(path: &Path) -> Option<OutputFormat> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if name.ends_with(".json") {
        Some(OutputFormat::OtlpJson)
    } else if name.ends_with(".otlp") || name.ends_with(".otlp.pb") || name.ends_with(".binpb") {
        Some(OutputFormat::Otlp)
    } else if name.ends_with(".folded") || name.ends_with(".txt") {
        Some(OutputFormat::Folded)
    } else if name.ends_with(".pb.gz") || name.ends_with(".pprof") || name.ends_with(".pb") {
        Some(OutputFormat::Pprof)
    } else {
        None
    }
}

fn extension(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Pprof => "pb.gz",
        OutputFormat::Otlp => "otlp.pb",
        OutputFormat::OtlpJson => "otlp.json",
        OutputFormat::Folded => "folded",
    }
}

/// An input's file name without the extensions profbridge knows.
fn stem(input: &Input) -> String {
    let name = input
        .path
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("stdin");
    let mut stem = name;
    for known in [
        ".gz", ".pb", ".pprof", ".prof", ".otlp", ".json", ".binpb", ".folded", ".txt", ".jfr",
    ] {
        if let Some(shorter) = stem.strip_suffix(known).filter(|s| !s.is_empty()) {
            stem = shorter;
        }
    }
    stem.to_owned()
}

pub enum Destination {
    Stdout,
    File(PathBuf),
    Folder {
        dir: PathBuf,
        stem: String,
        extension: &'static str,
    },
}

impl Destination {
    pub fn choose(args: &ConvertArgs, input: &Input, format: OutputFormat) -> Self {
        match &args.out_dir {
            Some(dir) => Self::Folder {
                dir: dir.clone(),
                stem: stem(input),
                extension: extension(format),
            },
            None => Self::single(args),
        }
    }

    pub fn single(args: &ConvertArgs) -> Self {
        match &args.output {
            Some(path) if path != Path::new("-") => Self::File(path.clone()),
            _ => Self::Stdout,
        }
    }

    /// Writes each part; several parts need a folder.
    pub fn write(&self, parts: &[(Option<String>, Vec<u8>)]) -> Result<()> {
        match self {
            Self::Folder {
                dir,
                stem,
                extension,
            } => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("{}: cannot create", dir.display()))?;
                for (part, bytes) in parts {
                    let name = match part {
                        Some(part) => format!("{stem}.{part}.{extension}"),
                        None => format!("{stem}.{extension}"),
                    };
                    let path = dir.join(name);
                    std::fs::write(&path, bytes)
                        .with_context(|| format!("{}: cannot write", path.display()))?;
                }
                Ok(())
            }
            _ if parts.len() > 1 => {
                bail!(
                    "the input holds {} profiles; use --out-dir to write one file each",
                    parts.len()
                )
            }
            Self::File(path) => {
                let bytes = parts.first().map(|(_, b)| b.as_slice()).unwrap_or_default();
                std::fs::write(path, bytes)
                    .with_context(|| format!("{}: cannot write", path.display()))
            }
            Self::Stdout => {
                let bytes = parts.first().map(|(_, b)| b.as_slice()).unwrap_or_default();
                let mut stdout = std::io::stdout().lock();
                stdout
                    .write_all(bytes)
                    .and_then(|()| stdout.flush())
                    .context("standard output")
            }
        }
    }
}
