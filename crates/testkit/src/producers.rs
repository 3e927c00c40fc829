//! OTLP profiles bytes written as real producers write them, byte for
//! byte, for tests of what those producers send:
//!
//! - [`pdata_encode`]: the OpenTelemetry Collector's Go pdata library
//!   (`pdata/internal/generated_proto_*.go`, `MarshalProto`), which the
//!   OTel eBPF profiler and every Go collector use. It writes each message
//!   backwards, so fields come out in descending field-number order
//!   (repeated entries in order); it always writes the message fields that
//!   are not pointers in Go (`KeyValueAndUnit.value`, `KeyValue.value`,
//!   `Profile.sample_type` and `period_type`, `ResourceProfiles.resource`,
//!   `ScopeProfiles.scope`, the dictionary), and trace, span and profile
//!   ids (fixed-size arrays; all zero bytes written as an empty field);
//!   zero scalars and empty lists are left out, integers packed.
//!   So `attribute_table[0]` is `32 02 12 00` and `link_table[0]` is
//!   `22 04 12 00 0a 00`.
//! - [`async_profiler_otlp`]: async-profiler's OTLP writer (src/otlp.cpp,
//!   `Otlp::Recorder`, over src/protobuf.cpp's `ProtoBuffer`): a
//!   `ProfilesData` (the same field numbers as the export request) with
//!   the dictionary first, length prefixes padded to a fixed width (5
//!   bytes unless a call says 1: `80 80 80 80 00` is an empty message),
//!   `link_table[0]` as 16 and 8 zero bytes, explicit zero varints, and
//!   samples' integers unpacked.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u32) {
    put_varint(out, u64::from(number << 3 | wire_type));
}

/// A message being written field by field, as pdata lays it out.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    /// A varint field, left out when 0 (pdata's scalar rule).
    fn varint(mut self, number: u32, value: u64) -> Self {
        if value != 0 {
            put_key(&mut self.0, number, VARINT);
            put_varint(&mut self.0, value);
        }
        self
    }

    fn int(self, number: u32, value: i64) -> Self {
        self.varint(number, value as u64)
    }

    fn fixed64(mut self, number: u32, value: u64) -> Self {
        if value != 0 {
            put_key(&mut self.0, number, FIXED64);
            self.0.extend(value.to_le_bytes());
        }
        self
    }

    /// A length-delimited field, always written (a message pdata holds by
    /// value, or an id).
    fn bytes(mut self, number: u32, body: &[u8]) -> Self {
        put_key(&mut self.0, number, LEN);
        put_varint(&mut self.0, body.len() as u64);
        self.0.extend_from_slice(body);
        self
    }

    /// A string or bytes field, left out when empty.
    fn text(self, number: u32, text: &[u8]) -> Self {
        if text.is_empty() {
            self
        } else {
            self.bytes(number, text)
        }
    }

    fn messages<T>(mut self, number: u32, items: &[T], encode: impl Fn(&T) -> Vec<u8>) -> Self {
        for item in items {
            self = self.bytes(number, &encode(item));
        }
        self
    }

    /// A packed varint list, left out when empty.
    fn packed(self, number: u32, values: impl IntoIterator<Item = u64>) -> Self {
        let mut body = Vec::new();
        for value in values {
            put_varint(&mut body, value);
        }
        self.text(number, &body)
    }

    fn packed_i32(self, number: u32, values: &[i32]) -> Self {
        self.packed(number, values.iter().map(|&v| i64::from(v) as u64))
    }

    /// An id: all zero bytes (or none) written as an empty field.
    fn id(self, number: u32, id: &[u8]) -> Self {
        let zero = id.iter().all(|&b| b == 0);
        self.bytes(number, if zero { &[] } else { id })
    }

    fn done(self) -> Vec<u8> {
        self.0
    }
}

/// `request` as pdata's `MarshalProto` writes it.
pub fn pdata_encode(request: &ExportProfilesServiceRequest) -> Vec<u8> {
    let dictionary = request.dictionary.clone().unwrap_or_default();
    Msg::default()
        .bytes(2, &pdata_dictionary(&dictionary))
        .messages(1, &request.resource_profiles, pdata_resource_profiles)
        .done()
}

fn pdata_dictionary(d: &ProfilesDictionary) -> Vec<u8> {
    let mut msg = Msg::default()
        .messages(7, &d.stack_table, pdata_stack)
        .messages(6, &d.attribute_table, pdata_attribute);
    for s in &d.string_table {
        msg = msg.bytes(5, s.as_bytes());
    }
    msg.messages(4, &d.link_table, pdata_link)
        .messages(3, &d.function_table, pdata_function)
        .messages(2, &d.location_table, pdata_location)
        .messages(1, &d.mapping_table, pdata_mapping)
        .done()
}

fn pdata_stack(s: &Stack) -> Vec<u8> {
    Msg::default().packed_i32(1, &s.location_indices).done()
}

fn pdata_attribute(a: &KeyValueAndUnit) -> Vec<u8> {
    let value = a.value.clone().unwrap_or_default();
    Msg::default()
        .int(3, a.unit_strindex.into())
        .bytes(2, &pdata_any_value(&value))
        .int(1, a.key_strindex.into())
        .done()
}

fn pdata_any_value(v: &AnyValue) -> Vec<u8> {
    let msg = Msg::default();
    match &v.value {
        None => msg,
        Some(any_value::Value::StringValue(s)) => msg.bytes(1, s.as_bytes()),
        Some(any_value::Value::BoolValue(b)) => {
            let mut msg = msg;
            put_key(&mut msg.0, 2, VARINT);
            msg.0.push(u8::from(*b));
            msg
        }
        Some(any_value::Value::IntValue(i)) => {
            let mut msg = msg;
            put_key(&mut msg.0, 3, VARINT);
            put_varint(&mut msg.0, *i as u64);
            msg
        }
        Some(any_value::Value::DoubleValue(d)) => {
            let mut msg = msg;
            put_key(&mut msg.0, 4, FIXED64);
            msg.0.extend(d.to_bits().to_le_bytes());
            msg
        }
        Some(any_value::Value::ArrayValue(a)) => msg.bytes(
            5,
            &Msg::default()
                .messages(1, &a.values, pdata_any_value)
                .done(),
        ),
        Some(any_value::Value::KvlistValue(KeyValueList { values })) => msg.bytes(
            6,
            &Msg::default().messages(1, values, pdata_key_value).done(),
        ),
        Some(any_value::Value::BytesValue(b)) => msg.bytes(7, b),
        Some(any_value::Value::StringValueStrindex(i)) => {
            let mut msg = msg;
            put_key(&mut msg.0, 8, VARINT);
            put_varint(&mut msg.0, i64::from(*i) as u64);
            msg
        }
    }
    .done()
}

fn pdata_key_value(kv: &KeyValue) -> Vec<u8> {
    let value = kv.value.clone().unwrap_or_default();
    Msg::default()
        .int(3, kv.key_strindex.into())
        .bytes(2, &pdata_any_value(&value))
        .text(1, kv.key.as_bytes())
        .done()
}

fn pdata_link(l: &Link) -> Vec<u8> {
    Msg::default().id(2, &l.span_id).id(1, &l.trace_id).done()
}

fn pdata_function(f: &Function) -> Vec<u8> {
    Msg::default()
        .int(4, f.start_line)
        .int(3, f.filename_strindex.into())
        .int(2, f.system_name_strindex.into())
        .int(1, f.name_strindex.into())
        .done()
}

fn pdata_location(l: &Location) -> Vec<u8> {
    Msg::default()
        .packed_i32(4, &l.attribute_indices)
        .messages(3, &l.lines, pdata_line)
        .varint(2, l.address)
        .int(1, l.mapping_index.into())
        .done()
}

fn pdata_line(l: &Line) -> Vec<u8> {
    Msg::default()
        .int(3, l.column)
        .int(2, l.line)
        .int(1, l.function_index.into())
        .done()
}

fn pdata_mapping(m: &Mapping) -> Vec<u8> {
    Msg::default()
        .packed_i32(5, &m.attribute_indices)
        .int(4, m.filename_strindex.into())
        .varint(3, m.file_offset)
        .varint(2, m.memory_limit)
        .varint(1, m.memory_start)
        .done()
}

fn pdata_resource_profiles(r: &ResourceProfiles) -> Vec<u8> {
    let resource = r.resource.clone().unwrap_or_default();
    Msg::default()
        .text(3, r.schema_url.as_bytes())
        .messages(2, &r.scope_profiles, pdata_scope_profiles)
        .bytes(1, &pdata_resource(&resource))
        .done()
}

fn pdata_resource(r: &Resource) -> Vec<u8> {
    assert!(r.entity_refs.is_empty(), "entity refs are not written here");
    Msg::default()
        .varint(2, r.dropped_attributes_count.into())
        .messages(1, &r.attributes, pdata_key_value)
        .done()
}

fn pdata_scope_profiles(s: &ScopeProfiles) -> Vec<u8> {
    let scope = s.scope.clone().unwrap_or_default();
    Msg::default()
        .text(3, s.schema_url.as_bytes())
        .messages(2, &s.profiles, pdata_profile)
        .bytes(1, &pdata_scope(&scope))
        .done()
}

fn pdata_scope(s: &InstrumentationScope) -> Vec<u8> {
    Msg::default()
        .varint(4, s.dropped_attributes_count.into())
        .messages(3, &s.attributes, pdata_key_value)
        .text(2, s.version.as_bytes())
        .text(1, s.name.as_bytes())
        .done()
}

fn pdata_profile(p: &Profile) -> Vec<u8> {
    let sample_type = p.sample_type.unwrap_or_default();
    let period_type = p.period_type.unwrap_or_default();
    Msg::default()
        .packed_i32(11, &p.attribute_indices)
        .text(10, &p.original_payload)
        .text(9, p.original_payload_format.as_bytes())
        .varint(8, p.dropped_attributes_count.into())
        .id(7, &p.profile_id)
        .int(6, p.period)
        .bytes(5, &pdata_value_type(&period_type))
        .varint(4, p.duration_nano)
        .fixed64(3, p.time_unix_nano)
        .messages(2, &p.samples, pdata_sample)
        .bytes(1, &pdata_value_type(&sample_type))
        .done()
}

fn pdata_value_type(v: &ValueType) -> Vec<u8> {
    Msg::default()
        .int(2, v.unit_strindex.into())
        .int(1, v.type_strindex.into())
        .done()
}

fn pdata_sample(s: &Sample) -> Vec<u8> {
    let timestamps: Vec<u8> = s
        .timestamps_unix_nano
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect();
    Msg::default()
        .text(5, &timestamps)
        .packed(4, s.values.iter().map(|&v| v as u64))
        .int(3, s.link_index.into())
        .packed_i32(2, &s.attribute_indices)
        .int(1, s.stack_index.into())
        .done()
}

// ---- async-profiler ----

/// One call trace as async-profiler records it: frame names leaf first,
/// the thread's name (none: no thread attribute) and the sample count.
#[derive(Debug, Clone)]
pub struct AsyncProfilerTrace {
    pub frames: Vec<String>,
    pub thread: Option<String>,
    pub samples: u64,
}

/// What `Otlp::Recorder` is built with: the engine's type and units, its
/// interval, and the recording's start and duration.
#[derive(Debug, Clone)]
pub struct AsyncProfilerRecording {
    pub engine_type: String,
    pub engine_units: String,
    pub interval: u64,
    pub start_nanos: u64,
    pub duration_nanos: u64,
    pub traces: Vec<AsyncProfilerTrace>,
}

/// async-profiler's `Index`: "" at 0, then first-use order.
#[derive(Default)]
struct Index(Vec<String>);

impl Index {
    fn new() -> Self {
        Self(vec![String::new()])
    }

    fn index_of(&mut self, value: &str) -> u64 {
        let at = self.0.iter().position(|s| s == value).unwrap_or_else(|| {
            self.0.push(value.to_owned());
            self.0.len() - 1
        });
        at as u64
    }
}

/// `ProtoBuffer` with its marks: a length prefix of fixed width, filled in
/// when the message is committed.
struct ProtoBuffer(Vec<u8>);

const NESTED_FIELD_BYTE_COUNT: usize = 5;

impl ProtoBuffer {
    fn field(&mut self, number: u32, value: u64) {
        put_key(&mut self.0, number, VARINT);
        put_varint(&mut self.0, value);
    }

    fn field_fixed64(&mut self, number: u32, value: u64) {
        put_key(&mut self.0, number, FIXED64);
        self.0.extend(value.to_le_bytes());
    }

    fn field_bytes(&mut self, number: u32, bytes: &[u8]) {
        put_key(&mut self.0, number, LEN);
        put_varint(&mut self.0, bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn start_message(&mut self, number: u32, width: usize) -> (usize, usize) {
        put_key(&mut self.0, number, LEN);
        let start = self.0.len();
        self.0.resize(start + width, 0);
        (start, width)
    }

    fn commit_message(&mut self, (start, width): (usize, usize)) {
        let mut len = self.0.len() - start - width;
        for i in 0..width - 1 {
            self.0[start + i] = 0x80 | (len as u8 & 0x7f);
            len >>= 7;
        }
        assert!(len < 0x80, "message too long for its length prefix");
        self.0[start + width - 1] = len as u8;
    }
}

/// The bytes async-profiler's `Otlp::Recorder::record` writes for
/// `recording` (with `samples` true: values are sample counts).
pub fn async_profiler_otlp(recording: &AsyncProfilerRecording) -> Vec<u8> {
    let mut strings = Index::new();
    let mut functions = Index::new();
    let mut thread_names = Index::new();
    let engine_type = strings.index_of(&recording.engine_type);
    let engine_units = strings.index_of(&recording.engine_units);
    let count = strings.index_of("count");
    let mut out = ProtoBuffer(Vec::new());

    // recordProfilesDictionary
    let dictionary = out.start_message(2, NESTED_FIELD_BYTE_COUNT);
    // recordStacks: stack_table[0], then one stack per trace.
    let zero_stack = out.start_message(7, NESTED_FIELD_BYTE_COUNT);
    out.commit_message(zero_stack);
    let mut samples_info = Vec::new();
    for trace in &recording.traces {
        let stack = out.start_message(7, NESTED_FIELD_BYTE_COUNT);
        let indices = out.start_message(1, NESTED_FIELD_BYTE_COUNT);
        let thread = trace
            .thread
            .as_deref()
            .map_or(0, |name| thread_names.index_of(name));
        for frame in &trace.frames {
            let location = functions.index_of(frame);
            put_varint(&mut out.0, location);
        }
        out.commit_message(indices);
        out.commit_message(stack);
        samples_info.push((trace.samples, thread));
    }
    // mapping_table[0], one-byte prefix.
    let mapping = out.start_message(1, 1);
    out.commit_message(mapping);
    // link_table[0]: zero-filled ids.
    let link = out.start_message(4, 1);
    out.field_bytes(1, &[0; 16]);
    out.field_bytes(2, &[0; 8]);
    out.commit_message(link);
    // function_table: one per function name, "" first.
    let names: Vec<String> = functions.0.clone();
    for name in &names {
        let function = out.start_message(3, 1);
        let name_index = strings.index_of(name);
        out.field(1, name_index);
        out.commit_message(function);
    }
    // location_table: location i calls function i; location 0 is empty.
    for function_index in 0..names.len() as u64 {
        let location = out.start_message(2, 1);
        if function_index != 0 {
            out.field(1, 0);
            let line = out.start_message(3, 1);
            out.field(1, function_index);
            out.commit_message(line);
        }
        out.commit_message(location);
    }
    // attribute_table: thread names, entry 0 empty with a 5-byte prefix.
    let thread_key = strings.index_of("thread.name");
    for (index, name) in thread_names.0.clone().iter().enumerate() {
        let attribute = out.start_message(6, NESTED_FIELD_BYTE_COUNT);
        if index != 0 {
            out.field(1, thread_key);
            let value = out.start_message(2, NESTED_FIELD_BYTE_COUNT);
            out.field_bytes(1, name.as_bytes());
            out.commit_message(value);
        }
        out.commit_message(attribute);
    }
    for s in &strings.0 {
        out.field_bytes(5, s.as_bytes());
    }
    out.commit_message(dictionary);

    // resource_profiles → scope_profiles → one profile
    let resource_profiles = out.start_message(1, NESTED_FIELD_BYTE_COUNT);
    let scope_profiles = out.start_message(2, NESTED_FIELD_BYTE_COUNT);
    let profile = out.start_message(2, NESTED_FIELD_BYTE_COUNT);
    out.field_fixed64(3, recording.start_nanos);
    out.field(4, recording.duration_nanos);
    for (number, unit) in [(1, count), (5, engine_units)] {
        let value_type = out.start_message(number, 1);
        out.field(1, engine_type);
        out.field(2, unit);
        out.commit_message(value_type);
    }
    out.field(6, recording.interval.max(1));
    for (i, &(samples, thread)) in samples_info.iter().enumerate() {
        let sample = out.start_message(2, 1);
        out.field(1, i as u64 + 1);
        if thread != 0 {
            out.field(2, thread);
        }
        out.field(4, samples);
        out.commit_message(sample);
    }
    out.commit_message(profile);
    out.commit_message(scope_profiles);
    out.commit_message(resource_profiles);
    out.0
}

/// A small recording with a few Java-like call traces, two threads and one
/// trace without a thread.
pub fn async_profiler_recording() -> AsyncProfilerRecording {
    let frames = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
    AsyncProfilerRecording {
        engine_type: "cpu".into(),
        engine_units: "ns".into(),
        interval: 10_000_000,
        start_nanos: 1_700_000_000_000_000_000,
        duration_nanos: 5_000_000_000,
        traces: vec![
            AsyncProfilerTrace {
                frames: frames(&["java.lang.String.hashCode", "App.work", "App.main"]),
                thread: Some("main".into()),
                samples: 7,
            },
            AsyncProfilerTrace {
                frames: frames(&["App.idle", "App.main"]),
                thread: Some("main".into()),
                samples: 3,
            },
            AsyncProfilerTrace {
                frames: frames(&["Unsafe.park", "Worker.run", "Thread.run"]),
                thread: Some("worker-1".into()),
                samples: 11,
            },
            AsyncProfilerTrace {
                frames: frames(&["GCTaskThread::run"]),
                thread: None,
                samples: 2,
            },
        ],
    }
}
