//! `/debug/servicez`, `/debug/extensionz`, `/debug/featurez`, and the
//! Collector's pages that have nothing to show in profbridge.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;

use super::figures::Reading;
use super::html::{Href, Markup, Page, Table};
use super::parts::{html, when, PIPELINEZ};
use crate::component::Host;
use crate::shared::duration::go_duration;
use crate::telemetry::Phase;

pub const SERVICEZ: &str = "/debug/servicez";
pub const EXTENSIONZ: &str = "/debug/extensionz";
pub const FEATUREZ: &str = "/debug/featurez";
/// The Collector's query parameter of one extension.
pub const EXTENSION_PARAM: &str = "zextensionname";

/// The Collector's zpages profbridge has nothing for, and why.
pub const NOT_AVAILABLE: [(&str, &str); 3] = [
    (
        "/debug/tracez",
        "profbridge records no spans of its own. What flows through each pipeline, and each \
         component's recent errors, are on the Pipelines page.",
    ),
    (
        "/debug/rpcz",
        "profbridge keeps no per-method RPC statistics. Each receiver's accepted and refused \
         counts, per transport, are on its page under Pipelines.",
    ),
    (
        "/debug/expvarz",
        "expvar shows a Go runtime's variables; profbridge is not written in Go. /metrics on the \
         telemetry endpoint serves the process figures (profbridge_process_*).",
    ),
];

pub fn servicez(host: &Host) -> Response {
    let reading = Reading::new(&host.metrics);
    let mut page = Page::new("Service profbridge");
    page.heading("Build info");
    page.properties(vec![
        ("Command", Markup::text("profbridge")),
        (
            "Description",
            Markup::text("OpenTelemetry profiles collector and pprof translator"),
        ),
        ("Version", Markup::text(env!("CARGO_PKG_VERSION"))),
    ]);
    page.heading("Runtime info");
    let state = match host.readiness.phase() {
        Phase::Starting => "starting",
        Phase::Ready => "ready",
        Phase::ShuttingDown => "shutting down",
    };
    let uptime = reading
        .gauge("profbridge_process_uptime_seconds")
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map(|seconds| go_duration(Duration::from_secs(seconds as u64)))
        .unwrap_or_default();
    let resident = reading
        .gauge("profbridge_process_memory_rss_bytes")
        .filter(|bytes| bytes.is_finite() && *bytes >= 0.0)
        .map_or_else(Markup::default, |bytes| Markup::bytes(bytes as u64));
    page.properties(vec![
        ("State", Markup::text(state)),
        (
            "Ready since",
            Markup::time(&host.readiness.ready_since().map(when).unwrap_or_default()),
        ),
        ("Uptime", Markup::text(&uptime)),
        ("Resident memory", resident),
        ("Process id", Markup::number(u64::from(std::process::id()))),
        ("OS", Markup::text(std::env::consts::OS)),
        ("Arch", Markup::text(std::env::consts::ARCH)),
    ]);
    let counted = |count: usize, one: &str, many: &str| {
        if count == 1 {
            format!("1 {one}")
        } else {
            format!("{count} {many}")
        }
    };
    let links = [
        (
            PIPELINEZ,
            "Pipelines",
            counted(host.config.service.pipelines.len(), "pipeline", "pipelines"),
        ),
        (
            EXTENSIONZ,
            "Extensions",
            counted(
                host.config.service.extensions.len(),
                "extension",
                "extensions",
            ),
        ),
        (FEATUREZ, "Features", "no feature gates".to_owned()),
    ];
    for (path, title, detail) in links {
        page.heading(title);
        page.paragraph(&Markup::join(
            [
                Markup::link(&Href::new(path, &[]), title),
                Markup::text(&detail),
            ],
            ": ",
        ));
    }
    html(StatusCode::OK, page)
}

pub fn extensionz(host: &Host, selected: Option<&str>) -> Response {
    let mut page = Page::new("Extensions");
    let running = host.config.service.extensions.iter().filter_map(|id| {
        host.config
            .extensions
            .iter()
            .find(|(defined, _)| defined == id)
    });
    let listens_on = |config: &crate::settings::ExtensionConfig| {
        Markup::join(
            config
                .listeners()
                .into_iter()
                .map(|(key, address)| Markup::code(&format!("{key}: {address}"))),
            ", ",
        )
    };
    let rows = running
        .clone()
        .map(|(id, config)| {
            let name = id.to_string();
            vec![
                Markup::link(&Href::new(EXTENSIONZ, &[(EXTENSION_PARAM, &name)]), &name),
                Markup::text(config.kind()),
                listens_on(config),
            ]
        })
        .collect();
    page.table(Table {
        head: &["Extension", "Type", "Listens on"],
        numeric: &[],
        rows,
    });
    page.note("In the order service.extensions starts them; they stop in reverse.");
    if let Some(selected) = selected {
        page.heading(selected);
        match running.clone().find(|(id, _)| id.to_string() == selected) {
            Some((_, config)) => page.properties(vec![
                ("Type", Markup::text(config.kind())),
                ("Listens on", listens_on(config)),
            ]),
            None => page.note("No extension of this name runs."),
        }
    }
    html(StatusCode::OK, page)
}

pub fn featurez() -> Response {
    let mut page = Page::new("Feature Gates");
    page.table(Table {
        head: &["ID", "Enabled", "Stage", "Description"],
        numeric: &[],
        rows: Vec::new(),
    });
    page.note("profbridge has no feature gates: every behaviour is set in the configuration.");
    html(StatusCode::OK, page)
}

/// A 404 page for one of [`NOT_AVAILABLE`].
pub fn not_available(path: &str, why: &str) -> Response {
    let mut page = Page::new(&format!("{path} is not available in profbridge"));
    page.paragraph(&Markup::text(why));
    page.paragraph(&Markup::join(
        [
            Markup::link(&Href::new(SERVICEZ, &[]), "Service"),
            Markup::link(&Href::new(PIPELINEZ, &[]), "Pipelines"),
        ],
        " · ",
    ));
    html(StatusCode::NOT_FOUND, page)
}
