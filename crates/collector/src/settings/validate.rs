//! Checks across the configuration: pipelines and what they name, listen
//! addresses, and a few option values serde cannot check.

use super::listeners::{check_listeners, Listener};
use super::model::{Config, Section};
use super::parse::Defined;
use super::problems::{join, Problem};

/// Every problem across the configuration.
pub(crate) fn check(config: &Config, defined: &Defined, problems: &mut Vec<Problem>) {
    check_pipelines(config, defined, problems);
    check_service_extensions(config, defined, problems);
    check_listeners(&listeners(config), problems);
    check_options(config, problems);
    check_extension_refs(config, defined, problems);
}

/// A warning for each component no pipeline names (it does not run), and
/// each deprecated shape a component's options are written in.
pub(crate) fn unused_components(config: &Config, defined: &Defined) -> Vec<Problem> {
    let mut warnings = Vec::new();
    for section in Section::ALL {
        for (id, component) in config.section(section) {
            let path = join(section.key(), &id.to_string());
            for warning in component.warnings() {
                warnings.push(Problem::new(join(&path, &warning.path), warning.message));
            }
        }
    }
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
    for id in defined.ids(Section::Extensions) {
        if !config.service.extensions.contains(id) {
            warnings.push(Problem::new(
                join("extensions", &id.to_string()),
                "defined but not listed in service.extensions, so it does not run",
            ));
        }
    }
    warnings
}

/// `service.extensions` names defined extensions, each once.
fn check_service_extensions(config: &Config, defined: &Defined, problems: &mut Vec<Problem>) {
    let listed = &config.service.extensions;
    for (index, id) in listed.iter().enumerate() {
        if listed.iter().take(index).any(|earlier| earlier == id) {
            problems.push(Problem::new(
                "service.extensions",
                format!("\"{id}\" is listed twice"),
            ));
        } else if !defined.ids(Section::Extensions).contains(id) {
            problems.push(Problem::new(
                "service.extensions",
                format!("\"{id}\" is not defined under extensions"),
            ));
        }
    }
}

/// Every extension a component names is defined, runs, and is of the
/// kind the option needs.
fn check_extension_refs(config: &Config, defined: &Defined, problems: &mut Vec<Problem>) {
    for section in [
        Section::Receivers,
        Section::Exporters,
        Section::Processors,
        Section::Extensions,
    ] {
        for (id, component) in config.section(section) {
            let path = join(section.key(), &id.to_string());
            for reference in component.extension_refs() {
                let at = join(&path, &reference.key);
                let wanted = &reference.id;
                if !defined.ids(Section::Extensions).contains(wanted) {
                    problems.push(Problem::new(
                        at,
                        format!("\"{wanted}\" is not defined under extensions"),
                    ));
                } else if !config.service.extensions.contains(wanted) {
                    problems.push(Problem::new(
                        at,
                        format!(
                            "\"{wanted}\" is not listed in service.extensions, so it does not run; add it there"
                        ),
                    ));
                } else if let Some((_, extension)) = config
                    .extensions
                    .iter()
                    .find(|(defined, _)| defined == wanted)
                {
                    if !extension.roles().contains(&reference.role) {
                        problems.push(Problem::new(
                            at,
                            format!("\"{wanted}\" is not {}", reference.role.describe()),
                        ));
                    }
                }
            }
        }
    }
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

/// Every listen address: receivers, then the extensions that run, then
/// the metrics endpoint.
fn listeners(config: &Config) -> Vec<Listener> {
    let mut listeners = Vec::new();
    let running_extensions = config
        .extensions
        .iter()
        .filter(|(id, _)| config.service.extensions.contains(id));
    let components = config
        .receivers
        .iter()
        .map(|component| (Section::Receivers, component))
        .chain(running_extensions.map(|component| (Section::Extensions, component)));
    for (section, (id, component)) in components {
        let path = join(section.key(), &id.to_string());
        for (key, address) in component.listeners() {
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
    let mut owned: Vec<(String, &str, std::path::PathBuf)> = Vec::new();
    // The order problems are listed in.
    for section in [
        Section::Receivers,
        Section::Exporters,
        Section::Processors,
        Section::Extensions,
    ] {
        for (id, component) in config.section(section) {
            let path = join(section.key(), &id.to_string());
            if let Some(file) = component.owned_file(&id.to_string()) {
                if let Some((other, other_key, _)) =
                    owned.iter().find(|(_, _, seen)| *seen == file.path)
                {
                    problems.push(Problem::new(
                        join(&path, file.key),
                        format!(
                            "{} is the {other_key} of {other} too; give each {} its own",
                            file.path.display(),
                            file.owner
                        ),
                    ));
                }
                owned.push((path.clone(), file.key, file.path));
            }
            for problem in component.problems() {
                problems.push(Problem::new(join(&path, &problem.path), problem.message));
            }
        }
    }
    problems.extend(config.service.telemetry.problems());
}
