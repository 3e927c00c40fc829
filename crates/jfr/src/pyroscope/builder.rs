//! One profile under construction, built as Pyroscope's profile builder
//! builds it: one mapping, a function per frame name, a location per
//! (function, line), samples merged by stack and labels.

use std::rc::Rc;

use profbridge_pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use rustc_hash::FxHashMap;

use super::resolve::Stack;
use crate::{FrameKind, JfrProfile, ProfileKind};

/// A resolved frame of a stack trace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Frame {
    pub(crate) name: Rc<str>,
    pub(crate) line: i64,
    pub(crate) kind: FrameKind,
}

/// What samples are merged by besides their stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct SampleLabels {
    /// (key, value) pairs, in the order they are written.
    pub(crate) pairs: Vec<(Rc<str>, Rc<str>)>,
}

const MAPPING_ID: u64 = 1;

/// A value's (type, unit) names.
type TypeAndUnit = (&'static str, &'static str);

pub(crate) struct ProfileBuilder {
    kind: ProfileKind,
    profile: Profile,
    strings: FxHashMap<Rc<str>, i64>,
    functions: FxHashMap<Rc<str>, u64>,
    locations: FxHashMap<(u64, i64, FrameKind), u64>,
    frame_kinds: Vec<FrameKind>,
    /// Each stack's location list, by the stack's serial.
    stacks: FxHashMap<u64, usize>,
    /// Distinct location lists, and their index in `location_lists`.
    location_list_index: FxHashMap<Rc<[u64]>, usize>,
    location_lists: Vec<Rc<[u64]>>,
    samples: FxHashMap<(usize, SampleLabels), usize>,
}

/// Sample types, period type and unit of each kind, as Pyroscope's
/// `profileBuilderForSampleType` names them.
fn sample_types(kind: ProfileKind) -> (&'static [TypeAndUnit], Option<TypeAndUnit>) {
    match kind {
        ProfileKind::Cpu => (&[("cpu", "nanoseconds")], Some(("cpu", "nanoseconds"))),
        ProfileKind::Wall => (&[("wall", "nanoseconds")], Some(("wall", "nanoseconds"))),
        ProfileKind::AllocInNewTlab => (
            &[
                ("alloc_in_new_tlab_objects", "count"),
                ("alloc_in_new_tlab_bytes", "bytes"),
            ],
            Some(("space", "bytes")),
        ),
        ProfileKind::AllocOutsideTlab => (
            &[
                ("alloc_outside_tlab_objects", "count"),
                ("alloc_outside_tlab_bytes", "bytes"),
            ],
            Some(("space", "bytes")),
        ),
        ProfileKind::Mutex => (
            &[("contentions", "count"), ("delay", "nanoseconds")],
            Some(("mutex", "count")),
        ),
        ProfileKind::Block => (
            &[("contentions", "count"), ("delay", "nanoseconds")],
            Some(("block", "count")),
        ),
        ProfileKind::LiveObject => (&[("live", "count")], Some(("objects", "count"))),
        ProfileKind::AllocSample => (
            &[
                ("alloc_sample_objects", "count"),
                ("alloc_sample_bytes", "bytes"),
            ],
            Some(("space", "bytes")),
        ),
        ProfileKind::Malloc => (
            &[("malloc_objects", "count"), ("malloc_bytes", "bytes")],
            None,
        ),
    }
}

/// How many values each sample of `kind` has.
pub(crate) fn value_count(kind: ProfileKind) -> usize {
    sample_types(kind).0.len()
}

impl ProfileBuilder {
    pub(crate) fn new(kind: ProfileKind, period: i64) -> Self {
        let mut builder = Self {
            kind,
            profile: Profile {
                mapping: vec![Mapping {
                    id: MAPPING_ID,
                    has_functions: true,
                    ..Mapping::default()
                }],
                ..Profile::default()
            },
            strings: FxHashMap::default(),
            functions: FxHashMap::default(),
            locations: FxHashMap::default(),
            frame_kinds: Vec::new(),
            stacks: FxHashMap::default(),
            location_list_index: FxHashMap::default(),
            location_lists: Vec::new(),
            samples: FxHashMap::default(),
        };
        builder.string("");
        let (types, period_type) = sample_types(kind);
        for (kind_name, unit) in types {
            let value_type = ValueType {
                r#type: builder.string(kind_name),
                unit: builder.string(unit),
            };
            builder.profile.sample_type.push(value_type);
        }
        if let Some((kind_name, unit)) = period_type {
            builder.profile.period_type = Some(ValueType {
                r#type: builder.string(kind_name),
                unit: builder.string(unit),
            });
        }
        builder.profile.period = period;
        builder
    }

    fn string(&mut self, text: &str) -> i64 {
        if let Some(index) = self.strings.get(text) {
            return *index;
        }
        let index = self.profile.string_table.len() as i64;
        self.profile.string_table.push(text.to_owned());
        self.strings.insert(Rc::from(text), index);
        index
    }

    fn location(&mut self, frame: &Frame) -> u64 {
        let function = match self.functions.get(&frame.name) {
            Some(id) => *id,
            None => {
                let id = self.profile.function.len() as u64 + 1;
                let name = self.string(&frame.name);
                self.profile.function.push(Function {
                    id,
                    name,
                    ..Function::default()
                });
                self.functions.insert(frame.name.clone(), id);
                id
            }
        };
        let key = (function, frame.line, frame.kind);
        if let Some(id) = self.locations.get(&key) {
            return *id;
        }
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            mapping_id: MAPPING_ID,
            line: vec![Line {
                function_id: function,
                line: frame.line,
                ..Line::default()
            }],
            ..Location::default()
        });
        self.frame_kinds.push(frame.kind);
        self.locations.insert(key, id);
        id
    }

    /// The index of a stack's location list (made on first sight).
    fn location_list(&mut self, stack: &Stack) -> usize {
        if let Some(index) = self.stacks.get(&stack.serial) {
            return *index;
        }
        let locations: Rc<[u64]> = stack
            .frames
            .iter()
            .map(|frame| self.location(frame))
            .collect();
        let index = match self.location_list_index.get(&locations) {
            Some(index) => *index,
            None => {
                let index = self.location_lists.len();
                self.location_lists.push(locations.clone());
                self.location_list_index.insert(locations, index);
                index
            }
        };
        self.stacks.insert(stack.serial, index);
        index
    }

    /// Adds `values` to the sample of this stack and labels.
    pub(crate) fn add(&mut self, stack: &Stack, labels: &SampleLabels, values: &[i64]) {
        let list = self.location_list(stack);
        let key = (list, labels.clone());
        if let Some(sample) = self
            .samples
            .get(&key)
            .and_then(|index| self.profile.sample.get_mut(*index))
        {
            for (sum, value) in sample.value.iter_mut().zip(values) {
                *sum = sum.wrapping_add(*value);
            }
            return;
        }
        let label = labels
            .pairs
            .iter()
            .map(|(k, v)| Label {
                key: self.string(k),
                str: self.string(v),
                ..Label::default()
            })
            .collect();
        self.samples.insert(key, self.profile.sample.len());
        let location_id = self
            .location_lists
            .get(list)
            .map(|locations| locations.to_vec())
            .unwrap_or_default();
        self.profile.sample.push(Sample {
            location_id,
            value: values.to_vec(),
            label,
        });
    }

    pub(crate) fn finish(mut self, time_nanos: i64, duration_nanos: i64) -> JfrProfile {
        self.profile.time_nanos = time_nanos;
        self.profile.duration_nanos = duration_nanos;
        JfrProfile {
            kind: self.kind,
            profile: self.profile,
            frame_kinds: self.frame_kinds,
        }
    }
}
