//! Profiles from a recording's events, as Grafana Pyroscope makes them
//! (docs/jfr.md, "Conversion").

mod builder;
mod events;
mod resolve;
mod settings;
mod symbols;

use rustc_hash::FxHashSet;
use std::collections::BTreeMap;

use crate::reader::{for_each_chunk, Chunk, ClassDef, Value};
use crate::{ConvertOptions, Converted, JfrError, ProfileKind, Skipped};
use builder::ProfileBuilder;
use resolve::Resolver;
use settings::interval_nanos;

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
