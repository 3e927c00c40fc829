//! Profiles from a recording's events, as Grafana Pyroscope makes them
//! (docs/jfr.md, "Conversion").

mod builder;
mod resolve;
mod settings;
mod symbols;

use std::collections::BTreeMap;
use std::rc::Rc;

use rustc_hash::FxHashSet;

use crate::reader::{for_each_chunk, Chunk, ClassDef, Value};
use crate::{ConvertOptions, Converted, JfrError, ProfileKind, Skipped};
use builder::{value_count, ProfileBuilder, SampleLabels};
use resolve::Resolver;
use settings::{interval_nanos, ticks_to_nanos};

const EXECUTION_SAMPLE: &str = "jdk.ExecutionSample";
const WALL_CLOCK_SAMPLE: &str = "profiler.WallClockSample";
const ACTIVE_SETTING: &str = "jdk.ActiveSetting";
const EVENTS: [&str; 10] = [
    EXECUTION_SAMPLE,
    WALL_CLOCK_SAMPLE,
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
    "profiler.LiveObject",
    "profiler.Malloc",
    ACTIVE_SETTING,
];

/// CPU and wall samples weigh this much when neither the options nor the
/// recording say: the Pyroscope agent's default of 100 Hz.
const DEFAULT_PERIOD_NANOS: i64 = 10_000_000;
const NANOS_PER_SECOND: i64 = 1_000_000_000;
const THREAD_NAME_LABEL: &str = "thread_name";
const PROFILE_ID_LABEL: &str = "profile_id";
const SPAN_NAME_LABEL: &str = "span_name";

pub(crate) fn convert_recording(
    bytes: &[u8],
    options: &ConvertOptions<'_>,
) -> Result<Converted, JfrError> {
    let mut converter = Converter {
        options,
        builders: BTreeMap::new(),
        profiler_event: None,
        recorded_period: None,
        skipped: Skipped::default(),
        span: None,
        next_stack_serial: 0,
    };
    for_each_chunk(bytes, &options.limits, |chunk| converter.chunk(chunk))?;
    Ok(converter.finish())
}

struct Converter<'o, 'l> {
    options: &'o ConvertOptions<'l>,
    builders: BTreeMap<ProfileKind, ProfileBuilder>,
    profiler_event: Option<String>,
    /// The recording's own sampling interval, as last set.
    recorded_period: Option<i64>,
    skipped: Skipped,
    /// The chunks' first start and last end, in Unix nanoseconds.
    span: Option<(i64, i64)>,
    next_stack_serial: u64,
}

/// The fields of one event, looked up by name.
struct Event<'e> {
    class: &'e ClassDef,
    fields: &'e [Value],
}

impl<'e> Event<'e> {
    fn get(&self, name: &str) -> Option<&'e Value> {
        self.fields.get(self.class.field_index(name)?)
    }

    fn int(&self, name: &str) -> i64 {
        self.get(name).and_then(Value::as_int).unwrap_or(0)
    }
}

impl Converter<'_, '_> {
    fn period(&self) -> i64 {
        match self.options.sample_rate {
            Some(rate) if rate > 0 => NANOS_PER_SECOND / i64::from(rate),
            Some(_) => 0,
            None => self.recorded_period.unwrap_or(DEFAULT_PERIOD_NANOS),
        }
    }

    fn chunk(&mut self, chunk: &Chunk<'_>) -> Result<(), JfrError> {
        let start = chunk.header.start_nanos;
        let end = start.saturating_add(chunk.header.duration_nanos);
        self.span = Some(match self.span {
            None => (start, end),
            Some((first, last)) => (first.min(start), last.max(end)),
        });
        let wanted: FxHashSet<i64> = EVENTS
            .iter()
            .filter_map(|name| chunk.types.id_of(name))
            .collect();
        let mut resolver = Resolver::new(
            chunk,
            self.options.limits.max_stack_depth,
            self.next_stack_serial,
        );
        if self.options.sample_rate.is_none() {
            self.read_recorded_period(chunk, &resolver)?;
        }
        chunk.for_each_event(&wanted, |class, fields| {
            self.event(chunk, &mut resolver, Event { class, fields });
            Ok(())
        })?;
        self.next_stack_serial = resolver.next_serial();
        Ok(())
    }

    /// The sampling interval in force in this chunk: the last
    /// `jdk.ExecutionSample#period` (JDK) or `interval` (async-profiler)
    /// setting recorded in it or in an earlier chunk.
    fn read_recorded_period(
        &mut self,
        chunk: &Chunk<'_>,
        resolver: &Resolver<'_, '_>,
    ) -> Result<(), JfrError> {
        let Some(setting_type) = chunk.types.id_of(ACTIVE_SETTING) else {
            return Ok(());
        };
        let execution_sample = chunk.types.id_of(EXECUTION_SAMPLE);
        let wanted = FxHashSet::from_iter([setting_type]);
        chunk.for_each_event(&wanted, |class, fields| {
            let event = Event { class, fields };
            let name = event.get("name").and_then(|v| resolver.string(v));
            let value = event.get("value").and_then(|v| resolver.string(v));
            let applies = match name.as_deref() {
                Some("period") => Some(event.int("id")) == execution_sample,
                Some("interval") => true,
                _ => false,
            };
            if let Some(nanos) = value
                .as_deref()
                .and_then(interval_nanos)
                .filter(|_| applies)
            {
                self.recorded_period = Some(nanos);
            }
            Ok(())
        })
    }

    fn event(&mut self, chunk: &Chunk<'_>, resolver: &mut Resolver<'_, '_>, event: Event<'_>) {
        let period = self.period();
        let wall_mode = self.profiler_event.as_deref() == Some("wall");
        let ticks_per_second = chunk.header.ticks_per_second;
        match event.class.name.as_str() {
            EXECUTION_SAMPLE => {
                let state = resolver.thread_state(event.get("state"));
                if state.as_deref().is_some_and(|s| s != "STATE_SLEEPING") {
                    self.add(ProfileKind::Cpu, resolver, &event, true, &[period]);
                }
                if wall_mode {
                    self.add(ProfileKind::Wall, resolver, &event, true, &[period]);
                }
            }
            WALL_CLOCK_SAMPLE => {
                let value = event.int("samples").wrapping_mul(period);
                let state = resolver.thread_state(event.get("state"));
                if state.as_deref() == Some("STATE_RUNNABLE") && wall_mode {
                    self.add(ProfileKind::Cpu, resolver, &event, true, &[value]);
                }
                self.add(ProfileKind::Wall, resolver, &event, true, &[value]);
            }
            "jdk.ObjectAllocationInNewTLAB" => {
                let bytes = event.int("tlabSize");
                self.add(
                    ProfileKind::AllocInNewTlab,
                    resolver,
                    &event,
                    true,
                    &[1, bytes],
                );
            }
            "jdk.ObjectAllocationOutsideTLAB" => {
                let bytes = event.int("allocationSize");
                self.add(
                    ProfileKind::AllocOutsideTlab,
                    resolver,
                    &event,
                    true,
                    &[1, bytes],
                );
            }
            "jdk.ObjectAllocationSample" => {
                let bytes = event.int("weight");
                self.add(
                    ProfileKind::AllocSample,
                    resolver,
                    &event,
                    false,
                    &[1, bytes],
                );
            }
            "jdk.JavaMonitorEnter" => {
                let nanos = ticks_to_nanos(event.int("duration"), ticks_per_second);
                self.add(ProfileKind::Mutex, resolver, &event, true, &[1, nanos]);
            }
            "jdk.ThreadPark" => {
                let nanos = ticks_to_nanos(event.int("duration"), ticks_per_second);
                self.add(ProfileKind::Block, resolver, &event, false, &[1, nanos]);
            }
            "profiler.LiveObject" => {
                self.add(ProfileKind::LiveObject, resolver, &event, false, &[1]);
            }
            "profiler.Malloc" => {
                let bytes = event.int("size");
                self.add(ProfileKind::Malloc, resolver, &event, false, &[1, bytes]);
            }
            ACTIVE_SETTING => {
                let name = event.get("name").and_then(|v| resolver.string(v));
                if name.as_deref() == Some("event") {
                    self.profiler_event = event.get("value").and_then(|v| resolver.string(v));
                }
            }
            _ => {}
        }
    }

    /// Adds an event's values to the profile of `kind`; `correlated`: the
    /// event carries the agent's context and span (as Pyroscope reads them).
    fn add(
        &mut self,
        kind: ProfileKind,
        resolver: &mut Resolver<'_, '_>,
        event: &Event<'_>,
        correlated: bool,
        values: &[i64],
    ) {
        let period = if matches!(kind, ProfileKind::Cpu | ProfileKind::Wall) {
            self.period()
        } else {
            0
        };
        // Pyroscope makes the profile before it looks the stack up.
        self.builders
            .entry(kind)
            .or_insert_with(|| ProfileBuilder::new(kind, period));
        let Some(stack) = resolver.stack(event.get("stackTrace"), &mut self.skipped) else {
            return;
        };
        let thread = event
            .get("sampledThread")
            .or_else(|| event.get("eventThread"));
        let mut labels = if correlated {
            self.correlation_labels(event)
        } else {
            SampleLabels::default()
        };
        if let Some(name) = resolver.thread_name(thread) {
            labels.pairs.push((Rc::from(THREAD_NAME_LABEL), name));
        }
        let count = value_count(kind).min(values.len());
        let Some(builder) = self.builders.get_mut(&kind) else {
            return;
        };
        builder.add(&stack, &labels, values.get(..count).unwrap_or(values));
    }

    /// The agent's context labels (sorted by key), then `profile_id` and
    /// `span_name`; only when a labels snapshot was given, as Pyroscope.
    fn correlation_labels(&self, event: &Event<'_>) -> SampleLabels {
        let mut labels = SampleLabels::default();
        let Some(snapshot) = self.options.labels else {
            return labels;
        };
        let text = |id: i64| {
            snapshot
                .strings
                .get(&id)
                .map(String::as_str)
                .unwrap_or_default()
        };
        if let Some(context) = snapshot.contexts.get(&event.int("contextId")) {
            let mut pairs: Vec<(&str, &str)> = context
                .labels
                .iter()
                .map(|(k, v)| (text(*k), text(*v)))
                .filter(|(k, _)| !k.is_empty())
                .collect();
            pairs.sort_unstable();
            labels
                .pairs
                .extend(pairs.into_iter().map(|(k, v)| (Rc::from(k), Rc::from(v))));
        }
        let span_id = event.int("spanId");
        if span_id != 0 {
            labels.pairs.push((
                Rc::from(PROFILE_ID_LABEL),
                Rc::from(format!("{:016x}", span_id as u64)),
            ));
        }
        let span_name = text(event.int("spanName"));
        if !span_name.is_empty() {
            labels
                .pairs
                .push((Rc::from(SPAN_NAME_LABEL), Rc::from(span_name)));
        }
        labels
    }

    fn finish(self) -> Converted {
        let (time_nanos, duration_nanos) = match (self.options.time_range_nanos, self.span) {
            (Some((from, until)), _) => (from, until.saturating_sub(from)),
            (None, Some((first, last))) => (first, last.saturating_sub(first)),
            (None, None) => (0, 0),
        };
        Converted {
            profiles: self
                .builders
                .into_values()
                .map(|builder| builder.finish(time_nanos, duration_nanos))
                .collect(),
            profiler_event: self.profiler_event,
            skipped: self.skipped,
        }
    }
}
