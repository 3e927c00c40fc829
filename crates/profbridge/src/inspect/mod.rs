//! `profbridge inspect`: what a profile holds. Functions are counted as
//! google/pprof's `-top` counts them (docs/cli-inspect.md).

mod flamegraph;
mod frame_types;
mod functions;
mod json;
mod prune;
mod source;
mod summary;
mod text;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use profbridge_pprof::{dump_bytes, Profile};

use crate::cli::{InspectArgs, InspectFormat};
use crate::EXIT_SOME_FAILED;
use flamegraph::{numbered_path, write_flame_graph};
use json::JsonReport;
use prune::pruned_copy;
use source::{read_source, InspectedProfile, Source};
use summary::Summary;
use text::TextReport;

pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    let source = read_source(&args.input, args.from)?;
    for reason in &source.rejected {
        eprintln!("profbridge: {}: {reason}", source.name);
    }
    if source.profiles.is_empty() {
        bail!("{}: holds no profiles", source.name);
    }
    let needs_summaries = args.format != InspectFormat::Raw || args.flamegraph.is_some();
    let inspections: Vec<Inspection> = if needs_summaries {
        source
            .profiles
            .iter()
            .map(|profile| Inspection::new(&source, profile, args))
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let output = match args.format {
        InspectFormat::Raw => raw_text(&source)?,
        InspectFormat::Text => text(&source, &inspections, args).into_bytes(),
        InspectFormat::Json => json(&source, &inspections, args)?.into_bytes(),
    };
    if let Some(path) = &args.flamegraph {
        for (number, inspection) in inspections.iter().enumerate() {
            inspection.flame_graph(
                &source,
                args,
                &numbered_path(path, number + 1, inspections.len()),
            )?;
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&output)
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")?;
    let code = if source.rejected.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SOME_FAILED)
    };
    Ok(code)
}

/// google/pprof's `Profile.String()` of each profile, with a heading per
/// profile when there are several. Bytes: strings that were not UTF-8 are
/// printed as the file holds them, as Go prints them.
fn raw_text(source: &Source) -> Result<Vec<u8>> {
    let several = source.profiles.len() > 1;
    let mut out = Vec::new();
    for inspected in &source.profiles {
        if let (true, Some(origin)) = (several, &inspected.origin) {
            out.extend_from_slice(format!("== {origin} ==\n").as_bytes());
        }
        out.extend_from_slice(
            &dump_bytes(&inspected.profile, &inspected.raw).with_context(|| source.name.clone())?,
        );
    }
    Ok(out)
}

fn text(source: &Source, inspections: &[Inspection], args: &InspectArgs) -> String {
    let reports = inspections.iter().map(|inspection| {
        TextReport {
            file: &source.name,
            format: &source.format,
            origin: inspection.inspected.origin.as_ref(),
            summary: &inspection.summary,
            top: args.top,
        }
        .render()
    });
    reports.collect::<Vec<_>>().join("\n")
}

/// One object per profile; an array of them when there are several.
fn json(source: &Source, inspections: &[Inspection], args: &InspectArgs) -> Result<String> {
    let values: Vec<serde_json::Value> = inspections
        .iter()
        .map(|inspection| {
            JsonReport {
                file: &source.name,
                format: &source.format,
                origin: inspection.inspected.origin.as_ref(),
                summary: &inspection.summary,
                top: args.top,
            }
            .to_value()
        })
        .collect();
    let value = match <[_; 1]>::try_from(values) {
        Ok([one]) => one,
        Err(several) => serde_json::Value::Array(several),
    };
    let mut json = serde_json::to_string_pretty(&value).context("cannot write JSON")?;
    json.push('\n');
    Ok(json)
}

/// One profile, pruned as google/pprof prunes it, and its summary.
struct Inspection<'a> {
    inspected: &'a InspectedProfile,
    pruned: Profile,
    summary: Summary,
}

impl<'a> Inspection<'a> {
    fn new(source: &Source, inspected: &'a InspectedProfile, args: &InspectArgs) -> Result<Self> {
        let (pruned, warning) = pruned_copy(&inspected.profile);
        if let Some(warning) = warning {
            eprintln!("profbridge: {}: {warning}; no frames dropped", source.name);
        }
        let summary = Summary::new(&inspected.profile, &pruned, args.sample_type.as_deref())
            .with_context(|| source.name.clone())?;
        Ok(Self {
            inspected,
            pruned,
            summary,
        })
    }

    fn flame_graph(&self, source: &Source, args: &InspectArgs, path: &Path) -> Result<()> {
        let (Some(index), Some(sample_type)) =
            (self.summary.selected, self.summary.selected_type())
        else {
            bail!("{}: no sample types, so no flame graph", source.name);
        };
        let file_name = args.input.file_name().map_or_else(
            || source.name.clone(),
            |name| name.to_string_lossy().into_owned(),
        );
        let title = match &self.inspected.origin {
            Some(origin) => format!("{file_name} ({origin}): {}", sample_type.name),
            None => format!("{file_name}: {}", sample_type.name),
        };
        write_flame_graph(&self.pruned, index, sample_type, &title, path)
    }
}
