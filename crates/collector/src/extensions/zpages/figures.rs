//! What the pages show of a component, read from the collector's metrics
//! registry: the same values `/metrics` serves, under the same names.

use crate::telemetry::metrics::Labels;
use crate::telemetry::Registry;

/// One figure: what it is, its metric, and the label that picks it out
/// besides the component's own.
pub struct Figure {
    pub what: &'static str,
    pub metric: &'static str,
    pub label: Option<(&'static str, &'static str)>,
    /// Whether a value above zero is a problem.
    pub bad: bool,
}

const fn figure(what: &'static str, metric: &'static str, bad: bool) -> Figure {
    Figure {
        what,
        metric,
        label: None,
        bad,
    }
}

const fn by_reason(what: &'static str, metric: &'static str, reason: &'static str) -> Figure {
    Figure {
        what,
        metric,
        label: Some(("reason", reason)),
        bad: true,
    }
}

pub const ACCEPTED_PROFILES: &str = "profbridge_receiver_accepted_profiles_total";
const REFUSED_PROFILES: &str = "profbridge_receiver_refused_profiles_total";
const REFUSED_REQUESTS: &str = "profbridge_receiver_refused_requests_total";

/// A receiver's figures, per transport.
pub const RECEIVER: [Figure; 8] = [
    figure("Accepted profiles", ACCEPTED_PROFILES, false),
    figure(
        "Accepted samples",
        "profbridge_receiver_accepted_samples_total",
        false,
    ),
    by_reason("Refused profiles: invalid", REFUSED_PROFILES, "invalid"),
    by_reason(
        "Refused profiles: unavailable",
        REFUSED_PROFILES,
        "unavailable",
    ),
    by_reason("Refused requests: invalid", REFUSED_REQUESTS, "invalid"),
    by_reason(
        "Refused requests: unavailable",
        REFUSED_REQUESTS,
        "unavailable",
    ),
    by_reason(
        "Refused requests: unauthenticated",
        REFUSED_REQUESTS,
        "unauthenticated",
    ),
    figure(
        "Strings replaced (not UTF-8)",
        "profbridge_receiver_strings_replaced_total",
        true,
    ),
];

pub const SENT_PROFILES: &str = "profbridge_exporter_sent_profiles_total";
pub const SEND_FAILED_PROFILES: &str = "profbridge_exporter_send_failed_profiles_total";

/// An exporter's counters.
pub const EXPORTER: [Figure; 5] = [
    figure("Sent profiles", SENT_PROFILES, false),
    figure("Send failed profiles", SEND_FAILED_PROFILES, true),
    figure(
        "Enqueue failed profiles",
        "profbridge_exporter_enqueue_failed_profiles_total",
        true,
    ),
    figure(
        "Dead-letter write failures",
        "profbridge_exporter_dead_letter_write_failures_total",
        true,
    ),
    figure(
        "Queue storage failures",
        "profbridge_exporter_queue_storage_failures_total",
        true,
    ),
];

/// A level and its limit: what a queue holds and may hold.
pub struct Level {
    pub what: &'static str,
    pub size: &'static str,
    pub capacity: &'static str,
    pub in_bytes: bool,
}

/// An exporter's sending queue, when it has one.
pub const EXPORTER_QUEUE: [Level; 2] = [
    Level {
        what: "Queued requests",
        size: "profbridge_exporter_queue_size",
        capacity: "profbridge_exporter_queue_capacity",
        in_bytes: false,
    },
    Level {
        what: "Queued bytes",
        size: "profbridge_exporter_queue_size_bytes",
        capacity: "profbridge_exporter_queue_capacity_bytes",
        in_bytes: true,
    },
];

/// What a pipeline holds, queued or being exported.
pub const PIPELINE_QUEUE: Level = Level {
    what: "Held bytes",
    size: "profbridge_pipeline_queue_size_bytes",
    capacity: "profbridge_pipeline_queue_capacity_bytes",
    in_bytes: true,
};

/// The registry, read for one page.
pub struct Reading<'a> {
    registry: &'a Registry,
}

impl<'a> Reading<'a> {
    pub fn new(registry: &'a Registry) -> Self {
        Self { registry }
    }

    /// The sum of the series of `metric` that carry every label of
    /// `labels`; `None` when none does.
    pub fn sum(&self, metric: &str, labels: &[(&str, &str)]) -> Option<u64> {
        let mut total = None;
        for (series, value) in self.registry.series(metric) {
            if labels.iter().all(|wanted| has(&series, *wanted)) {
                total = Some(total.unwrap_or(0u64).saturating_add(as_count(value)));
            }
        }
        total
    }

    /// `figure` of the component whose label `key` is `id`, on
    /// `transport` when given; 0 when nothing was counted yet.
    pub fn figure(&self, figure: &Figure, key: &str, id: &str, transport: Option<&str>) -> u64 {
        let mut labels = vec![(key, id)];
        labels.extend(figure.label);
        labels.extend(transport.map(|transport| ("transport", transport)));
        self.sum(figure.metric, &labels).unwrap_or(0)
    }

    /// (size, capacity) of a level of the component whose label `key` is
    /// `id`; `None` when it has no such queue.
    pub fn level(&self, level: &Level, key: &str, id: &str) -> Option<(u64, u64)> {
        let size = self.sum(level.size, &[(key, id)])?;
        Some((size, self.sum(level.capacity, &[(key, id)]).unwrap_or(0)))
    }

    /// The transports a receiver counts on, in name order.
    pub fn transports(&self, receiver: &str) -> Vec<String> {
        let mut transports: Vec<String> = self
            .registry
            .series(ACCEPTED_PROFILES)
            .into_iter()
            .filter(|(series, _)| has(series, ("receiver", receiver)))
            .filter_map(|(series, _)| {
                series
                    .into_iter()
                    .find(|(name, _)| name == "transport")
                    .map(|(_, value)| value)
            })
            .collect();
        transports.sort();
        transports.dedup();
        transports
    }

    /// Every series labelled `key="id"`: (name, labels, value).
    pub fn labelled(&self, key: &str, id: &str) -> Vec<(String, Labels, f64)> {
        self.registry.series_labelled(key, id)
    }

    /// A gauge without labels, like the process's uptime.
    pub fn gauge(&self, metric: &str) -> Option<f64> {
        self.registry
            .series(metric)
            .into_iter()
            .find(|(series, _)| series.is_empty())
            .map(|(_, value)| value)
    }
}

fn has(series: &Labels, (key, value): (&str, &str)) -> bool {
    series.iter().any(|(name, got)| name == key && got == value)
}

/// A counter's or gauge's value as a whole count.
fn as_count(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value.round() as u64
    } else {
        0
    }
}
