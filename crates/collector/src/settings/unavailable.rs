//! OpenTelemetry Collector (core and contrib) component types that
//! profbridge does not have, each with what to use instead, so that a
//! Collector user's configuration is refused with advice rather than with
//! "unknown type". Types profbridge has are never looked up here: the
//! registry answers first, so a type that lands later simply stops being
//! refused.
//!
//! Listed: the components that take profiles in contrib or that profiles
//! configurations publish (k8sattributes, resourcedetection, transform,
//! filter, routing, the eBPF profiler's `profiling` receiver,
//! forward and signaltometrics connectors), the ones found in the
//! multi-signal configurations users start from (sampling, prometheus,
//! jaeger, zipkin, hostmetrics, loki...), and authentication and observer
//! extensions.

use super::model::Section;
use super::problems::Problem;

/// Where a component type is defined in a Collector configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Receiver,
    Processor,
    Exporter,
    Extension,
    Connector,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Receiver => "receiver",
            Role::Processor => "processor",
            Role::Exporter => "exporter",
            Role::Extension => "extension",
            Role::Connector => "connector",
        }
    }
}

impl From<Section> for Role {
    fn from(section: Section) -> Self {
        match section {
            Section::Receivers => Role::Receiver,
            Section::Processors => Role::Processor,
            Section::Exporters => Role::Exporter,
            Section::Extensions => Role::Extension,
        }
    }
}

/// A Collector component type profbridge does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable {
    pub role: Role,
    pub kind: &'static str,
    /// What to use instead, or that nothing does its work yet.
    pub instead: &'static str,
}

const ONLY_PROFILES: &str =
    "it handles traces, metrics or logs, and profbridge carries profiles only";
const NO_SAMPLING: &str = "profbridge does not sample profiles: lower the profiler's sampling \
     rate instead";
const SEPARATE_PIPELINES: &str = "use separate pipelines (profiles/NAME), each with the \
     receivers and exporters its data needs";
const NO_OBSERVERS: &str =
    "profbridge does not discover endpoints: list receivers with fixed endpoints";
const AUTH_HEADERS: &str = "for a bearer token use the `bearertokenauth` extension, or set \
     the credentials as exporter `headers` (for example \
     `authorization: \"Bearer ${env:TOKEN}\"`), or the pyroscope exporter's `basic_auth`";

/// Every Collector type profbridge refuses with advice.
pub const UNAVAILABLE: &[Unavailable] = &[
    // Receivers.
    receiver(
        "profiling",
        "run the OpenTelemetry eBPF profiler as the agent on each host and send its OTLP \
         to profbridge's `otlp` receiver",
    ),
    receiver(
        "prometheus",
        "profbridge takes no metrics (to collect pprof profiles, POST them to the `pprof` \
         receiver)",
    ),
    receiver("hostmetrics", ONLY_PROFILES),
    receiver("filelog", ONLY_PROFILES),
    receiver(
        "otlpjsonfile",
        "the `file` receiver reads OTLP JSON and protobuf files (and pprof)",
    ),
    receiver("jaeger", ONLY_PROFILES),
    receiver("zipkin", ONLY_PROFILES),
    receiver("opencensus", ONLY_PROFILES),
    receiver("kubeletstats", ONLY_PROFILES),
    receiver("k8s_cluster", ONLY_PROFILES),
    receiver("k8sobjects", ONLY_PROFILES),
    receiver("k8s_events", ONLY_PROFILES),
    receiver("statsd", ONLY_PROFILES),
    receiver("syslog", ONLY_PROFILES),
    receiver("journald", ONLY_PROFILES),
    receiver("docker_stats", ONLY_PROFILES),
    receiver("receiver_creator", NO_OBSERVERS),
    // Processors.
    processor(
        "k8sattributes",
        "nothing in profbridge looks up Kubernetes metadata: have the agent add it, or set \
         fixed attributes (values may come from ${env:NAME}) with the `resource` processor",
    ),
    processor(
        "resourcedetection",
        "set host and cloud attributes with the `resource` processor (values may come from \
         ${env:NAME})",
    ),
    processor(
        "attributes",
        "the `resource` processor inserts, updates, upserts and deletes resource \
         attributes (attributes of samples cannot be changed yet)",
    ),
    processor(
        "transform",
        "profbridge runs no OTTL, but the `resource` processor covers changes to resource \
         attributes",
    ),
    processor(
        "filter",
        "nothing in profbridge drops profiles by condition yet",
    ),
    processor("routing", SEPARATE_PIPELINES),
    processor("tail_sampling", NO_SAMPLING),
    processor("probabilistic_sampler", NO_SAMPLING),
    processor(
        "groupbyattrs",
        "nothing in profbridge regroups profiles by attribute yet",
    ),
    processor(
        "redaction",
        "the `resource` processor can delete or overwrite resource attributes",
    ),
    processor("cumulativetodelta", ONLY_PROFILES),
    processor("deltatocumulative", ONLY_PROFILES),
    processor("metricstransform", ONLY_PROFILES),
    processor("spanmetrics", ONLY_PROFILES),
    processor("span", ONLY_PROFILES),
    processor("groupbytrace", ONLY_PROFILES),
    // Exporters.
    exporter(
        "logging",
        "the Collector replaced it with `debug`, which profbridge has",
    ),
    exporter(
        "prometheus",
        "profbridge's own metrics are served in the Prometheus format at \
         service.telemetry.metrics.address (/metrics), and profiles are not metrics",
    ),
    exporter(
        "loadbalancing",
        "nothing in profbridge balances load across backends yet: put a load balancer in \
         front of them and point one `otlp` exporter at it",
    ),
    exporter("prometheusremotewrite", ONLY_PROFILES),
    exporter("loki", ONLY_PROFILES),
    exporter("zipkin", ONLY_PROFILES),
    exporter("jaeger", ONLY_PROFILES),
    exporter("opencensus", ONLY_PROFILES),
    exporter(
        "elasticsearch",
        "send OTLP with `otlp` or `otlphttp` to a backend that takes OTLP profiles",
    ),
    // Extensions.
    extension("oauth2client", AUTH_HEADERS),
    extension("basicauth", AUTH_HEADERS),
    extension("headers_setter", AUTH_HEADERS),
    extension("sigv4auth", AUTH_HEADERS),
    extension(
        "oidc",
        "receivers check a fixed bearer token (the `bearertokenauth` extension, or their \
         `auth:` with bearer_token_file or bearer_token_env), but not OpenID Connect tokens",
    ),
    extension("k8s_observer", NO_OBSERVERS),
    extension("docker_observer", NO_OBSERVERS),
    extension("host_observer", NO_OBSERVERS),
    extension("memory_ballast", "the Collector removed it too: delete it"),
    extension(
        "opamp",
        "profbridge is not managed over OpAMP: deploy its configuration file",
    ),
    // Connectors.
    connector(
        "forward",
        "list the same receivers in each pipeline that needs their data",
    ),
    connector("routing", SEPARATE_PIPELINES),
    connector(
        "signaltometrics",
        "profbridge does not derive metrics from profiles",
    ),
    connector(
        "profilingmetrics",
        "profbridge does not derive metrics from profiles",
    ),
    connector("spanmetrics", ONLY_PROFILES),
    connector("servicegraph", ONLY_PROFILES),
    connector("count", ONLY_PROFILES),
    connector(
        "failover",
        "nothing in profbridge fails over to another backend yet; each exporter retries \
         and queues on its own (`retry_on_failure`, `sending_queue`)",
    ),
    connector(
        "roundrobin",
        "nothing in profbridge spreads profiles across exporters yet",
    ),
];

const fn receiver(kind: &'static str, instead: &'static str) -> Unavailable {
    entry(Role::Receiver, kind, instead)
}

const fn processor(kind: &'static str, instead: &'static str) -> Unavailable {
    entry(Role::Processor, kind, instead)
}

const fn exporter(kind: &'static str, instead: &'static str) -> Unavailable {
    entry(Role::Exporter, kind, instead)
}

const fn extension(kind: &'static str, instead: &'static str) -> Unavailable {
    entry(Role::Extension, kind, instead)
}

const fn connector(kind: &'static str, instead: &'static str) -> Unavailable {
    entry(Role::Connector, kind, instead)
}

const fn entry(role: Role, kind: &'static str, instead: &'static str) -> Unavailable {
    Unavailable {
        role,
        kind,
        instead,
    }
}

/// The entry for a Collector type profbridge does not have.
pub fn lookup(role: Role, kind: &str) -> Option<&'static Unavailable> {
    UNAVAILABLE
        .iter()
        .find(|entry| entry.role == role && entry.kind == kind)
}

/// The problem at `path` for a component of a Collector type profbridge
/// does not have; `None` for a type this list does not know.
pub fn refusal(path: &str, role: Role, kind: &str) -> Option<Problem> {
    lookup(role, kind).map(|entry| {
        Problem::new(
            path,
            format!(
                "the OpenTelemetry Collector's {kind} {} is not available in profbridge; {}",
                role.name(),
                entry.instead
            ),
        )
    })
}

/// The problem at `path` (`connectors.NAME`) for any connector:
/// profbridge has none.
pub fn connector_refusal(path: &str, kind: &str) -> Problem {
    refusal(path, Role::Connector, kind).unwrap_or_else(|| {
        Problem::new(
            path,
            format!(
                "connector type {kind:?} is not available in profbridge, which has no \
                 connectors; pipelines take data from receivers only"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_type_is_refused_at_its_path_with_its_advice() {
        let problem = refusal("processors.filter/drop", Role::Processor, "filter");
        assert_eq!(
            problem.map(|problem| problem.to_string()),
            Some(
                "processors.filter/drop: the OpenTelemetry Collector's filter processor is not \
                 available in profbridge; nothing in profbridge drops profiles by condition yet"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_type_is_looked_up_in_its_own_role_only() {
        assert!(refusal("receivers.filter", Role::Receiver, "filter").is_none());
        assert!(lookup(Role::Exporter, "prometheus").is_some());
        assert!(lookup(Role::Receiver, "prometheus").is_some());
        assert!(lookup(Role::Processor, "prometheus").is_none());
    }

    #[test]
    fn any_connector_is_refused_even_one_this_list_does_not_know() {
        assert_eq!(
            connector_refusal("connectors.mine", "mine").to_string(),
            "connectors.mine: connector type \"mine\" is not available in profbridge, which has \
             no connectors; pipelines take data from receivers only"
        );
    }
}
