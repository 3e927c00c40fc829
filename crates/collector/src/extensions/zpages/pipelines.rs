//! `/debug/pipelinez`: every pipeline with what flows through it, and a
//! page per pipeline with its components' figures and recent errors.

use axum::http::StatusCode;
use axum::response::Response;

use super::figures::{
    Reading, ACCEPTED_PROFILES, EXPORTER_QUEUE, PIPELINE_QUEUE, SEND_FAILED_PROFILES, SENT_PROFILES,
};
use super::html::{Markup, Page, Table};
use super::parts::{
    component_link, component_links, error_count, errors_table, history, html, not_found,
    pipeline_link, ErrorRow, Kind,
};
use crate::component::Host;
use crate::settings::PipelineConfig;

/// The receivers' and exporters' totals over a pipeline's members.
struct Totals {
    accepted: u64,
    refused_profiles: u64,
    refused_requests: u64,
    sent: u64,
    failed: u64,
    errors: u64,
}

fn totals(host: &Host, reading: &Reading<'_>, pipeline: &PipelineConfig) -> Totals {
    let mut totals = Totals {
        accepted: 0,
        refused_profiles: 0,
        refused_requests: 0,
        sent: 0,
        failed: 0,
        errors: 0,
    };
    for id in &pipeline.receivers {
        let id = id.to_string();
        let of = |metric: &str| reading.sum(metric, &[("receiver", &id)]).unwrap_or(0);
        totals.accepted += of(ACCEPTED_PROFILES);
        totals.refused_profiles += of("profbridge_receiver_refused_profiles_total");
        totals.refused_requests += of("profbridge_receiver_refused_requests_total");
        totals.errors += history(&host.metrics, Kind::Receiver, &id).total;
    }
    for id in &pipeline.exporters {
        let id = id.to_string();
        let of = |metric: &str| reading.sum(metric, &[("exporter", &id)]).unwrap_or(0);
        totals.sent += of(SENT_PROFILES);
        totals.failed +=
            of(SEND_FAILED_PROFILES) + of("profbridge_exporter_enqueue_failed_profiles_total");
        totals.errors += history(&host.metrics, Kind::Exporter, &id).total;
    }
    totals
}

/// "used of capacity" for a level, or "none".
fn level_cell(level: Option<(u64, u64)>, in_bytes: bool) -> Markup {
    let amount = |value: u64| {
        if in_bytes {
            Markup::bytes(value)
        } else {
            Markup::number(value)
        }
    };
    match level {
        None => Markup::text("no queue"),
        Some((size, capacity)) => Markup::join([amount(size), amount(capacity)], " of "),
    }
}

pub fn overview(host: &Host) -> Response {
    let reading = Reading::new(&host.metrics);
    let mut page = Page::new("Pipelines");
    let numeric = [
        "Accepted profiles",
        "Refused profiles",
        "Refused requests",
        "Sent profiles",
        "Failed profiles",
        "Recent errors",
    ];
    let rows = host
        .config
        .service
        .pipelines
        .iter()
        .map(|(name, pipeline)| {
            let totals = totals(host, &reading, pipeline);
            vec![
                pipeline_link(name),
                component_links(name, pipeline, Kind::Receiver),
                component_links(name, pipeline, Kind::Processor),
                component_links(name, pipeline, Kind::Exporter),
                Markup::number(totals.accepted),
                Markup::number(totals.refused_profiles).flagged(totals.refused_profiles > 0),
                Markup::number(totals.refused_requests).flagged(totals.refused_requests > 0),
                Markup::number(totals.sent),
                Markup::number(totals.failed).flagged(totals.failed > 0),
                Markup::number(totals.errors).flagged(totals.errors > 0),
                level_cell(reading.level(&PIPELINE_QUEUE, "pipeline", name), true),
            ]
        })
        .collect();
    page.table(Table {
        head: &[
            "Pipeline",
            "Receivers",
            "Processors",
            "Exporters",
            numeric[0],
            numeric[1],
            numeric[2],
            numeric[3],
            numeric[4],
            numeric[5],
            "Held bytes",
        ],
        numeric: &numeric,
        rows,
    });
    page.note(
        "Signal: profiles. A receiver or exporter in several pipelines counts in each: \
         its figures are its own, whatever pipeline they came through.",
    );
    html(StatusCode::OK, page)
}

pub fn pipeline(host: &Host, name: &str) -> Response {
    let Some((_, pipeline)) = host
        .config
        .service
        .pipelines
        .iter()
        .find(|(defined, _)| defined == name)
    else {
        return not_found(
            "No such pipeline",
            &format!("No pipeline is named {name:?}."),
        );
    };
    let reading = Reading::new(&host.metrics);
    let mut page = Page::new(&format!("Pipeline {name}"));
    page.properties(vec![
        ("Signal", Markup::text("profiles")),
        (
            "Held bytes (queued or being exported)",
            level_cell(reading.level(&PIPELINE_QUEUE, "pipeline", name), true),
        ),
    ]);
    receivers(&mut page, host, &reading, name, pipeline);
    page.heading("Processors");
    let rows = pipeline
        .processors
        .iter()
        .map(|id| {
            vec![
                component_link(name, Kind::Processor, &id.to_string()),
                Markup::text(Kind::Processor.type_of(&host.config, id)),
            ]
        })
        .collect();
    page.table(Table {
        head: &["Processor", "Type"],
        numeric: &[],
        rows,
    });
    exporters(&mut page, host, &reading, name, pipeline);
    page.heading("Recent errors");
    let mut rows = Vec::new();
    for kind in [Kind::Receiver, Kind::Exporter] {
        for id in kind.in_pipeline(pipeline) {
            let id = id.to_string();
            rows.extend(
                history(&host.metrics, kind, &id)
                    .recent
                    .into_iter()
                    .map(|error| ErrorRow {
                        component: Some(component_link(name, kind, &id)),
                        error,
                    }),
            );
        }
    }
    errors_table(&mut page, rows);
    html(StatusCode::OK, page)
}

fn receivers(
    page: &mut Page,
    host: &Host,
    reading: &Reading<'_>,
    name: &str,
    pipeline: &PipelineConfig,
) {
    page.heading("Receivers");
    let numeric = [
        "Accepted profiles",
        "Accepted samples",
        "Refused profiles",
        "Refused requests",
        "Recent errors",
    ];
    let rows = pipeline
        .receivers
        .iter()
        .map(|id| {
            let label = id.to_string();
            let of = |metric: &str| reading.sum(metric, &[("receiver", &label)]).unwrap_or(0);
            let refused_profiles = of("profbridge_receiver_refused_profiles_total");
            let refused_requests = of("profbridge_receiver_refused_requests_total");
            vec![
                component_link(name, Kind::Receiver, &label),
                Markup::text(Kind::Receiver.type_of(&host.config, id)),
                Markup::text(&reading.transports(&label).join(", ")),
                Markup::number(of(ACCEPTED_PROFILES)),
                Markup::number(of("profbridge_receiver_accepted_samples_total")),
                Markup::number(refused_profiles).flagged(refused_profiles > 0),
                Markup::number(refused_requests).flagged(refused_requests > 0),
                error_count(&history(&host.metrics, Kind::Receiver, &label)),
            ]
        })
        .collect();
    page.table(Table {
        head: &[
            "Receiver",
            "Type",
            "Transports",
            numeric[0],
            numeric[1],
            numeric[2],
            numeric[3],
            numeric[4],
        ],
        numeric: &numeric,
        rows,
    });
}

fn exporters(
    page: &mut Page,
    host: &Host,
    reading: &Reading<'_>,
    name: &str,
    pipeline: &PipelineConfig,
) {
    page.heading("Exporters");
    let numeric = [
        "Sent profiles",
        "Send failed profiles",
        "Enqueue failed profiles",
        "Recent errors",
    ];
    let rows = pipeline
        .exporters
        .iter()
        .map(|id| {
            let label = id.to_string();
            let of = |metric: &str| reading.sum(metric, &[("exporter", &label)]).unwrap_or(0);
            let failed = of(SEND_FAILED_PROFILES);
            let enqueue_failed = of("profbridge_exporter_enqueue_failed_profiles_total");
            let mut row = vec![
                component_link(name, Kind::Exporter, &label),
                Markup::text(Kind::Exporter.type_of(&host.config, id)),
                Markup::number(of(SENT_PROFILES)),
                Markup::number(failed).flagged(failed > 0),
                Markup::number(enqueue_failed).flagged(enqueue_failed > 0),
            ];
            for level in &EXPORTER_QUEUE {
                row.push(level_cell(
                    reading.level(level, "exporter", &label),
                    level.in_bytes,
                ));
            }
            row.push(error_count(&history(&host.metrics, Kind::Exporter, &label)));
            row
        })
        .collect();
    page.table(Table {
        head: &[
            "Exporter",
            "Type",
            numeric[0],
            numeric[1],
            numeric[2],
            EXPORTER_QUEUE[0].what,
            EXPORTER_QUEUE[1].what,
            numeric[3],
        ],
        numeric: &numeric,
        rows,
    });
}
