//! An SVG flame graph of one sample type, drawn by inferno from folded
//! stacks.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use inferno::flamegraph::{from_lines, Options};

use profbridge_pprof::{write_folded, Profile};

use super::summary::SampleTypeSummary;

/// Draws the sample type at `index` of `profile` into `path`.
pub fn write_flame_graph(
    profile: &Profile,
    index: usize,
    sample_type: &SampleTypeSummary,
    title: &str,
    path: &Path,
) -> Result<()> {
    let shown = path.display();
    let folded =
        write_folded(profile, index).with_context(|| format!("{shown}: cannot fold the stacks"))?;
    if folded.is_empty() {
        bail!(
            "{shown}: no flame graph drawn: no stack has a {} value",
            sample_type.name
        );
    }
    let mut options = Options::default();
    options.title = title.to_owned();
    options.count_name = if sample_type.unit.is_empty() {
        "samples".to_owned()
    } else {
        sample_type.unit.clone()
    };
    // Colours from the names, so that the same profile draws the same graph.
    options.hash = true;
    let mut svg = Vec::new();
    from_lines(&mut options, folded.lines(), &mut svg)
        .with_context(|| format!("{shown}: cannot draw"))?;
    std::fs::write(path, svg).with_context(|| format!("{shown}: cannot write"))
}

/// Where the flame graph of the `number`-th of `count` profiles goes:
/// `path` itself for one profile, else `stem-N.ext` with N counting from 1.
pub fn numbered_path(path: &Path, number: usize, count: usize) -> PathBuf {
    if count <= 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(extension) => format!("{stem}-{number}.{}", extension.to_string_lossy()),
        None => format!("{stem}-{number}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_graphs_get_numbered_files() {
        assert_eq!(
            numbered_path(Path::new("out/cpu.svg"), 1, 1),
            Path::new("out/cpu.svg")
        );
        assert_eq!(
            numbered_path(Path::new("out/cpu.svg"), 2, 3),
            Path::new("out/cpu-2.svg")
        );
        assert_eq!(numbered_path(Path::new("cpu"), 1, 2), Path::new("cpu-1"));
    }
}
