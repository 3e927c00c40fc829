//! What several pages share: the components of a pipeline, links to their
//! pages, their recent errors, times.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::html::{Href, Markup, Page, Table};
use crate::settings::{ComponentId, Config, PipelineConfig, Section};
use crate::shared::timestamp::rfc3339;
use crate::telemetry::{ErrorHistory, Registry, Source};

pub const PIPELINEZ: &str = "/debug/pipelinez";
/// The Collector's query parameters of the pipeline and component pages.
pub const PIPELINE_PARAM: &str = "pipelinenamez";
pub const COMPONENT_PARAM: &str = "componentnamez";
pub const KIND_PARAM: &str = "componentkindz";

/// A kind of pipeline component, as the Collector's `componentkindz` names
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Receiver,
    Processor,
    Exporter,
}

impl Kind {
    pub const ALL: [Self; 3] = [Self::Receiver, Self::Processor, Self::Exporter];

    pub fn key(self) -> &'static str {
        match self {
            Self::Receiver => "receiver",
            Self::Processor => "processor",
            Self::Exporter => "exporter",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::Receiver => "Receiver",
            Self::Processor => "Processor",
            Self::Exporter => "Exporter",
        }
    }

    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.key() == key)
    }

    fn section(self) -> Section {
        match self {
            Self::Receiver => Section::Receivers,
            Self::Processor => Section::Processors,
            Self::Exporter => Section::Exporters,
        }
    }

    /// Where its recent errors are kept, when it keeps any.
    pub fn source(self) -> Option<Source> {
        match self {
            Self::Receiver => Some(Source::Receiver),
            Self::Processor => None,
            Self::Exporter => Some(Source::Exporter),
        }
    }

    /// The ids of this kind a pipeline names.
    pub fn in_pipeline(self, pipeline: &PipelineConfig) -> &[ComponentId] {
        match self {
            Self::Receiver => &pipeline.receivers,
            Self::Processor => &pipeline.processors,
            Self::Exporter => &pipeline.exporters,
        }
    }

    /// The type of the component `id` of this kind.
    pub fn type_of(self, config: &Config, id: &ComponentId) -> &'static str {
        config
            .section(self.section())
            .iter()
            .find(|(defined, _)| defined == id)
            .map_or("?", |(_, component)| component.kind())
    }
}

pub fn pipeline_link(pipeline: &str) -> Markup {
    Markup::link(
        &Href::new(PIPELINEZ, &[(PIPELINE_PARAM, pipeline)]),
        pipeline,
    )
}

pub fn component_link(pipeline: &str, kind: Kind, id: &str) -> Markup {
    let href = Href::new(
        PIPELINEZ,
        &[
            (PIPELINE_PARAM, pipeline),
            (COMPONENT_PARAM, id),
            (KIND_PARAM, kind.key()),
        ],
    );
    Markup::link(&href, id)
}

/// Links to the components of `kind` in `pipeline`.
pub fn component_links(pipeline: &str, config: &PipelineConfig, kind: Kind) -> Markup {
    Markup::join(
        kind.in_pipeline(config)
            .iter()
            .map(|id| component_link(pipeline, kind, &id.to_string())),
        ", ",
    )
}

/// What component `id` of `kind` noted; empty for processors.
pub fn history(registry: &Registry, kind: Kind, id: &str) -> ErrorHistory {
    kind.source()
        .map(|source| registry.errors().history(source, id))
        .unwrap_or_default()
}

/// How many errors a component noted, in red when any.
pub fn error_count(history: &ErrorHistory) -> Markup {
    Markup::number(history.total).flagged(history.total > 0)
}

/// One recent error, and the component it is of when several are shown.
pub struct ErrorRow {
    pub component: Option<Markup>,
    pub error: crate::telemetry::RecentError,
}

/// Recent errors, newest first.
pub fn errors_table(page: &mut Page, mut rows: Vec<ErrorRow>) {
    rows.sort_by_key(|row| std::cmp::Reverse(row.error.last));
    let with_component = rows.iter().any(|row| row.component.is_some());
    let head: &[&str] = if with_component {
        &["Component", "Last", "First", "Times", "Message"]
    } else {
        &["Last", "First", "Times", "Message"]
    };
    let rows = rows
        .into_iter()
        .map(|row| {
            let mut cells = Vec::with_capacity(5);
            if with_component {
                cells.push(row.component.unwrap_or_default());
            }
            cells.push(Markup::time(&when(row.error.last)));
            cells.push(Markup::time(&when(row.error.first)));
            cells.push(Markup::number(row.error.times));
            cells.push(Markup::code(&row.error.message));
            cells
        })
        .collect();
    page.table(Table {
        head,
        numeric: &["Times"],
        rows,
    });
}

/// A time to the second, in UTC.
pub fn when(time: SystemTime) -> String {
    let seconds = time
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    rfc3339(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// The line under every page.
pub fn footer() -> String {
    format!(
        "Rendered {} by profbridge {}. Counts are the collector's own metrics since it started, \
         as /metrics serves them.",
        when(SystemTime::now()),
        env!("CARGO_PKG_VERSION")
    )
}

/// A page as an HTML answer.
pub fn html(status: StatusCode, page: Page) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page.finish(&footer()),
    )
        .into_response()
}

/// A 404 page saying what was not found.
pub fn not_found(title: &str, why: &str) -> Response {
    let mut page = Page::new(title);
    page.paragraph(&Markup::text(why));
    page.paragraph(&Markup::link(&Href::new(PIPELINEZ, &[]), "All pipelines"));
    html(StatusCode::NOT_FOUND, page)
}
