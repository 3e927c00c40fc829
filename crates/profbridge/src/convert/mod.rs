//! `profbridge convert`: any input format to pprof, OTLP (protobuf or JSON)
//! or folded stacks; `profbridge symbolize`: the same, with native frames
//! resolved on the way (through OTLP).

mod output;

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use prost::bytes::Bytes;
use prost::Message;

use profbridge_pprof::{
    encode_keeping_raw, encode_packed, sample_type_index, write_folded, Compression, EncodeOptions,
    PackedProfile, Profile, RawStrings,
};
use profbridge_translate::json::request_to_json_string;
use profbridge_translate::otlp::{key_value, string_value, ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{
    jfr_to_otlp, merge_requests, otlp_to_pprof, pprof_to_otlp, validate_request, PprofInput,
    ToOtlpOptions, ToPprofOptions,
};

use profbridge_symbolize::{server_urls, Debuginfod, Report, Sources, Symbolizer};

use crate::cli::{ConvertArgs, OutputFormat, SymbolizeArgs};
use crate::input::{folded_sample_type, load, warn_replaced_strings, Input, Loaded};
use crate::{EXIT_SOME_FAILED, EXIT_USAGE};
use output::Destination;

/// One converted result: bytes, and a suffix when an input gives several.
struct Converted {
    bytes: Vec<u8>,
    part: Option<String>,
}

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    run_with(args, None)
}

pub fn run_symbolizing(args: &SymbolizeArgs) -> Result<ExitCode> {
    let mut urls = Vec::new();
    for list in &args.debuginfod {
        urls.extend(server_urls(list).map_err(|error| anyhow!("--debuginfod: {error}"))?);
    }
    let debuginfod = if urls.is_empty() {
        None
    } else {
        let cache_dir = match &args.debuginfod_cache {
            Some(dir) => dir.clone(),
            None => default_debuginfod_cache()?,
        };
        Some(Debuginfod {
            timeout: args.debuginfod_timeout,
            connect_timeout: args.debuginfod_connect_timeout,
            read_timeout: args.debuginfod_read_timeout,
            cache_max_bytes: args.debuginfod_cache_bytes,
            ..Debuginfod::new(urls, cache_dir)
        })
    };
    let mut symbolizer = Symbolizer::new(Sources {
        root: Some(args.root.clone()),
        process_roots: args.process_roots.clone(),
        debug_dirs: args.debug_dirs.clone(),
        debuginfod,
        kallsyms: args.kallsyms.clone(),
        kernel_notes: args.kernel_notes.clone(),
    });
    run_with(&args.convert, Some(&mut symbolizer))
}

/// `$XDG_CACHE_HOME/profbridge/debuginfod`, else `~/.cache/profbridge/debuginfod`.
fn default_debuginfod_cache() -> Result<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".cache"))
        })
        .ok_or_else(|| {
            anyhow!("neither XDG_CACHE_HOME nor HOME is set: pass --debuginfod-cache")
        })?;
    Ok(base.join("profbridge").join("debuginfod"))
}

fn run_with(args: &ConvertArgs, mut symbolizer: Option<&mut Symbolizer>) -> Result<ExitCode> {
    let command = if symbolizer.is_some() {
        "symbolize"
    } else {
        "convert"
    };
    let format = args
        .to
        .or_else(|| {
            args.output
                .as_deref()
                .and_then(output::format_from_extension)
        })
        .unwrap_or(OutputFormat::Pprof);
    if let Err(message) = check_usage(args, format) {
        eprintln!("profbridge {command}: {message}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    crate::allocator::apply_convert_settings();
    let progress = progress_bar(args.inputs.len());
    let mut failed = 0;
    let mut merged = Vec::new();
    for path in &args.inputs {
        let result = Input::read(path).and_then(|mut input| {
            let requests_or_outputs =
                convert_one(&mut input, args, format, symbolizer.as_deref_mut())?;
            Ok((input, requests_or_outputs))
        });
        match result {
            Ok((_, Step::Request(request))) => merged.push(request),
            Ok((input, Step::Outputs(outputs))) => {
                let destination = Destination::choose(args, &input, format);
                if let Err(error) = destination.write(&outputs_as_pairs(outputs)) {
                    eprintln!("profbridge: {error:#}");
                    failed += 1;
                }
            }
            Err(error) => {
                eprintln!("profbridge: {error:#}");
                failed += 1;
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    if args.merge && !merged.is_empty() {
        let request = merge_requests(merged);
        let bytes = encode_request(&request, format);
        Destination::single(args).write(&[(None, bytes)])?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SOME_FAILED)
    })
}

fn outputs_as_pairs(outputs: Vec<Converted>) -> Vec<(Option<String>, Vec<u8>)> {
    outputs.into_iter().map(|c| (c.part, c.bytes)).collect()
}

/// Options of `convert` that do not go together.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error("--merge makes one OTLP request; use --to otlp or --to otlp-json")]
    MergeNeedsOtlp,
    #[error("--merge writes one output; use -o, not --out-dir")]
    MergeWithOutDir,
    #[error("several inputs need --out-dir DIR, or --merge with OTLP output")]
    SeveralInputsOneOutput,
}

fn check_usage(args: &ConvertArgs, format: OutputFormat) -> Result<(), UsageError> {
    let otlp = matches!(format, OutputFormat::Otlp | OutputFormat::OtlpJson);
    if args.merge && !otlp {
        return Err(UsageError::MergeNeedsOtlp);
    }
    if args.merge && args.out_dir.is_some() {
        return Err(UsageError::MergeWithOutDir);
    }
    if args.inputs.len() > 1 && args.out_dir.is_none() && !args.merge {
        return Err(UsageError::SeveralInputsOneOutput);
    }
    Ok(())
}

fn progress_bar(inputs: usize) -> ProgressBar {
    if inputs < 2 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(inputs as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed}") {
        bar.set_style(style);
    }
    bar
}

enum Step {
    /// Under --merge: this input's part of the merged request.
    Request(ExportProfilesServiceRequest),
    Outputs(Vec<Converted>),
}

fn convert_one(
    input: &mut Input,
    args: &ConvertArgs,
    format: OutputFormat,
    symbolizer: Option<&mut Symbolizer>,
) -> Result<Step> {
    let folded_type = folded_sample_type(args.sample_type.as_deref());
    let loaded =
        load(input, args.from, &folded_type).map_err(|e| anyhow!("{}: {e:#}", input.name))?;
    if !args.original_payload {
        // What was read is freed here unless the profile shares it (it was
        // not gzipped): the conversion after this is the peak of memory.
        input.bytes = Bytes::new();
    }
    let input = &*input;
    let name = &input.name;
    let resource: Vec<KeyValue> = args
        .resource_attrs
        .iter()
        .map(|(key, value)| key_value(key.clone(), string_value(value.clone())))
        .collect();
    let otlp_out = matches!(format, OutputFormat::Otlp | OutputFormat::OtlpJson);
    let outputs = match loaded {
        Loaded::Jfr(converted) if converted.profiles.is_empty() => {
            bail!("{name}: {NO_JFR_PROFILES}")
        }
        Loaded::Jfr(converted) if otlp_out => {
            let mut request = jfr_request(&converted, input, args, &resource)?;
            symbolize(symbolizer, name, &mut request);
            if args.merge {
                return Ok(Step::Request(request));
            }
            vec![encode_request(&request, format)]
        }
        Loaded::Jfr(converted) => {
            // One file per kind of profile, named after it.
            return converted
                .profiles
                .iter()
                .map(|jfr| {
                    let bytes =
                        write_pprof_like(&jfr.profile, &RawStrings::default(), args, format)
                            .map_err(|e| anyhow!("{name}: {}: {e:#}", jfr.kind.name()))?;
                    Ok(Converted {
                        bytes,
                        part: Some(jfr.kind.name().to_owned()),
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(Step::Outputs);
        }
        Loaded::Pprof(profile, raw) if otlp_out => {
            warn_replaced_strings(name, &raw);
            let mut request = pprof_request(&profile, input, args, &resource)?;
            drop(profile);
            symbolize(symbolizer, name, &mut request);
            if args.merge {
                return Ok(Step::Request(request));
            }
            vec![encode_request(&request, format)]
        }
        Loaded::Pprof(profile, raw) if symbolizer.is_some() => {
            // Through OTLP, which keeps everything pprof holds.
            warn_replaced_strings(name, &raw);
            let mut request = pprof_request(&profile, input, args, &resource)?;
            drop(profile);
            symbolize(symbolizer, name, &mut request);
            pprof_outputs(&request, args, format).map_err(|e| anyhow!("{name}: {e:#}"))?
        }
        Loaded::Pprof(profile, raw) if format == OutputFormat::Folded => {
            warn_replaced_strings(name, &raw);
            vec![
                write_pprof_like(&profile.into_profile(), &raw, args, format)
                    .map_err(|e| anyhow!("{name}: {e:#}"))?,
            ]
        }
        Loaded::Pprof(profile, raw) => vec![encode_packed(profile, &raw, &encode_options(args))],
        Loaded::Otlp(mut request) => {
            let validated = validate_request(&request).map_err(|e| anyhow!("{name}: {e}"))?;
            if let Some((_, error)) = validated.invalid.first() {
                bail!("{name}: {error}");
            }
            symbolize(symbolizer, name, &mut request);
            if otlp_out {
                add_resource_attributes(&mut request, &resource);
                if args.merge {
                    return Ok(Step::Request(request));
                }
                vec![encode_request(&request, format)]
            } else {
                pprof_outputs(&request, args, format).map_err(|e| anyhow!("{name}: {e:#}"))?
            }
        }
    };
    let several = outputs.len() > 1;
    Ok(Step::Outputs(
        outputs
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| Converted {
                bytes,
                part: several.then(|| i.to_string()),
            })
            .collect(),
    ))
}

/// pprof or folded bytes of each profile of `request`.
fn pprof_outputs(
    request: &ExportProfilesServiceRequest,
    args: &ConvertArgs,
    format: OutputFormat,
) -> Result<Vec<Vec<u8>>> {
    let options = ToPprofOptions {
        aggregate_timestamps: args.aggregate_timestamps,
        ..ToPprofOptions::default()
    };
    let converted = otlp_to_pprof(request, &options)?;
    converted
        .profiles
        .iter()
        .map(|out| write_pprof_like(&out.profile, &RawStrings::default(), args, format))
        .collect()
}

/// Symbolizes `request` when a symbolizer is given, and says on stderr
/// what it did and which files it could not use.
fn symbolize(
    symbolizer: Option<&mut Symbolizer>,
    name: &str,
    request: &mut ExportProfilesServiceRequest,
) {
    let Some(symbolizer) = symbolizer else {
        return;
    };
    let report = symbolizer.symbolize(request);
    for problem in &report.problems {
        eprintln!("profbridge: {name}: {problem}");
    }
    eprintln!("profbridge: {name}: {}", summary(&report));
}

fn summary(report: &Report) -> String {
    let mut text = format!(
        "{} locations symbolized ({} frames)",
        report.locations_symbolized, report.frames_symbolized
    );
    if report.missed() > 0 {
        let reasons: Vec<String> = report
            .misses
            .iter()
            .map(|(reason, count)| format!("{reason} {count}"))
            .collect();
        text.push_str(&format!(
            ", {} missed ({})",
            report.missed(),
            reasons.join(", ")
        ));
    }
    if report.left_alone > 0 {
        text.push_str(&format!(
            ", {} interpreted or kernel left alone",
            report.left_alone
        ));
    }
    text
}

/// What the command line asks of OTLP output.
fn otlp_options(args: &ConvertArgs) -> ToOtlpOptions {
    ToOtlpOptions {
        scope_name: args.scope_name.clone(),
        aggregate_timestamps: args.aggregate_timestamps,
        original_payload: args.original_payload,
        ..ToOtlpOptions::default()
    }
}

fn pprof_request(
    profile: &PackedProfile,
    input: &Input,
    args: &ConvertArgs,
    resource: &[KeyValue],
) -> Result<ExportProfilesServiceRequest> {
    let options = otlp_options(args);
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile,
            resource_attributes: resource,
            scope: None,
            original_payload: Some(&input.bytes),
        }],
        &options,
    );
    if let Some((_, error)) = converted.rejected.first() {
        bail!("{}: {error}", input.name);
    }
    Ok(converted.request)
}

/// Why a recording converts to nothing.
const NO_JFR_PROFILES: &str = "the JFR recording holds no events that make profiles \
     (execution or wall-clock samples, allocations, monitor enters, parks, mallocs)";

fn jfr_request(
    converted: &profbridge_jfr::Converted,
    input: &Input,
    args: &ConvertArgs,
    resource: &[KeyValue],
) -> Result<ExportProfilesServiceRequest> {
    let options = otlp_options(args);
    let converted = jfr_to_otlp(converted, resource, Some(&input.bytes), &options);
    if let Some((_, error)) = converted.rejected.first() {
        bail!("{}: {error}", input.name);
    }
    Ok(converted.request)
}

fn add_resource_attributes(request: &mut ExportProfilesServiceRequest, resource: &[KeyValue]) {
    if resource.is_empty() {
        return;
    }
    for resource_profiles in &mut request.resource_profiles {
        let attributes = &mut resource_profiles
            .resource
            .get_or_insert_with(Default::default)
            .attributes;
        for kv in resource {
            attributes.retain(|existing| existing.key != kv.key);
            attributes.push(kv.clone());
        }
    }
}

fn encode_request(request: &ExportProfilesServiceRequest, format: OutputFormat) -> Vec<u8> {
    match format {
        OutputFormat::OtlpJson => {
            let mut text = request_to_json_string(request).into_bytes();
            text.push(b'\n');
            text
        }
        _ => request.encode_to_vec(),
    }
}

/// pprof or folded bytes of one profile; pprof keeps the original bytes
/// of strings that were not UTF-8.
fn write_pprof_like(
    profile: &Profile,
    raw: &RawStrings,
    args: &ConvertArgs,
    format: OutputFormat,
) -> Result<Vec<u8>> {
    if format == OutputFormat::Folded {
        let index = folded_type_index(profile, args.sample_type.as_deref())?;
        return Ok(write_folded(profile, index)?.into_bytes());
    }
    Ok(encode_keeping_raw(profile, raw, &encode_options(args)))
}

/// How pprof output is compressed.
fn encode_options(args: &ConvertArgs) -> EncodeOptions {
    let compression = match args.gzip_level {
        0 => Compression::None,
        level => Compression::Gzip { level },
    };
    EncodeOptions { compression }
}

/// The sample type folded output is written for: the one named, else the
/// default sample type, else the last.
fn folded_type_index(profile: &Profile, name: Option<&str>) -> Result<usize> {
    let text = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .map_or("", String::as_str)
    };
    let names: Vec<&str> = profile
        .sample_type
        .iter()
        .map(|vt| text(vt.r#type))
        .collect();
    let wanted = name.map(|n| n.split('/').next().unwrap_or(n));
    match wanted {
        Some(wanted) => sample_type_index(profile, wanted).ok_or_else(|| {
            anyhow!(
                "no sample type named {wanted:?}; the profile has {}",
                names.join(", ")
            )
        }),
        None => profbridge_pprof::default_sample_type_index(profile)
            .ok_or_else(|| anyhow!("the profile has no sample types")),
    }
}
