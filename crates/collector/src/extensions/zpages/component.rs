//! A component's page under `/debug/pipelinez`: its figures, each with the
//! metric it is read from, its queue and its recent errors.

use axum::http::StatusCode;
use axum::response::Response;

use super::figures::{Figure, Reading, EXPORTER, EXPORTER_QUEUE, RECEIVER};
use super::html::{Markup, Page, Table};
use super::parts::{errors_table, history, html, not_found, pipeline_link, ErrorRow, Kind};
use crate::component::Host;
use crate::telemetry::recent_errors::KEPT_PER_COMPONENT;

pub fn page(host: &Host, pipeline: &str, id: &str, kind: Option<Kind>) -> Response {
    let Some((_, members)) = host
        .config
        .service
        .pipelines
        .iter()
        .find(|(defined, _)| defined == pipeline)
    else {
        return not_found(
            "No such pipeline",
            &format!("No pipeline is named {pipeline:?}."),
        );
    };
    let named = |kind: Kind| {
        kind.in_pipeline(members)
            .iter()
            .find(|member| member.to_string() == id)
            .map(|member| (kind, member))
    };
    let found = match kind {
        Some(kind) => named(kind),
        None => Kind::ALL.into_iter().find_map(named),
    };
    let Some((kind, member)) = found else {
        let what = kind.map_or("component", Kind::key);
        return not_found(
            "No such component",
            &format!("Pipeline {pipeline:?} has no {what} {id:?}."),
        );
    };
    let mut page = Page::new(&format!("{} {id}", kind.title()));
    let pipelines = host
        .config
        .service
        .pipelines
        .iter()
        .filter(|(_, config)| kind.in_pipeline(config).contains(member))
        .map(|(name, _)| pipeline_link(name));
    page.properties(vec![
        ("Type", Markup::text(kind.type_of(&host.config, member))),
        ("Kind", Markup::text(kind.key())),
        ("Pipelines", Markup::join(pipelines, ", ")),
    ]);
    let reading = Reading::new(&host.metrics);
    match kind {
        Kind::Receiver => receiver_figures(&mut page, &reading, id),
        Kind::Exporter => exporter_figures(&mut page, &reading, id),
        Kind::Processor => {}
    }
    if kind.source().is_some() {
        recent_errors(&mut page, host, kind, id);
    }
    every_series(&mut page, &reading, kind, id, pipeline);
    html(StatusCode::OK, page)
}

/// Every series of the component, under every name it is served as; a
/// series labelled with another pipeline is that pipeline's instance.
fn every_series(page: &mut Page, reading: &Reading<'_>, kind: Kind, id: &str, pipeline: &str) {
    page.heading("Every series");
    let rows: Vec<_> = reading
        .labelled(kind.key(), id)
        .into_iter()
        .filter(|(_, labels, _)| {
            labels
                .iter()
                .all(|(key, value)| key != "pipeline" || value == pipeline)
        })
        .map(|(name, labels, value)| {
            let labels: Vec<(&str, &str)> = labels
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str()))
                .collect();
            vec![
                Markup::code(&series(&name, &labels)),
                Markup::text(&number(value)),
            ]
        })
        .collect();
    if rows.is_empty() {
        page.note(
            "It has no metrics of its own: what passes it shows on the pipeline's receivers \
             and exporters.",
        );
        return;
    }
    page.table(Table {
        head: &["Series", "Value"],
        numeric: &["Value"],
        rows,
    });
}

/// A value as the text format prints it: whole numbers without a point.
fn number(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

/// One column per transport, and their total when there are several.
fn receiver_figures(page: &mut Page, reading: &Reading<'_>, id: &str) {
    page.heading("What it received");
    let transports = reading.transports(id);
    let mut head: Vec<&str> = vec!["Figure"];
    head.extend(transports.iter().map(String::as_str));
    if transports.len() != 1 {
        head.push("Total");
    }
    head.push("Metric");
    let numeric = head.clone();
    let rows = RECEIVER
        .iter()
        .map(|figure| {
            let mut row = vec![Markup::text(figure.what)];
            for transport in &transports {
                let value = reading.figure(figure, "receiver", id, Some(transport));
                row.push(Markup::number(value).flagged(figure.bad && value > 0));
            }
            if transports.len() != 1 {
                let value = reading.figure(figure, "receiver", id, None);
                row.push(Markup::number(value).flagged(figure.bad && value > 0));
            }
            let only = match transports.as_slice() {
                [only] => Some(only.as_str()),
                _ => None,
            };
            row.push(metric(figure, "receiver", id, only));
            row
        })
        .collect();
    page.table(Table {
        head: &head,
        numeric: numeric
            .get(1..numeric.len().saturating_sub(1))
            .unwrap_or(&[]),
        rows,
    });
}

fn exporter_figures(page: &mut Page, reading: &Reading<'_>, id: &str) {
    page.heading("What it exported");
    let rows = EXPORTER
        .iter()
        .map(|figure| {
            let value = reading.figure(figure, "exporter", id, None);
            vec![
                Markup::text(figure.what),
                Markup::number(value).flagged(figure.bad && value > 0),
                metric(figure, "exporter", id, None),
            ]
        })
        .collect();
    page.table(Table {
        head: &["Figure", "Value", "Metric"],
        numeric: &["Value"],
        rows,
    });
    page.heading("Sending queue");
    let rows: Vec<_> = EXPORTER_QUEUE
        .iter()
        .filter_map(|level| {
            let (size, capacity) = reading.level(level, "exporter", id)?;
            let amount = |value: u64| {
                if level.in_bytes {
                    Markup::bytes(value)
                } else {
                    Markup::number(value)
                }
            };
            let used = if capacity == 0 {
                String::new()
            } else {
                format!("{:.1} %", size as f64 * 100.0 / capacity as f64)
            };
            Some(vec![
                Markup::text(level.what),
                amount(size),
                amount(capacity),
                Markup::text(&used),
                Markup::code(&series(level.size, &[("exporter", id)])),
            ])
        })
        .collect();
    if rows.is_empty() {
        page.note("No sending queue (sending_queue.enabled: false): it exports as it is given.");
    } else {
        page.table(Table {
            head: &["Level", "Size", "Capacity", "Used", "Metric"],
            numeric: &["Size", "Capacity", "Used"],
            rows,
        });
    }
}

/// The series a figure is read from, as `/metrics` prints it; without a
/// transport, the sum over the receiver's transports.
fn metric(figure: &Figure, key: &str, id: &str, transport: Option<&str>) -> Markup {
    let mut labels = vec![(key, id)];
    labels.extend(transport.map(|transport| ("transport", transport)));
    labels.extend(figure.label);
    Markup::code(&series(figure.metric, &labels))
}

/// `name{key="value",…}`, label values escaped as in the text format.
fn series(name: &str, labels: &[(&str, &str)]) -> String {
    let labels = labels
        .iter()
        .map(|(key, value)| {
            let value = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{key}=\"{value}\"")
        })
        .collect::<Vec<_>>()
        .join(",");
    format!("{name}{{{labels}}}")
}

fn recent_errors(page: &mut Page, host: &Host, kind: Kind, id: &str) {
    page.heading("Recent errors");
    let history = history(&host.metrics, kind, id);
    page.note(&format!(
        "{} since the start; the newest {KEPT_PER_COMPONENT} messages are kept, \
         the same message in a row once with its count.",
        match history.total {
            1 => "1 error".to_owned(),
            total => format!("{total} errors"),
        }
    ));
    let rows = history
        .recent
        .into_iter()
        .map(|error| ErrorRow {
            component: None,
            error,
        })
        .collect();
    errors_table(page, rows);
}
