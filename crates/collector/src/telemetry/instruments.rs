//! The collector's own metrics: `profbridge_*` names, and beside them the
//! OpenTelemetry Collector's `otelcol_*` names for the profiles signal,
//! with the Collector's labels and units (it counts profile samples), so
//! that a Collector's dashboards and alerts work unchanged.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::metrics::{labels, Counter, Registry};
use super::process;
use super::recent_errors::{ErrorLog, Source};

/// Why a receiver refused profiles: the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedReason {
    /// Malformed or failed validation; retrying will not help.
    Invalid,
    /// A pipeline was full or stopping; the client may retry.
    Unavailable,
    /// Missing or wrong credentials; counted for requests only.
    Unauthenticated,
}

impl RefusedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::Unavailable => "unavailable",
            Self::Unauthenticated => "unauthenticated",
        }
    }
}

/// The counters of one receiver on one transport.
#[derive(Debug, Clone, Default)]
pub struct ReceiverMetrics {
    pub receiver: Arc<str>,
    pub transport: &'static str,
    accepted_profiles: Counter,
    accepted_samples: Counter,
    refused_samples: Counter,
    refused_invalid: Counter,
    refused_unavailable: Counter,
    refused_requests_invalid: Counter,
    refused_requests_unavailable: Counter,
    refused_requests_unauthenticated: Counter,
    strings_replaced: Counter,
    /// This receiver's limit on the log line about replaced strings.
    replaced_strings_log: Arc<LogLimiter>,
    /// Its last few refusals, for the zpages.
    errors: ErrorLog,
}

/// How often a receiver may log that strings were replaced.
pub const REPLACED_STRINGS_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// At most one log line per interval; counts the events in between.
#[derive(Debug)]
pub struct LogLimiter {
    interval: Duration,
    state: Mutex<LimiterState>,
}

#[derive(Debug, Default)]
struct LimiterState {
    last: Option<Instant>,
    /// Events since the last line that was let through.
    suppressed: u64,
}

impl LogLimiter {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            state: Mutex::new(LimiterState::default()),
        }
    }

    /// `Some(events suppressed since the last line)` when a line may be
    /// logged at `now`, else `None` (and the event is counted).
    pub fn allow(&self, now: Instant) -> Option<u64> {
        let Ok(mut state) = self.state.lock() else {
            return None;
        };
        let due = state
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if due {
            state.last = Some(now);
            Some(std::mem::take(&mut state.suppressed))
        } else {
            state.suppressed += 1;
            None
        }
    }
}

impl Default for LogLimiter {
    fn default() -> Self {
        Self::new(REPLACED_STRINGS_LOG_INTERVAL)
    }
}

impl ReceiverMetrics {
    pub fn new(registry: &Registry, receiver: &str, transport: &'static str) -> Self {
        let both = || labels(&[("receiver", receiver), ("transport", transport)]);
        let by_reason = |reason: RefusedReason| {
            labels(&[
                ("receiver", receiver),
                ("transport", transport),
                ("reason", reason.as_str()),
            ])
        };
        let refused = |reason: RefusedReason| {
            registry.counter(
                "profbridge_receiver_refused_profiles_total",
                "Profiles a receiver could not push into the pipelines (when known: \
                 requests refused before decoding count under refused_requests only).",
                by_reason(reason),
            )
        };
        let refused_requests = |reason: RefusedReason| {
            registry.counter(
                "profbridge_receiver_refused_requests_total",
                "Requests a receiver answered with an error.",
                by_reason(reason),
            )
        };
        let accepted_samples = registry.counter(
            "profbridge_receiver_accepted_samples_total",
            "Samples in the profiles a receiver pushed into the pipelines.",
            both(),
        );
        registry.also_as(
            "otelcol_receiver_accepted_profile_samples",
            "Profile samples a receiver pushed into the pipeline.",
            both(),
            &accepted_samples,
        );
        Self {
            receiver: Arc::from(receiver),
            transport,
            accepted_profiles: registry.counter(
                "profbridge_receiver_accepted_profiles_total",
                "Profiles a receiver pushed into the pipelines.",
                both(),
            ),
            accepted_samples,
            refused_samples: registry.counter(
                "otelcol_receiver_refused_profile_samples",
                "Profile samples a receiver could not push into the pipeline.",
                both(),
            ),
            refused_invalid: refused(RefusedReason::Invalid),
            refused_unavailable: refused(RefusedReason::Unavailable),
            refused_requests_invalid: refused_requests(RefusedReason::Invalid),
            refused_requests_unavailable: refused_requests(RefusedReason::Unavailable),
            refused_requests_unauthenticated: refused_requests(RefusedReason::Unauthenticated),
            strings_replaced: registry.counter(
                "profbridge_receiver_strings_replaced_total",
                "Strings of received pprof profiles that were not valid UTF-8, delivered \
                 with U+FFFD in place of each invalid sequence.",
                both(),
            ),
            replaced_strings_log: Arc::new(LogLimiter::default()),
            errors: registry.errors().log(Source::Receiver, receiver),
        }
    }

    /// Keeps why a request or its profiles were refused among the
    /// receiver's recent errors.
    pub fn note_refusal(&self, reason: RefusedReason, detail: &str) {
        self.note_error(&format!(
            "{} ({}): {detail}",
            reason.as_str(),
            self.transport
        ));
    }

    /// Keeps `message` among the receiver's recent errors.
    pub fn note_error(&self, message: &str) {
        self.errors.note(message, SystemTime::now());
    }

    /// Counts `count` strings of one received profile that were not UTF-8
    /// and hold U+FFFD now; logs it at most once a minute per receiver.
    pub fn strings_replaced(&self, count: usize) {
        if count == 0 {
            return;
        }
        self.strings_replaced.add_count(count);
        if let Some(suppressed) = self.replaced_strings_log.allow(Instant::now()) {
            tracing::warn!(
                receiver = %self.receiver,
                strings = count,
                similar_profiles_not_logged = suppressed,
                "a received pprof profile has strings that are not valid UTF-8; \
                 each invalid sequence was replaced with U+FFFD \
                 (profbridge_receiver_strings_replaced_total counts them)"
            );
        }
    }

    /// Counts one request answered with an error for `reason`.
    pub fn refused_request(&self, reason: RefusedReason) {
        match reason {
            RefusedReason::Invalid => self.refused_requests_invalid.add(1),
            RefusedReason::Unavailable => self.refused_requests_unavailable.add(1),
            RefusedReason::Unauthenticated => self.refused_requests_unauthenticated.add(1),
        }
    }

    pub fn accepted(&self, profiles: usize, samples: usize) {
        self.accepted_profiles.add_count(profiles);
        self.accepted_samples.add_count(samples);
    }

    /// Counts `profiles` holding `samples` refused for `reason`.
    pub fn refused(&self, reason: RefusedReason, profiles: usize, samples: usize) {
        self.refused_samples.add_count(samples);
        match reason {
            RefusedReason::Invalid => self.refused_invalid.add_count(profiles),
            RefusedReason::Unavailable => self.refused_unavailable.add_count(profiles),
            // Refused before their profiles are read: nothing to count.
            RefusedReason::Unauthenticated => {}
        }
    }
}

/// The counters of one processor: samples in and out (a batch processor
/// lets go later what it takes in now).
#[derive(Debug, Clone, Default)]
pub struct ProcessorMetrics {
    incoming_samples: Counter,
    outgoing_samples: Counter,
}

impl ProcessorMetrics {
    pub fn new(registry: &Registry, processor: &str) -> Self {
        let ours = || labels(&[("processor", processor)]);
        let collectors = || labels(&[("processor", processor), ("otel_signal", "profiles")]);
        let incoming_samples = registry.counter(
            "profbridge_processor_incoming_samples_total",
            "Samples handed to a processor.",
            ours(),
        );
        registry.also_as(
            "otelcol_processor_incoming_items",
            "Number of items passed to the processor.",
            collectors(),
            &incoming_samples,
        );
        let outgoing_samples = registry.counter(
            "profbridge_processor_outgoing_samples_total",
            "Samples a processor passed on.",
            ours(),
        );
        registry.also_as(
            "otelcol_processor_outgoing_items",
            "Number of items emitted from the processor.",
            collectors(),
            &outgoing_samples,
        );
        Self {
            incoming_samples,
            outgoing_samples,
        }
    }

    pub fn incoming(&self, samples: usize) {
        self.incoming_samples.add_count(samples);
    }

    pub fn outgoing(&self, samples: usize) {
        self.outgoing_samples.add_count(samples);
    }
}

/// The counters of one exporter.
#[derive(Debug, Clone, Default)]
pub struct ExporterMetrics {
    sent_profiles: Counter,
    send_failed_profiles: Counter,
    enqueue_failed_profiles: Counter,
    sent_samples: Counter,
    send_failed_samples: Counter,
    enqueue_failed_samples: Counter,
    dead_letter_write_failures: Counter,
    queue_storage_failures: Counter,
    /// Requests sent by how their OTLP protobuf body was made (the `body`
    /// label), for an exporter that sends or writes one.
    sent_bodies: Vec<(&'static str, Counter)>,
    /// Its last few errors, for the zpages.
    errors: ErrorLog,
}

impl ExporterMetrics {
    /// The counters of `exporter`, with one for each kind of body it sends
    /// (`bodies`: none for an exporter that sends no OTLP protobuf).
    pub fn new(registry: &Registry, exporter: &str, bodies: &[&'static str]) -> Self {
        let label = || labels(&[("exporter", exporter)]);
        let sent_bodies = bodies
            .iter()
            .map(|body| {
                let counter = registry.counter(
                    "profbridge_exporter_sent_requests_total",
                    "Requests an exporter of OTLP protobuf sent or wrote, by body: the bytes that arrived (as_received), the protobuf that arrived compressed anew or decompressed (recompressed), or the request encoded again (encoded).",
                    labels(&[("exporter", exporter), ("body", body)]),
                );
                (*body, counter)
            })
            .collect();
        Self {
            sent_bodies,
            sent_profiles: registry.counter(
                "profbridge_exporter_sent_profiles_total",
                "Profiles an exporter wrote or sent.",
                label(),
            ),
            send_failed_profiles: registry.counter(
                "profbridge_exporter_send_failed_profiles_total",
                "Profiles an exporter failed to write or send.",
                label(),
            ),
            enqueue_failed_profiles: registry.counter(
                "profbridge_exporter_enqueue_failed_profiles_total",
                "Profiles an exporter's sending queue could not take.",
                label(),
            ),
            dead_letter_write_failures: registry.counter(
                "profbridge_exporter_dead_letter_write_failures_total",
                "Attempts to write a request to the dead-letter directory that failed (a full disk, say); each is tried again.",
                label(),
            ),
            queue_storage_failures: registry.counter(
                "profbridge_exporter_queue_storage_failures_total",
                "Requests the persistent sending queue could not write to disk (a full disk, say); each was refused with a retryable code.",
                label(),
            ),
            sent_samples: registry.counter(
                "otelcol_exporter_sent_profile_samples",
                "Profile samples an exporter sent successfully.",
                label(),
            ),
            send_failed_samples: registry.counter(
                "otelcol_exporter_send_failed_profile_samples",
                "Profile samples an exporter failed to send.",
                label(),
            ),
            enqueue_failed_samples: registry.counter(
                "otelcol_exporter_enqueue_failed_profile_samples",
                "Profile samples an exporter's sending queue could not take.",
                label(),
            ),
            errors: registry.errors().log(Source::Exporter, exporter),
        }
    }

    /// Keeps `message` among the exporter's recent errors.
    pub fn note_error(&self, message: &str) {
        self.errors.note(message, SystemTime::now());
    }

    /// Counts `profiles` holding `samples` written or sent, or given up on.
    pub fn exported(&self, profiles: usize, samples: usize, succeeded: bool) {
        if succeeded {
            self.sent_profiles.add_count(profiles);
            self.sent_samples.add_count(samples);
        } else {
            self.send_failed_profiles.add_count(profiles);
            self.send_failed_samples.add_count(samples);
        }
    }

    /// Counts a request sent (or written) with a body of kind `body`.
    pub fn sent_body(&self, body: &str) {
        if let Some((_, counter)) = self.sent_bodies.iter().find(|(kind, _)| *kind == body) {
            counter.add(1);
        }
    }

    pub fn enqueue_failed(&self, profiles: usize, samples: usize) {
        self.enqueue_failed_profiles.add_count(profiles);
        self.enqueue_failed_samples.add_count(samples);
    }

    pub fn dead_letter_write_failed(&self) {
        self.dead_letter_write_failures.add_count(1);
    }

    pub fn queue_storage_failed(&self) {
        self.queue_storage_failures.add_count(1);
    }
}

/// What an exporter's sending queue holds and may hold, read at scrape
/// time.
pub trait QueueLevel: Send + Sync {
    fn requests(&self) -> usize;
    fn bytes(&self) -> u64;
    fn capacity_requests(&self) -> usize;
    fn capacity_bytes(&self) -> u64;
}

/// A gauge's name, help and how it reads a queue.
type QueueGauge = (&'static str, &'static str, fn(&dyn QueueLevel) -> f64);

/// Gauges over an exporter's sending queue.
pub fn register_exporter_queue(registry: &Registry, exporter: &str, level: Arc<dyn QueueLevel>) {
    let label = || labels(&[("exporter", exporter)]);
    let gauges: [QueueGauge; 4] = [
        (
            "profbridge_exporter_queue_size",
            "Requests an exporter's sending queue holds, waiting or being exported.",
            |level| level.requests() as f64,
        ),
        (
            "profbridge_exporter_queue_capacity",
            "Requests an exporter's sending queue may hold.",
            |level| level.capacity_requests() as f64,
        ),
        (
            "profbridge_exporter_queue_size_bytes",
            "Bytes an exporter's sending queue holds: decoded in memory, as stored on disk.",
            |level| level.bytes() as f64,
        ),
        (
            "profbridge_exporter_queue_capacity_bytes",
            "Bytes an exporter's sending queue may hold.",
            |level| level.capacity_bytes() as f64,
        ),
    ];
    for (name, help, read) in gauges {
        let level = Arc::clone(&level);
        registry.gauge_fn(name, help, label(), move || read(level.as_ref()));
    }
    let collector_labels = || labels(&[("exporter", exporter), ("data_type", "profiles")]);
    let collector_gauges: [QueueGauge; 2] = [
        (
            "otelcol_exporter_queue_size",
            "Requests in an exporter's sending queue.",
            |level| level.requests() as f64,
        ),
        (
            "otelcol_exporter_queue_capacity",
            "Requests an exporter's sending queue may hold.",
            |level| level.capacity_requests() as f64,
        ),
    ];
    for (name, help, read) in collector_gauges {
        let level = Arc::clone(&level);
        registry.gauge_fn(name, help, collector_labels(), move || read(level.as_ref()));
    }
}

/// Resident memory, CPU time and uptime (counted from now), under both
/// names.
pub fn register_process(registry: &Registry) {
    let started = Instant::now();
    let uptime = move || started.elapsed().as_secs_f64();
    let rss = || process::resident_bytes() as f64;
    let cpu = process::cpu_seconds;
    registry.gauge_fn(
        "profbridge_process_memory_rss_bytes",
        "Resident memory of the collector process (0 where unknown).",
        Vec::new(),
        rss,
    );
    registry.gauge_fn(
        "otelcol_process_memory_rss",
        "Resident memory of the process, in bytes.",
        Vec::new(),
        rss,
    );
    registry.gauge_fn(
        "profbridge_process_uptime_seconds",
        "Seconds since the collector started.",
        Vec::new(),
        uptime,
    );
    registry.counter_fn(
        "otelcol_process_uptime",
        "Seconds since the process started.",
        Vec::new(),
        uptime,
    );
    registry.counter_fn(
        "profbridge_process_cpu_seconds_total",
        "CPU time, user and system, the collector process used (0 where unknown).",
        Vec::new(),
        cpu,
    );
    registry.counter_fn(
        "otelcol_process_cpu_seconds",
        "CPU time, user and system, of the process in seconds.",
        Vec::new(),
        cpu,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_limiter_lets_one_line_through_per_interval_and_counts_the_rest() {
        let limiter = LogLimiter::new(Duration::from_secs(60));
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        assert_eq!(limiter.allow(at(0)), Some(0));
        assert_eq!(limiter.allow(at(1)), None);
        assert_eq!(limiter.allow(at(59)), None);
        assert_eq!(limiter.allow(at(60)), Some(2));
        assert_eq!(limiter.allow(at(61)), None);
        // An earlier instant (another thread's) is not a new interval.
        assert_eq!(limiter.allow(at(30)), None);
        assert_eq!(limiter.allow(at(200)), Some(2));
    }

    #[test]
    fn replaced_strings_are_counted_per_receiver() {
        let registry = Registry::new();
        let pprof = ReceiverMetrics::new(&registry, "pprof", "http");
        let file = ReceiverMetrics::new(&registry, "file", "file");
        pprof.strings_replaced(3);
        pprof.strings_replaced(0);
        pprof.strings_replaced(2);
        assert_eq!(pprof.strings_replaced.get(), 5);
        assert_eq!(file.strings_replaced.get(), 0);
        // Clones are the same receiver: one counter, one limiter.
        let clone = pprof.clone();
        clone.strings_replaced(1);
        assert_eq!(pprof.strings_replaced.get(), 6);
        assert!(Arc::ptr_eq(
            &clone.replaced_strings_log,
            &pprof.replaced_strings_log
        ));
    }
}
