//! Checks across the configuration: pipelines and what they name, listen
//! addresses, and a few option values serde cannot check.

use super::listeners::{check_listeners, Listener};
use super::model::{Config, Section};
use super::parse::Defined;
use super::problems::{join, Problem};

/// Every problem across the configuration.
pub(crate) fn check(config: &Config, defined: &Defined, problems: &mut Vec<Problem>) {
    check_pipelines(config, defined, problems);
    check_listeners(&listeners(config), problems);
    check_options(config, problems);
}

/// A warning for each component no pipeline names: it does not run.
pub(crate) fn unused_components(config: &Config, defined: &Defined) -> Vec<Problem> {
    let mut warnings = Vec::new();
    for section in Section::ALL {
        for id in defined.ids(section) {
            let used = config.service.pipelines.iter().any(|(_, pipeline)| {
                pipeline
                    .members()
                    .any(|(s, member)| s == section && member == id)
            });
            if !used {
                warnings.push(Problem::new(
                    join(section.key(), &id.to_string()),
                    "defined but used by no pipeline, so it does not run",
                ));
            }
        }
    }
    warnings
}

fn check_pipelines(config: &Config, defined: &Defined, problems: &mut Vec<Problem>) {
    if defined.pipelines == 0 {
        problems.push(Problem::new(
            "service.pipelines",
            "no pipelines; define at least one, like profiles: {receivers: [otlp], exporters: [file]}",
        ));
    }
    for (name, pipeline) in &config.service.pipelines {
        let path = join("service.pipelines", name);
        if pipeline.receivers.is_empty() {
            problems.push(Problem::new(
                join(&path, "receivers"),
                "a pipeline needs at least one receiver",
            ));
        }
        if pipeline.exporters.is_empty() {
            problems.push(Problem::new(
                join(&path, "exporters"),
                "a pipeline needs at least one exporter",
            ));
        }
        for section in Section::ALL {
            let list_path = join(&path, section.key());
            let listed: Vec<_> = pipeline
                .members()
                .filter(|(s, _)| *s == section)
                .map(|(_, id)| id)
                .collect();
            for (index, id) in listed.iter().enumerate() {
                if listed.iter().take(index).any(|earlier| earlier == id) {
                    problems.push(Problem::new(
                        list_path.as_str(),
                        format!("\"{id}\" is listed twice"),
                    ));
                } else if !defined.ids(section).contains(id) && !defined.connectors.contains(id) {
                    problems.push(Problem::new(
                        list_path.as_str(),
                        format!("\"{id}\" is not defined under {}", section.key()),
                    ));
                }
            }
        }
    }
}

/// Every listen address, receivers first, then the metrics endpoint.
fn listeners(config: &Config) -> Vec<Listener> {
    let mut listeners = Vec::new();
    for (id, receiver) in &config.receivers {
        let path = join("receivers", &id.to_string());
        for (key, address) in receiver.listeners() {
            listeners.push(Listener {
                path: format!("{path}.{key}"),
                address,
            });
        }
    }
    if let Some((key, address)) = config.service.telemetry.metrics.endpoint_at() {
        listeners.push(Listener {
            path: format!("service.telemetry.metrics.{key}"),
            address,
        });
    }
    listeners
}

fn check_options(config: &Config, problems: &mut Vec<Problem>) {
    let mut owned: Vec<(String, std::path::PathBuf)> = Vec::new();
    // Receivers, exporters, processors: the order problems are listed in.
    for section in [Section::Receivers, Section::Exporters, Section::Processors] {
        for (id, component) in config.section(section) {
            let path = join(section.key(), &id.to_string());
            if let Some(file) = component.owned_file(&id.to_string()) {
                if let Some((other, _)) = owned.iter().find(|(_, seen)| *seen == file.path) {
                    problems.push(Problem::new(
                        join(&path, file.key),
                        format!(
                            "{} is the {} of {other} too; give each {} its own",
                            file.path.display(),
                            file.key,
                            file.owner
                        ),
                    ));
                }
                owned.push((path.clone(), file.path));
            }
            for problem in component.problems() {
                problems.push(Problem::new(
                    format!("{path}.{}", problem.path),
                    problem.message,
                ));
            }
        }
    }
    problems.extend(config.service.telemetry.problems());
}
