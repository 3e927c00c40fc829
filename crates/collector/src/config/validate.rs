//! Checks across the configuration: pipelines and what they name, listen
//! addresses, and a few option values serde cannot check.

use super::listeners::{check_listeners, Listener};
use super::model::{Config, ExporterConfig, ReceiverConfig, Section};
use super::parse::Defined;
use super::problems::{join, Problem};

const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

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
                } else if !defined.ids(section).contains(id) {
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
        match receiver {
            ReceiverConfig::Otlp(otlp) => {
                if let Some(grpc) = &otlp.protocols.grpc {
                    listeners.push(Listener {
                        path: format!("{path}.protocols.grpc.endpoint"),
                        address: grpc.endpoint.clone(),
                    });
                }
                if let Some(http) = &otlp.protocols.http {
                    listeners.push(Listener {
                        path: format!("{path}.protocols.http.endpoint"),
                        address: http.endpoint.clone(),
                    });
                }
            }
            ReceiverConfig::Pprof(pprof) => listeners.push(Listener {
                path: format!("{path}.endpoint"),
                address: pprof.endpoint.clone(),
            }),
            ReceiverConfig::Pyroscope(pyroscope) => listeners.push(Listener {
                path: format!("{path}.endpoint"),
                address: pyroscope.endpoint.clone(),
            }),
            ReceiverConfig::File(_) => {}
        }
    }
    let metrics = &config.service.telemetry.metrics.address;
    if !metrics.is_empty() {
        listeners.push(Listener {
            path: "service.telemetry.metrics.address".to_owned(),
            address: metrics.clone(),
        });
    }
    listeners
}

fn check_options(config: &Config, problems: &mut Vec<Problem>) {
    let mut checkpoints: Vec<(String, std::path::PathBuf)> = Vec::new();
    for (id, receiver) in &config.receivers {
        let option_problems = match receiver {
            ReceiverConfig::Otlp(otlp) => {
                if otlp.protocols.grpc.is_none() && otlp.protocols.http.is_none() {
                    problems.push(Problem::new(
                        format!("receivers.{id}.protocols"),
                        "no protocol is on; add grpc:, http: or both (with no options they listen on 127.0.0.1:4317 and :4318)",
                    ));
                }
                let mut found = Vec::new();
                if let Some(grpc) = &otlp.protocols.grpc {
                    found.extend(prefixed("protocols.grpc", grpc.problems()));
                    found.extend(prefixed(
                        "protocols.grpc",
                        crate::tls::config::security_problems(
                            grpc.tls.as_deref(),
                            grpc.auth.as_deref(),
                        ),
                    ));
                }
                if let Some(http) = &otlp.protocols.http {
                    found.extend(prefixed("protocols.http", http.problems()));
                    found.extend(prefixed(
                        "protocols.http",
                        crate::tls::config::security_problems(
                            http.tls.as_deref(),
                            http.auth.as_deref(),
                        ),
                    ));
                }
                found
            }
            ReceiverConfig::Pprof(pprof) => pprof.problems(),
            ReceiverConfig::Pyroscope(pyroscope) => pyroscope.problems(),
            ReceiverConfig::File(file) => {
                let path = file.checkpoint_path(&id.to_string());
                if let Some((other, _)) = checkpoints.iter().find(|(_, seen)| *seen == path) {
                    problems.push(Problem::new(
                        format!("receivers.{id}.checkpoint"),
                        format!(
                            "{} is the checkpoint of receivers.{other} too; give each file receiver its own",
                            path.display()
                        ),
                    ));
                }
                checkpoints.push((id.to_string(), path));
                file.problems()
            }
        };
        for problem in option_problems {
            problems.push(Problem::new(
                format!("receivers.{id}.{}", problem.path),
                problem.message,
            ));
        }
    }
    for (id, exporter) in &config.exporters {
        match exporter {
            ExporterConfig::File(file) => {
                if file.path.trim().is_empty() {
                    problems.push(Problem::new(
                        format!("exporters.{id}.path"),
                        "is empty; name the directory to write under",
                    ));
                }
                if let Some(template) = &file.path_template {
                    if let Err(error) = crate::exporters::file::PathTemplate::parse(template) {
                        problems.push(Problem::new(
                            format!("exporters.{id}.path_template"),
                            error.to_string(),
                        ));
                    }
                }
                if file.gzip_level > 9 {
                    problems.push(Problem::new(
                        format!("exporters.{id}.gzip_level"),
                        format!("is {}; use 0 (stored) to 9 (smallest)", file.gzip_level),
                    ));
                }
            }
            ExporterConfig::Otlp(otlp) if otlp.endpoint.trim().is_empty() => {
                problems.push(Problem::new(
                    format!("exporters.{id}.endpoint"),
                    "is empty; name the receiver to send to, like collector:4317",
                ));
            }
            ExporterConfig::OtlpHttp(http)
                if http.endpoint.trim().is_empty() && http.profiles_endpoint.is_none() =>
            {
                problems.push(Problem::new(
                    format!("exporters.{id}.endpoint"),
                    "is empty; name the receiver to send to, like http://collector:4318",
                ));
            }
            ExporterConfig::Pyroscope(pyroscope) => {
                for problem in pyroscope.problems() {
                    problems.push(Problem::new(
                        format!("exporters.{id}.{}", problem.path),
                        problem.message,
                    ));
                }
            }
            _ => {}
        }
    }
    for (id, processor) in &config.processors {
        for problem in processor.problems() {
            problems.push(Problem::new(
                format!("processors.{id}.{}", problem.path),
                problem.message,
            ));
        }
    }
    let metrics = &config.service.telemetry.metrics;
    if !metrics.address.is_empty() {
        for problem in metrics.problems() {
            problems.push(Problem::new(
                format!("service.telemetry.metrics.{}", problem.path),
                problem.message,
            ));
        }
    }
    let level = &config.service.telemetry.logs.level;
    if !LOG_LEVELS
        .iter()
        .any(|known| known.eq_ignore_ascii_case(level))
    {
        problems.push(Problem::new(
            "service.telemetry.logs.level",
            format!(
                "unknown level {level:?}; expected one of {}",
                LOG_LEVELS.join(", ")
            ),
        ));
    }
}

/// `problems` with their paths under `prefix`.
fn prefixed(
    prefix: &str,
    problems: Vec<crate::processors::OptionProblem>,
) -> Vec<crate::processors::OptionProblem> {
    problems
        .into_iter()
        .map(|problem| {
            crate::processors::OptionProblem::new(
                format!("{prefix}.{}", problem.path),
                problem.message,
            )
        })
        .collect()
}
