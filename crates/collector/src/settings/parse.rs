//! From the value tree to the typed [`Config`], one section and one
//! component at a time, so that every broken component is reported.

use config::{Map, Value, ValueKind};
use serde::Deserialize;

use super::catalog::Catalog;
use super::component_id::ComponentId;
use super::de::{describe, deserialize_at};
use super::embed::deserialize_embedding;
use super::model::{Config, PipelineConfig, Section, ServiceConfig};
use super::problems::{join, Problem};
use super::unavailable;

/// Every component id defined in the file, including those whose options
/// are broken, so that pipelines naming them are not reported twice.
#[derive(Debug, Default)]
pub(crate) struct Defined {
    pub receivers: Vec<ComponentId>,
    pub processors: Vec<ComponentId>,
    pub exporters: Vec<ComponentId>,
    pub extensions: Vec<ComponentId>,
    /// Connectors, all refused: pipelines naming them as receivers or
    /// exporters are not reported again.
    pub connectors: Vec<ComponentId>,
    /// How many pipelines the file writes, broken or not.
    pub pipelines: usize,
}

impl Defined {
    pub fn of(config: &Config) -> Self {
        Self {
            receivers: config.receivers.iter().map(|(id, _)| id.clone()).collect(),
            processors: config.processors.iter().map(|(id, _)| id.clone()).collect(),
            exporters: config.exporters.iter().map(|(id, _)| id.clone()).collect(),
            extensions: config.extensions.iter().map(|(id, _)| id.clone()).collect(),
            connectors: Vec::new(),
            pipelines: config.service.pipelines.len(),
        }
    }

    pub fn ids(&self, section: Section) -> &[ComponentId] {
        match section {
            Section::Receivers => &self.receivers,
            Section::Processors => &self.processors,
            Section::Exporters => &self.exporters,
            Section::Extensions => &self.extensions,
        }
    }
}

const TOP_LEVEL_KEYS: &str = "receivers, processors, exporters, extensions, service";
const SERVICE_KEYS: &str = "extensions, pipelines, telemetry";

/// The typed configuration of what parsed, what was defined, and the
/// problems of what did not parse.
pub(crate) fn parse_root(
    root: Map<String, Value>,
    catalog: &dyn Catalog,
    problems: &mut Vec<Problem>,
) -> (Config, Defined) {
    let mut config = Config {
        receivers: Vec::new(),
        processors: Vec::new(),
        exporters: Vec::new(),
        extensions: Vec::new(),
        service: ServiceConfig::default(),
    };
    let mut defined = Defined::default();
    for (key, value) in root {
        match key.as_str() {
            "receivers" | "processors" | "exporters" | "extensions" => {
                let section = match key.as_str() {
                    "receivers" => Section::Receivers,
                    "processors" => Section::Processors,
                    "exporters" => Section::Exporters,
                    _ => Section::Extensions,
                };
                let defined_ids = match section {
                    Section::Receivers => &mut defined.receivers,
                    Section::Processors => &mut defined.processors,
                    Section::Exporters => &mut defined.exporters,
                    Section::Extensions => &mut defined.extensions,
                };
                for (id, path, value) in components(&key, value, defined_ids, problems) {
                    match catalog.parse(section, &id.kind, value, &path) {
                        Some(Ok(options)) => config.section_mut(section).push((id, options)),
                        Some(Err(problem)) => problems.push(problem),
                        None => problems.push(
                            unavailable::refusal(&path, section.into(), &id.kind)
                                .unwrap_or_else(|| unknown_type(&path, section, &id.kind, catalog)),
                        ),
                    }
                }
            }
            "connectors" => {
                for (id, path, _) in components(&key, value, &mut defined.connectors, problems) {
                    problems.push(unavailable::connector_refusal(&path, &id.kind));
                }
            }
            "service" => config.service = parse_service(value, &mut defined.pipelines, problems),
            _ => problems.push(unknown_key(&key, TOP_LEVEL_KEYS)),
        }
    }
    (config, defined)
}

/// The entries of a section, with their ids parsed (and recorded in
/// `defined`) and their key paths.
fn components(
    section: &str,
    value: Value,
    defined: &mut Vec<ComponentId>,
    problems: &mut Vec<Problem>,
) -> Vec<(ComponentId, String, Value)> {
    let mut found = Vec::new();
    for (key, value) in entries(section, value, problems) {
        let path = join(section, &key);
        match key.parse::<ComponentId>() {
            Ok(id) => {
                defined.push(id.clone());
                found.push((id, path, value));
            }
            Err(error) => problems.push(Problem::new(path, error.to_string())),
        }
    }
    found
}

/// The keys and values of the section at `path`; nothing for an empty one.
fn entries(path: &str, value: Value, problems: &mut Vec<Problem>) -> Vec<(String, Value)> {
    match value.kind {
        ValueKind::Table(table) => table.into_iter().collect(),
        ValueKind::Nil => Vec::new(),
        other => {
            let found = describe(&other);
            problems.push(Problem::new(
                path,
                format!("expected a section of keys and values, found {found}"),
            ));
            Vec::new()
        }
    }
}

fn unknown_type(path: &str, section: Section, kind: &str, catalog: &dyn Catalog) -> Problem {
    let known = catalog.types(section);
    let known = if known.is_empty() {
        "none yet".to_owned()
    } else {
        known.join(", ")
    };
    let role = section.key().trim_end_matches('s');
    Problem::new(
        path,
        format!("unknown {role} type {kind:?}; known: {known}"),
    )
}

fn unknown_key(path: &str, expected: &str) -> Problem {
    Problem::new(path, format!("unknown key; expected one of {expected}"))
}

fn parse_service(
    value: Value,
    pipeline_count: &mut usize,
    problems: &mut Vec<Problem>,
) -> ServiceConfig {
    let mut service = ServiceConfig::default();
    for (key, value) in entries("service", value, problems) {
        let path = join("service", &key);
        match key.as_str() {
            "pipelines" => {
                for (name, value) in entries(&path, value, problems) {
                    *pipeline_count += 1;
                    let pipeline_path = join(&path, &name);
                    if let Some(pipeline) = parse_pipeline(&name, value, &pipeline_path, problems) {
                        service.pipelines.push((name, pipeline));
                    }
                }
            }
            "telemetry" => match deserialize_embedding(value, &path) {
                Ok(telemetry) => service.telemetry = telemetry,
                Err(problem) => problems.push(problem),
            },
            "extensions" => service.extensions = parse_id_list(value, &path, problems),
            _ => problems.push(unknown_key(&path, SERVICE_KEYS)),
        }
    }
    service
}

/// A list of component ids, each bad one a problem at `path`.
fn parse_id_list(value: Value, path: &str, problems: &mut Vec<Problem>) -> Vec<ComponentId> {
    let names: Vec<String> = match deserialize_at(value, path) {
        Ok(names) => names,
        Err(problem) => {
            problems.push(problem);
            return Vec::new();
        }
    };
    names
        .into_iter()
        .filter_map(|name| match name.parse::<ComponentId>() {
            Ok(id) => Some(id),
            Err(error) => {
                problems.push(Problem::new(path, error.to_string()));
                None
            }
        })
        .collect()
}

/// A pipeline as written: lists of ids as text.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PipelineText {
    receivers: Vec<String>,
    processors: Vec<String>,
    exporters: Vec<String>,
    #[serde(default)]
    queue: super::queue::QueueConfig,
}

/// Parses a pipeline; keeps it (to check what it names) even when its key
/// is wrong.
fn parse_pipeline(
    name: &str,
    value: Value,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<PipelineConfig> {
    if !is_pipeline_key(name) {
        problems.push(Problem::new(
            path,
            "a pipeline's key is profiles or profiles/NAME (profbridge carries profiles only)",
        ));
    }
    let text: PipelineText = match deserialize_at(value, path) {
        Ok(text) => text,
        Err(problem) => {
            problems.push(problem);
            return None;
        }
    };
    let mut ids = |section: Section, names: Vec<String>| -> Vec<ComponentId> {
        let list_path = join(path, section.key());
        names
            .into_iter()
            .filter_map(|name| match name.parse::<ComponentId>() {
                Ok(id) => Some(id),
                Err(error) => {
                    problems.push(Problem::new(list_path.as_str(), error.to_string()));
                    None
                }
            })
            .collect()
    };
    Some(PipelineConfig {
        receivers: ids(Section::Receivers, text.receivers),
        processors: ids(Section::Processors, text.processors),
        exporters: ids(Section::Exporters, text.exporters),
        queue: text.queue,
    })
}

fn is_pipeline_key(name: &str) -> bool {
    name.parse::<ComponentId>()
        .is_ok_and(|id| id.kind == "profiles")
}
