//! Which events feed which profile, with which values and labels
//! (docs/jfr.md, "Which events feed which profile").

use std::rc::Rc;

use super::builder::{value_count, ProfileBuilder, SampleLabels};
use super::resolve::Resolver;
use super::settings::ticks_to_nanos;
use super::{Converter, Event, ACTIVE_SETTING, EXECUTION_SAMPLE, WALL_CLOCK_SAMPLE};
use crate::reader::Chunk;
use crate::ProfileKind;

const THREAD_NAME_LABEL: &str = "thread_name";
const PROFILE_ID_LABEL: &str = "profile_id";
const SPAN_NAME_LABEL: &str = "span_name";

impl Converter<'_, '_> {
    pub(super) fn event(
        &mut self,
        chunk: &Chunk<'_>,
        resolver: &mut Resolver<'_, '_>,
        event: Event<'_>,
    ) {
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
}
