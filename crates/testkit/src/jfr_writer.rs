//! A small JFR recording writer for precise cases: one chunk with a
//! metadata event, a constant pool event and the events asked for, every
//! part editable before it is written ([`Recording`]); and recordings
//! shaped as async-profiler writes them, the profiler the Pyroscope Java
//! agent embeds ([`async_profiler`]).

/// A field value as the writer encodes it.
#[derive(Debug, Clone)]
pub enum Val {
    Long(i64),
    Int(i32),
    Bool(bool),
    Str(String),
    /// A null string (async-profiler's Java name of a thread the JVM does
    /// not know).
    NullStr,
    /// Objects written in place, each a list of field values.
    Objects(Vec<Vec<Val>>),
}

pub fn s(text: &str) -> Val {
    Val::Str(text.to_owned())
}

#[derive(Debug, Clone)]
pub struct FieldSpec {
    pub name: String,
    pub class: i64,
    pub constant_pool: bool,
    pub array: bool,
}

#[derive(Debug, Clone)]
pub struct ClassSpec {
    pub id: i64,
    pub name: String,
    /// The `superType` attribute (`jdk.jfr.Event` for an event type).
    pub super_type: Option<String>,
    /// The `simpleType` attribute (a type of one field).
    pub simple_type: bool,
    pub fields: Vec<FieldSpec>,
}

pub const BOOLEAN: i64 = 4;
pub const INT: i64 = 5;
pub const LONG: i64 = 6;
pub const STRING: i64 = 7;
pub const SYMBOL: i64 = 20;
pub const CLASS: i64 = 21;
pub const METHOD: i64 = 22;
pub const FRAME_TYPE: i64 = 23;
pub const STACK_FRAME: i64 = 24;
pub const STACK_TRACE: i64 = 25;
pub const THREAD_STATE: i64 = 26;
pub const THREAD: i64 = 27;
pub const EXECUTION_SAMPLE: i64 = 100;
pub const ACTIVE_SETTING: i64 = 101;

fn class(id: i64, name: &str, fields: &[(&str, i64, bool, bool)]) -> ClassSpec {
    ClassSpec {
        id,
        name: name.to_owned(),
        super_type: None,
        simple_type: false,
        fields: fields
            .iter()
            .map(|(name, class, constant_pool, array)| FieldSpec {
                name: (*name).to_owned(),
                class: *class,
                constant_pool: *constant_pool,
                array: *array,
            })
            .collect(),
    }
}

/// Where the parts of a written chunk start.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub size: usize,
    pub metadata: usize,
    pub constant_pool: usize,
}

/// A constant pool entry: its id and its fields.
pub type PoolEntry = (i64, Vec<Val>);

#[derive(Debug, Clone)]
pub struct Recording {
    pub compressed: bool,
    pub classes: Vec<ClassSpec>,
    /// (type id, entries of (id, fields)).
    pub pools: Vec<(i64, Vec<PoolEntry>)>,
    /// (type id, fields).
    pub events: Vec<(i64, Vec<Val>)>,
    /// Write two constant pool events whose deltas point at each other.
    pub looping_pool_chain: bool,
    /// The delta written in the constant pool event instead of 0.
    pub pool_delta: Option<i64>,
    pub header: ChunkHeader,
    /// How the parts are laid out and framed.
    pub shape: Shape,
}

/// The chunk header's times.
#[derive(Debug, Clone, Copy)]
pub struct ChunkHeader {
    pub minor_version: u16,
    pub start_nanos: u64,
    pub duration_nanos: u64,
    pub start_ticks: u64,
    pub ticks_per_second: u64,
}

impl Default for ChunkHeader {
    fn default() -> Self {
        Self {
            minor_version: 1,
            start_nanos: 1_700_000_000_000_000_000,
            duration_nanos: 2_000_000_000,
            start_ticks: 0,
            ticks_per_second: 1_000_000_000,
        }
    }
}

/// How a chunk's parts are laid out and framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The events, then the metadata, then the constant pool; every
    /// event's size in 4 bytes (a varint padded to 4 bytes when integers
    /// are compressed), as the JDK writes sizes; the metadata and pool
    /// events' start time, duration and ids 0.
    Plain,
    /// As async-profiler writes a chunk ([`async_profiler`]): the metadata
    /// first (its id `0x7fffffff`), then the events, then the constant
    /// pool (flush flag 1); the metadata's, the pool's and every
    /// `jdk.ActiveSetting`'s size a varint padded to 5 bytes, every other
    /// event's size one byte; the metadata's and pool's start time the
    /// chunk's start ticks.
    AsyncProfiler,
}

/// How an event's size is written.
#[derive(Debug, Clone, Copy)]
enum SizeField {
    /// A varint padded to this many bytes (a fixed-width big-endian
    /// number when integers are not compressed).
    Padded(usize),
    /// One byte.
    Byte,
}

impl Recording {
    /// Types like the JDK's (fewer fields), a thread "worker" running
    /// `com/example/Main.work` at line 42, and one CPU sample of it.
    pub fn standard() -> Self {
        let classes = vec![
            class(BOOLEAN, "boolean", &[]),
            class(INT, "int", &[]),
            class(LONG, "long", &[]),
            class(STRING, "java.lang.String", &[]),
            class(
                SYMBOL,
                "jdk.types.Symbol",
                &[("string", STRING, false, false)],
            ),
            class(CLASS, "java.lang.Class", &[("name", SYMBOL, true, false)]),
            class(
                METHOD,
                "jdk.types.Method",
                &[
                    ("type", CLASS, true, false),
                    ("name", SYMBOL, true, false),
                    ("descriptor", SYMBOL, true, false),
                ],
            ),
            class(
                FRAME_TYPE,
                "jdk.types.FrameType",
                &[("description", STRING, false, false)],
            ),
            class(
                STACK_FRAME,
                "jdk.types.StackFrame",
                &[
                    ("method", METHOD, true, false),
                    ("lineNumber", INT, false, false),
                    ("bytecodeIndex", INT, false, false),
                    ("type", FRAME_TYPE, true, false),
                ],
            ),
            class(
                STACK_TRACE,
                "jdk.types.StackTrace",
                &[
                    ("truncated", BOOLEAN, false, false),
                    ("frames", STACK_FRAME, false, true),
                ],
            ),
            class(
                THREAD_STATE,
                "jdk.types.ThreadState",
                &[("name", STRING, false, false)],
            ),
            class(
                THREAD,
                "java.lang.Thread",
                &[
                    ("osName", STRING, false, false),
                    ("javaName", STRING, false, false),
                ],
            ),
            class(
                EXECUTION_SAMPLE,
                "jdk.ExecutionSample",
                &[
                    ("startTime", LONG, false, false),
                    ("sampledThread", THREAD, true, false),
                    ("stackTrace", STACK_TRACE, true, false),
                    ("state", THREAD_STATE, true, false),
                    ("contextId", LONG, false, false),
                    ("spanId", LONG, false, false),
                    ("spanName", LONG, false, false),
                ],
            ),
            class(
                ACTIVE_SETTING,
                "jdk.ActiveSetting",
                &[
                    ("startTime", LONG, false, false),
                    ("id", LONG, false, false),
                    ("name", STRING, false, false),
                    ("value", STRING, false, false),
                ],
            ),
        ];
        let frame = vec![Val::Long(1), Val::Int(42), Val::Int(3), Val::Long(1)];
        let pools = vec![
            (
                SYMBOL,
                vec![
                    (1, vec![s("com/example/Main")]),
                    (2, vec![s("work")]),
                    (3, vec![s("()V")]),
                ],
            ),
            (CLASS, vec![(1, vec![Val::Long(1)])]),
            (
                METHOD,
                vec![(1, vec![Val::Long(1), Val::Long(2), Val::Long(3)])],
            ),
            (FRAME_TYPE, vec![(1, vec![s("JIT compiled")])]),
            (
                THREAD_STATE,
                vec![
                    (1, vec![s("STATE_RUNNABLE")]),
                    (2, vec![s("STATE_SLEEPING")]),
                ],
            ),
            (THREAD, vec![(1, vec![s("os-worker"), s("worker")])]),
            (
                STACK_TRACE,
                vec![(1, vec![Val::Bool(false), Val::Objects(vec![frame])])],
            ),
        ];
        Self {
            compressed: true,
            classes,
            pools,
            events: vec![(EXECUTION_SAMPLE, Self::sample(1, 1, 0))],
            looping_pool_chain: false,
            pool_delta: None,
            header: ChunkHeader::default(),
            shape: Shape::Plain,
        }
    }

    /// An execution sample's fields: thread 1, this stack and state.
    pub fn sample(stack: i64, state: i64, context: i64) -> Vec<Val> {
        vec![
            Val::Long(0),
            Val::Long(1),
            Val::Long(stack),
            Val::Long(state),
            Val::Long(context),
            Val::Long(0),
            Val::Long(0),
        ]
    }

    pub fn class_mut(&mut self, id: i64) -> &mut ClassSpec {
        self.classes
            .iter_mut()
            .find(|c| c.id == id)
            .expect("a class of the standard set")
    }

    pub fn build(&self) -> Vec<u8> {
        self.build_with_layout().0
    }

    pub fn build_with_layout(&self) -> (Vec<u8>, Layout) {
        let enc = Encoder {
            compressed: self.compressed,
        };
        let async_profiler = self.shape == Shape::AsyncProfiler;
        let mut chunk = vec![0u8; 68];
        let mut metadata = chunk.len();
        if async_profiler {
            chunk.extend(enc.event(0, &self.metadata_body(&enc), SizeField::Padded(5)));
        }
        for (type_id, fields) in &self.events {
            let size = match self.shape {
                Shape::Plain => SizeField::Padded(4),
                Shape::AsyncProfiler if *type_id == async_profiler::ACTIVE_SETTING => {
                    SizeField::Padded(5)
                }
                Shape::AsyncProfiler => SizeField::Byte,
            };
            chunk.extend(enc.event(*type_id, &self.encode_fields(&enc, fields), size));
        }
        if !async_profiler {
            metadata = chunk.len();
            chunk.extend(enc.event(0, &self.metadata_body(&enc), SizeField::Padded(4)));
        }
        let mut constant_pool = chunk.len();
        if self.looping_pool_chain {
            // The first event points forward at the second, the second
            // (the header's) back at the first.
            let mut first_len = self.pool_event(&enc, 0).len();
            for _ in 0..3 {
                first_len = self.pool_event(&enc, first_len as i64).len();
            }
            let first = self.pool_event(&enc, first_len as i64);
            assert_eq!(first.len(), first_len);
            let back = self.pool_event(&enc, -(first_len as i64));
            chunk.extend(first);
            constant_pool = chunk.len();
            chunk.extend(back);
        } else {
            chunk.extend(self.pool_event(&enc, self.pool_delta.unwrap_or(0)));
        }
        let size = chunk.len();
        let header = &self.header;
        let mut head = Vec::with_capacity(68);
        head.extend(b"FLR\0");
        head.extend(2u16.to_be_bytes());
        head.extend(header.minor_version.to_be_bytes());
        head.extend((size as u64).to_be_bytes());
        head.extend((constant_pool as u64).to_be_bytes());
        head.extend((metadata as u64).to_be_bytes());
        head.extend(header.start_nanos.to_be_bytes());
        head.extend(header.duration_nanos.to_be_bytes());
        head.extend(header.start_ticks.to_be_bytes());
        head.extend(header.ticks_per_second.to_be_bytes());
        head.extend(u32::from(self.compressed).to_be_bytes());
        chunk.splice(0..68, head);
        (
            chunk,
            Layout {
                size,
                metadata,
                constant_pool,
            },
        )
    }

    /// The start time written in the metadata and pool events.
    fn part_start(&self) -> i64 {
        match self.shape {
            Shape::Plain => 0,
            Shape::AsyncProfiler => self.header.start_ticks as i64,
        }
    }

    fn class_of(&self, id: i64) -> &ClassSpec {
        self.classes
            .iter()
            .find(|c| c.id == id)
            .expect("a declared class")
    }

    fn encode_fields(&self, enc: &Encoder, fields: &[Val]) -> Vec<u8> {
        let mut out = Vec::new();
        for value in fields {
            enc.value(&mut out, value);
        }
        let _ = self;
        out
    }

    fn pool_event(&self, enc: &Encoder, delta: i64) -> Vec<u8> {
        let mut body = Vec::new();
        enc.long(&mut body, self.part_start());
        enc.long(&mut body, 0);
        enc.long(&mut body, delta);
        enc.int(&mut body, i32::from(self.shape == Shape::AsyncProfiler));
        enc.int(&mut body, self.pools.len() as i32);
        for (type_id, entries) in &self.pools {
            let _ = self.class_of(*type_id);
            enc.long(&mut body, *type_id);
            enc.int(&mut body, entries.len() as i32);
            for (id, fields) in entries {
                enc.long(&mut body, *id);
                body.extend(self.encode_fields(enc, fields));
            }
        }
        let size = match self.shape {
            Shape::Plain => SizeField::Padded(4),
            Shape::AsyncProfiler => SizeField::Padded(5),
        };
        enc.event(1, &body, size)
    }

    fn metadata_body(&self, enc: &Encoder) -> Vec<u8> {
        let mut strings: Vec<String> = Vec::new();
        let mut index = |text: &str| -> i32 {
            if let Some(i) = strings.iter().position(|s| s == text) {
                return i as i32;
            }
            strings.push(text.to_owned());
            (strings.len() - 1) as i32
        };
        let mut tree = Vec::new();
        let element = |tree: &mut Vec<u8>, name: i32, attributes: &[(i32, i32)], children: i32| {
            enc.int(tree, name);
            enc.int(tree, attributes.len() as i32);
            for (k, v) in attributes {
                enc.int(tree, *k);
                enc.int(tree, *v);
            }
            enc.int(tree, children);
        };
        element(&mut tree, index("root"), &[], 2);
        element(&mut tree, index("metadata"), &[], self.classes.len() as i32);
        for class in &self.classes {
            let mut attributes = vec![
                (index("name"), index(&class.name)),
                (index("id"), index(&class.id.to_string())),
            ];
            if class.simple_type {
                attributes.push((index("simpleType"), index("true")));
            }
            if let Some(super_type) = &class.super_type {
                attributes.push((index("superType"), index(super_type)));
            }
            element(
                &mut tree,
                index("class"),
                &attributes,
                class.fields.len() as i32,
            );
            for field in &class.fields {
                let mut attributes = vec![
                    (index("name"), index(&field.name)),
                    (index("class"), index(&field.class.to_string())),
                ];
                if field.constant_pool {
                    attributes.push((index("constantPool"), index("true")));
                }
                if field.array {
                    attributes.push((index("dimension"), index("1")));
                }
                element(&mut tree, index("field"), &attributes, 0);
            }
        }
        let region = match self.shape {
            Shape::Plain => vec![],
            Shape::AsyncProfiler => vec![
                (index("locale"), index("en_US")),
                (index("gmtOffset"), index("0")),
            ],
        };
        element(&mut tree, index("region"), &region, 0);
        let metadata_id = match self.shape {
            Shape::Plain => 0,
            Shape::AsyncProfiler => 0x7fff_ffff,
        };
        let mut body = Vec::new();
        enc.long(&mut body, self.part_start());
        enc.long(&mut body, 0);
        enc.long(&mut body, metadata_id);
        enc.int(&mut body, strings.len() as i32);
        for text in &strings {
            enc.value(&mut body, &Val::Str(text.clone()));
        }
        body.extend(tree);
        body
    }
}

struct Encoder {
    compressed: bool,
}

impl Encoder {
    fn varint(out: &mut Vec<u8>, mut value: u64) {
        loop {
            if value < 0x80 {
                out.push(value as u8);
                return;
            }
            out.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
    }

    fn long(&self, out: &mut Vec<u8>, value: i64) {
        if self.compressed {
            Self::varint(out, value as u64);
        } else {
            out.extend(value.to_be_bytes());
        }
    }

    fn int(&self, out: &mut Vec<u8>, value: i32) {
        if self.compressed {
            Self::varint(out, u64::from(value as u32));
        } else {
            out.extend(value.to_be_bytes());
        }
    }

    fn value(&self, out: &mut Vec<u8>, value: &Val) {
        match value {
            Val::Long(v) => self.long(out, *v),
            Val::Int(v) => self.int(out, *v),
            Val::Bool(b) => out.push(u8::from(*b)),
            Val::NullStr => out.push(0),
            Val::Str(text) => {
                out.push(3);
                self.int(out, text.len() as i32);
                out.extend(text.as_bytes());
            }
            Val::Objects(objects) => {
                self.int(out, objects.len() as i32);
                for fields in objects {
                    for field in fields {
                        self.value(out, field);
                    }
                }
            }
        }
    }

    /// An event: its size, its type id, its body.
    fn event(&self, type_id: i64, body: &[u8], size_field: SizeField) -> Vec<u8> {
        let mut rest = Vec::new();
        self.long(&mut rest, type_id);
        rest.extend(body);
        let mut out = Vec::new();
        match size_field {
            SizeField::Byte => {
                let size = rest.len() + 1;
                assert!(
                    size < 0x80,
                    "an event of {size} bytes does not fit one byte"
                );
                out.push(size as u8);
            }
            SizeField::Padded(width) if self.compressed => {
                let size = rest.len() + width;
                for i in 0..width {
                    let bits = (size >> (7 * i)) as u8 & 0x7f;
                    out.push(if i + 1 < width { bits | 0x80 } else { bits });
                }
            }
            SizeField::Padded(width) => {
                let size = (rest.len() + width) as u64;
                out.extend(&size.to_be_bytes()[8 - width..]);
            }
        }
        out.extend(rest);
        out
    }
}

/// Recordings shaped as async-profiler writes them, in the version the
/// Pyroscope Java agent embeds: Grafana's fork of async-profiler, which adds
/// a `contextId` field (the agent's current context, 0 for none) to
/// `jdk.ExecutionSample`, both TLAB allocation events and
/// `jdk.JavaMonitorEnter`.
///
/// Followed: grafana/async-profiler tag v3.0.0.1 (commit a647de3, the
/// newest of the fork available here; pyroscope-java 2.9.1 downloads the
/// fork's 4.5.0.0 build), `src/jfrMetadata.h` and `src/jfrMetadata.cpp`
/// (type ids, type and field names and order, which fields are constant
/// pool references, arrays, simple types and events), `src/vmEntry.h` and
/// `src/os.h` (frame type and thread state ids), and
/// `src/flightRecorder.cpp`: the chunk is the header, the metadata event,
/// the recording's `jdk.ActiveRecording` and `jdk.ActiveSetting`s, the
/// samples, and the constant pool last, ten pools in its order (frame
/// types, thread states, GC whens, threads, stack traces, methods,
/// classes, packages, symbols, log levels); a Java frame's method is its
/// class, name and descriptor; a native frame's method is a "class"
/// named after its library (the file name of its path, a pseudo-library
/// such as `[kernel]` without its brackets, an empty name when the library
/// is unknown), the function's name and the descriptor `()L;`, modifiers
/// `0x100`, line and bytecode index 0; a kernel function (`name_[k]`) is a
/// method of `kernel` named without the suffix, descriptor `(Lk;)L;`;
/// dictionary ids (methods, classes, packages, symbols) count from 1 in
/// the order first met; a thread's Java name is null when the JVM does not
/// know the thread; CPU samples (`itimer`, `cpu`) have the thread state
/// `STATE_DEFAULT`.
///
/// Left out, since no reader of ours looks at them: annotations in the
/// metadata (labels, units), the types of the events not written here
/// (CPU load, OS, CPU and JVM information, system properties, native
/// libraries, GC heap summaries, logs, windows, live objects), and the
/// settings whose values depend on the machine.
pub mod async_profiler {
    use std::collections::BTreeMap;

    use super::{ChunkHeader, ClassSpec, FieldSpec, PoolEntry, Recording, Shape, Val};

    // Type ids (src/jfrMetadata.h).
    pub const BOOLEAN: i64 = 4;
    pub const CHAR: i64 = 5;
    pub const FLOAT: i64 = 6;
    pub const DOUBLE: i64 = 7;
    pub const BYTE: i64 = 8;
    pub const SHORT: i64 = 9;
    pub const INT: i64 = 10;
    pub const LONG: i64 = 11;
    pub const STRING: i64 = 20;
    pub const CLASS: i64 = 21;
    pub const THREAD: i64 = 22;
    pub const CLASS_LOADER: i64 = 23;
    pub const FRAME_TYPE: i64 = 24;
    pub const THREAD_STATE: i64 = 25;
    pub const STACK_TRACE: i64 = 26;
    pub const STACK_FRAME: i64 = 27;
    pub const METHOD: i64 = 28;
    pub const PACKAGE: i64 = 30;
    pub const SYMBOL: i64 = 31;
    pub const GC_WHEN: i64 = 32;
    pub const LOG_LEVEL: i64 = 33;
    pub const EXECUTION_SAMPLE: i64 = 101;
    pub const ALLOC_IN_NEW_TLAB: i64 = 102;
    pub const ALLOC_OUTSIDE_TLAB: i64 = 103;
    pub const MONITOR_ENTER: i64 = 104;
    pub const THREAD_PARK: i64 = 105;
    pub const ACTIVE_RECORDING: i64 = 107;
    pub const ACTIVE_SETTING: i64 = 108;
    pub const WALL_CLOCK_SAMPLE: i64 = 118;

    /// The version `jdk.ActiveRecording` and the `version` setting name.
    pub const VERSION: &str = "3.0.0.1";

    /// `jdk.types.FrameType`: ids and descriptions.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum FrameType {
        Interpreted = 0,
        JitCompiled = 1,
        Inlined = 2,
        Native = 3,
        Cpp = 4,
        Kernel = 5,
        C1Compiled = 6,
    }

    impl FrameType {
        pub const ALL: [Self; 7] = [
            Self::Interpreted,
            Self::JitCompiled,
            Self::Inlined,
            Self::Native,
            Self::Cpp,
            Self::Kernel,
            Self::C1Compiled,
        ];

        pub fn description(self) -> &'static str {
            match self {
                Self::Interpreted => "Interpreted",
                Self::JitCompiled => "JIT compiled",
                Self::Inlined => "Inlined",
                Self::Native => "Native",
                Self::Cpp => "C++",
                Self::Kernel => "Kernel",
                Self::C1Compiled => "C1 compiled",
            }
        }
    }

    /// `jdk.types.ThreadState`: ids and names.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ThreadState {
        Default = 0,
        Runnable = 1,
        Sleeping = 2,
    }

    impl ThreadState {
        pub const ALL: [Self; 3] = [Self::Default, Self::Runnable, Self::Sleeping];

        pub fn name(self) -> &'static str {
            match self {
                Self::Default => "STATE_DEFAULT",
                Self::Runnable => "STATE_RUNNABLE",
                Self::Sleeping => "STATE_SLEEPING",
            }
        }
    }

    /// A frame of a sampled stack.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Frame {
        /// A Java method: its class (slashes between packages), name and
        /// descriptor, the line and bytecode index, and how it ran.
        Java {
            class: String,
            method: String,
            descriptor: String,
            line: i32,
            bci: i32,
            frame_type: FrameType,
        },
        /// A native function of a library (`None`: unknown), as
        /// async-profiler resolves a native frame.
        Native {
            library: Option<String>,
            function: String,
        },
        /// A demangled C++ function of a library.
        Cpp { library: String, function: String },
        /// A kernel function (from `/proc/kallsyms`).
        Kernel { function: String },
    }

    impl Frame {
        /// A JIT-compiled Java method `class.method()V` at `line`.
        pub fn java(class: &str, method: &str, line: i32) -> Self {
            Self::Java {
                class: class.to_owned(),
                method: method.to_owned(),
                descriptor: "()V".to_owned(),
                line,
                bci: 0,
                frame_type: FrameType::JitCompiled,
            }
        }

        /// The same Java frame, run as `frame_type`.
        pub fn run_as(self, run: FrameType) -> Self {
            match self {
                Self::Java {
                    class,
                    method,
                    descriptor,
                    line,
                    bci,
                    ..
                } => Self::Java {
                    class,
                    method,
                    descriptor,
                    line,
                    bci,
                    frame_type: run,
                },
                other => other,
            }
        }

        pub fn native(library: &str, function: &str) -> Self {
            Self::Native {
                library: Some(library.to_owned()),
                function: function.to_owned(),
            }
        }

        pub fn kernel(function: &str) -> Self {
            Self::Kernel {
                function: function.to_owned(),
            }
        }

        /// The method's class name as the recording holds it: the Java
        /// class, the library of a native or C++ function (empty when
        /// unknown), `kernel` for a kernel function.
        pub fn class_name(&self) -> &str {
            match self {
                Self::Java { class, .. } => class,
                Self::Native { library, .. } => library.as_deref().unwrap_or(""),
                Self::Cpp { library, .. } => library,
                Self::Kernel { .. } => "kernel",
            }
        }

        /// The method's name as the recording holds it.
        pub fn method_name(&self) -> &str {
            match self {
                Self::Java { method, .. } => method,
                Self::Native { function, .. }
                | Self::Cpp { function, .. }
                | Self::Kernel { function } => function,
            }
        }

        /// The line number written (0 for a native frame).
        pub fn line(&self) -> i32 {
            match self {
                Self::Java { line, .. } => *line,
                _ => 0,
            }
        }

        pub fn frame_type(&self) -> FrameType {
            match self {
                Self::Java { frame_type, .. } => *frame_type,
                Self::Native { .. } => FrameType::Native,
                Self::Cpp { .. } => FrameType::Cpp,
                Self::Kernel { .. } => FrameType::Kernel,
            }
        }

        fn descriptor(&self) -> &str {
            match self {
                Self::Java { descriptor, .. } => descriptor,
                Self::Native { .. } | Self::Cpp { .. } => "()L;",
                Self::Kernel { .. } => "(Lk;)L;",
            }
        }

        fn modifiers(&self) -> i32 {
            match self {
                // Public static, as a workload's methods are here.
                Self::Java { .. } => 0x9,
                _ => 0x100,
            }
        }

        fn bci(&self) -> i32 {
            match self {
                Self::Java { bci, .. } => *bci,
                _ => 0,
            }
        }
    }

    /// A thread async-profiler has seen: its OS thread id, its name, and
    /// its Java thread id when the JVM knows it (else its Java name is
    /// null and its Java id 0).
    #[derive(Debug, Clone)]
    pub struct Thread {
        pub tid: i64,
        pub name: String,
        pub java_thread_id: Option<i64>,
    }

    /// One sample.
    #[derive(Debug, Clone)]
    pub struct Sample {
        /// The OS thread id of one of the recording's threads.
        pub tid: i64,
        /// Leaf first.
        pub stack: Vec<Frame>,
        pub state: ThreadState,
        /// The agent's context id when sampled; 0 for none (only
        /// `jdk.ExecutionSample` has the field).
        pub context_id: i64,
    }

    /// One chunk of an async-profiler recording.
    #[derive(Debug, Clone)]
    pub struct AsyncProfilerRecording {
        /// The `event` setting: `itimer` (the Pyroscope agent's default),
        /// `cpu`, `wall`, ...
        pub event: String,
        /// The `interval` setting, nanoseconds.
        pub interval_nanos: i64,
        pub header: ChunkHeader,
        pub threads: Vec<Thread>,
        /// `jdk.ExecutionSample`s.
        pub execution_samples: Vec<Sample>,
        /// `profiler.WallClockSample`s, each with its `samples` count.
        pub wall_clock_samples: Vec<(Sample, i32)>,
    }

    impl AsyncProfilerRecording {
        /// No samples yet; `event` every `interval_nanos`, a chunk of ten
        /// seconds from 2026-11-27 22:00 UTC on a 2.4 GHz TSC clock.
        pub fn new(event: &str, interval_nanos: i64) -> Self {
            Self {
                event: event.to_owned(),
                interval_nanos,
                header: ChunkHeader {
                    minor_version: 0,
                    start_nanos: 1_795_816_800_000_000_000,
                    duration_nanos: 10_000_000_000,
                    start_ticks: 8_123_456_789_000,
                    ticks_per_second: 2_400_000_000,
                },
                threads: Vec::new(),
                execution_samples: Vec::new(),
                wall_clock_samples: Vec::new(),
            }
        }

        /// What the Pyroscope agent's profiler records by default (`itimer`
        /// every 10 ms) of a small web shop: two request threads, in Java
        /// code and in a `write` system call (Java, `libc.so.6`, `libjvm.so`
        /// and kernel frames), under the agent's contexts 1 to 3, none (0)
        /// and 7 (one the labels snapshot may no longer hold); and a JVM
        /// thread the JVM gives no Java name, in native code only.
        pub fn agent_example() -> Self {
            use FrameType::{Inlined, Interpreted, JitCompiled};
            let run = |frame: Frame, how| frame.run_as(how);
            let request = |leaf: Vec<Frame>| {
                let mut stack = leaf;
                stack.extend([
                    run(
                        Frame::java("com/example/shop/OrderController", "checkout", 57),
                        JitCompiled,
                    ),
                    run(
                        Frame::java(
                            "org/apache/tomcat/util/threads/TaskThread$WrappingRunnable",
                            "run",
                            61,
                        ),
                        Interpreted,
                    ),
                    run(Frame::java("java/lang/Thread", "run", 840), Interpreted),
                ]);
                stack
            };
            let pricing = request(vec![
                run(
                    Frame::java("com/example/shop/Prices", "discount", 112),
                    Inlined,
                ),
                Frame::java("com/example/shop/Prices", "total", 98),
            ]);
            let writing = request(vec![
                Frame::kernel("copy_user_enhanced_fast_string"),
                Frame::kernel("tcp_sendmsg"),
                Frame::kernel("do_syscall_64"),
                Frame::native("libc.so.6", "__write"),
                Frame::native("libjava.so", "NET_Send"),
                Frame::Java {
                    class: "sun/nio/ch/SocketDispatcher".to_owned(),
                    method: "write0".to_owned(),
                    descriptor: "(Ljava/io/FileDescriptor;JI)I".to_owned(),
                    // A native Java method has no line number table.
                    line: 0,
                    bci: 0,
                    frame_type: JitCompiled,
                },
                Frame::java("com/example/shop/OrderController", "respond", 73),
            ]);
            let marking = vec![
                Frame::Cpp {
                    library: "libjvm.so".to_owned(),
                    function: "G1ConcurrentMark::mark_from_roots()".to_owned(),
                },
                Frame::native("libjvm.so", "thread_native_entry"),
                Frame::native("libc.so.6", "start_thread"),
                Frame::Native {
                    library: None,
                    function: "0x7f3a2c1b2f40".to_owned(),
                },
            ];
            let mut recording = Self::new("itimer", 10_000_000);
            recording.threads = vec![
                Thread {
                    tid: 4101,
                    name: "http-nio-8080-exec-1".to_owned(),
                    java_thread_id: Some(31),
                },
                Thread {
                    tid: 4102,
                    name: "http-nio-8080-exec-2".to_owned(),
                    java_thread_id: Some(32),
                },
                Thread {
                    tid: 4020,
                    name: "G1 Conc#0".to_owned(),
                    java_thread_id: None,
                },
            ];
            let plan: [(i64, &Vec<Frame>, i64, usize); 8] = [
                (4101, &pricing, 1, 5),
                (4101, &writing, 1, 3),
                (4102, &pricing, 2, 4),
                (4102, &writing, 3, 2),
                (4101, &pricing, 0, 6),
                (4102, &writing, 0, 1),
                (4102, &pricing, 7, 1),
                (4020, &marking, 0, 3),
            ];
            for (tid, stack, context_id, count) in plan {
                for _ in 0..count {
                    recording.execution_samples.push(Sample {
                        tid,
                        stack: stack.clone(),
                        state: ThreadState::Default,
                        context_id,
                    });
                }
            }
            recording
        }

        pub fn build(&self) -> Vec<u8> {
            self.recording().build()
        }

        /// The recording as [`Recording`] parts, to edit before writing.
        pub fn recording(&self) -> Recording {
            let mut pools = Pools::default();
            let mut events = vec![(ACTIVE_RECORDING, self.recording_info())];
            events.extend(self.settings());
            let ticks = self.header.start_ticks as i64;
            let interval_ticks =
                self.interval_nanos * self.header.ticks_per_second as i64 / 1_000_000_000;
            for (n, sample) in self.execution_samples.iter().enumerate() {
                let trace = pools.stack_trace(&sample.stack);
                events.push((
                    EXECUTION_SAMPLE,
                    vec![
                        Val::Long(ticks + interval_ticks * (n as i64 + 1)),
                        Val::Long(sample.tid),
                        Val::Long(trace),
                        Val::Long(sample.state as i64),
                        Val::Long(sample.context_id),
                    ],
                ));
            }
            for (n, (sample, samples)) in self.wall_clock_samples.iter().enumerate() {
                let trace = pools.stack_trace(&sample.stack);
                events.push((
                    WALL_CLOCK_SAMPLE,
                    vec![
                        Val::Long(ticks + interval_ticks * (n as i64 + 1)),
                        Val::Long(sample.tid),
                        Val::Long(trace),
                        Val::Long(sample.state as i64),
                        Val::Int(*samples),
                    ],
                ));
            }
            Recording {
                compressed: true,
                classes: metadata(),
                pools: pools.write(&self.threads),
                events,
                looping_pool_chain: false,
                pool_delta: None,
                header: self.header,
                shape: Shape::AsyncProfiler,
            }
        }

        /// `jdk.ActiveRecording`, as `writeRecordingInfo` fills it.
        fn recording_info(&self) -> Vec<Val> {
            vec![
                Val::Long(self.header.start_ticks as i64),
                Val::Long(1),
                Val::Str(format!("async-profiler {VERSION}")),
                Val::Str("async-profiler.jfr".to_owned()),
                Val::Long(i64::MAX),
                Val::Long(0),
                Val::Long((self.header.start_nanos / 1_000_000) as i64),
                Val::Long(i64::MAX),
            ]
        }

        /// The `jdk.ActiveSetting`s `writeSettings` writes that do not
        /// depend on the machine: those of the recording (its id
        /// `jdk.ActiveRecording`'s), then of each event type.
        fn settings(&self) -> Vec<(i64, Vec<Val>)> {
            let start = Val::Long(self.header.start_ticks as i64);
            let setting = |category: i64, key: &str, value: Option<&str>| {
                (
                    ACTIVE_SETTING,
                    vec![
                        start.clone(),
                        Val::Long(category),
                        Val::Str(key.to_owned()),
                        value.map_or(Val::NullStr, |v| Val::Str(v.to_owned())),
                    ],
                )
            };
            let interval = self.interval_nanos.to_string();
            vec![
                setting(ACTIVE_RECORDING, "version", Some(VERSION)),
                setting(ACTIVE_RECORDING, "event", Some(&self.event)),
                setting(ACTIVE_RECORDING, "filter", None),
                setting(ACTIVE_RECORDING, "begin", None),
                setting(ACTIVE_RECORDING, "end", None),
                setting(ACTIVE_RECORDING, "jstackdepth", Some("2048")),
                setting(EXECUTION_SAMPLE, "enabled", Some("true")),
                setting(EXECUTION_SAMPLE, "interval", Some(&interval)),
                setting(EXECUTION_SAMPLE, "alluser", Some("false")),
                setting(ALLOC_IN_NEW_TLAB, "enabled", Some("false")),
                setting(ALLOC_OUTSIDE_TLAB, "enabled", Some("false")),
                setting(MONITOR_ENTER, "enabled", Some("false")),
                setting(THREAD_PARK, "enabled", Some("false")),
            ]
        }
    }

    /// Ids from 1 in the order first met, as async-profiler's dictionaries
    /// give them.
    #[derive(Default)]
    struct Dictionary(BTreeMap<String, i64>);

    impl Dictionary {
        fn lookup(&mut self, text: &str) -> i64 {
            let next = self.0.len() as i64 + 1;
            *self.0.entry(text.to_owned()).or_insert(next)
        }

        fn by_id(&self) -> BTreeMap<i64, &str> {
            self.0
                .iter()
                .map(|(text, id)| (*id, text.as_str()))
                .collect()
        }
    }

    /// The constant pools as the samples fill them.
    #[derive(Default)]
    struct Pools {
        traces: Vec<Vec<Frame>>,
        /// Method key by frame (a method's key ignores line and type).
        methods: Vec<(String, String, String, i32)>,
        classes: Dictionary,
        symbols: Dictionary,
    }

    impl Pools {
        /// The call trace id of `stack` (1 and up).
        fn stack_trace(&mut self, stack: &[Frame]) -> i64 {
            if let Some(at) = self.traces.iter().position(|t| t == stack) {
                return at as i64 + 1;
            }
            for frame in stack {
                self.method(frame);
            }
            self.traces.push(stack.to_vec());
            self.traces.len() as i64
        }

        fn method(&mut self, frame: &Frame) -> i64 {
            let key = (
                frame.class_name().to_owned(),
                frame.method_name().to_owned(),
                frame.descriptor().to_owned(),
                frame.modifiers(),
            );
            if let Some(at) = self.methods.iter().position(|m| *m == key) {
                return at as i64 + 1;
            }
            self.classes.lookup(&key.0);
            self.symbols.lookup(&key.1);
            self.symbols.lookup(&key.2);
            self.methods.push(key);
            self.methods.len() as i64
        }

        fn write(mut self, threads: &[Thread]) -> Vec<(i64, Vec<PoolEntry>)> {
            let s = |text: &str| Val::Str(text.to_owned());
            let frame_types = FrameType::ALL
                .iter()
                .map(|t| (*t as i64, vec![s(t.description())]))
                .collect();
            let states = ThreadState::ALL
                .iter()
                .map(|t| (*t as i64, vec![s(t.name())]))
                .collect();
            let gc_when = vec![(0, vec![s("Before GC")]), (1, vec![s("After GC")])];
            let thread_entries = threads
                .iter()
                .map(|t| {
                    let java_name = t.java_thread_id.map_or(Val::NullStr, |_| s(&t.name));
                    let fields = vec![
                        s(&t.name),
                        Val::Long(t.tid),
                        java_name,
                        Val::Long(t.java_thread_id.unwrap_or(0)),
                    ];
                    (t.tid, fields)
                })
                .collect();
            let mut traces = Vec::new();
            for (n, stack) in self.traces.clone().iter().enumerate() {
                let frames = stack
                    .iter()
                    .map(|frame| {
                        vec![
                            Val::Long(self.method(frame)),
                            Val::Int(frame.line()),
                            Val::Int(frame.bci()),
                            Val::Long(frame.frame_type() as i64),
                        ]
                    })
                    .collect();
                traces.push((n as i64 + 1, vec![Val::Bool(false), Val::Objects(frames)]));
            }
            let mut methods = Vec::new();
            for (n, (class, name, descriptor, modifiers)) in self.methods.clone().iter().enumerate()
            {
                let fields = vec![
                    Val::Long(self.classes.lookup(class)),
                    Val::Long(self.symbols.lookup(name)),
                    Val::Long(self.symbols.lookup(descriptor)),
                    Val::Int(*modifiers),
                    Val::Bool(false),
                ];
                methods.push((n as i64 + 1, fields));
            }
            // Classes name their symbol and package (0 for none: a class
            // of no package, a library); packages name their symbol.
            let mut packages = Dictionary::default();
            let mut classes = Vec::new();
            for (id, name) in self.classes.by_id() {
                let package = name
                    .rfind('/')
                    .map_or(0, |end| packages.lookup(&name[..end]));
                let fields = vec![
                    Val::Long(0),
                    Val::Long(self.symbols.lookup(name)),
                    Val::Long(package),
                    Val::Int(0),
                ];
                classes.push((id, fields));
            }
            let package_entries = packages
                .by_id()
                .into_iter()
                .map(|(id, name)| (id, vec![Val::Long(self.symbols.lookup(name))]))
                .collect();
            let symbols = self
                .symbols
                .by_id()
                .into_iter()
                .map(|(id, text)| (id, vec![s(text)]))
                .collect();
            let log_levels = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
                .iter()
                .enumerate()
                .map(|(id, name)| (id as i64, vec![s(name)]))
                .collect();
            vec![
                (FRAME_TYPE, frame_types),
                (THREAD_STATE, states),
                (GC_WHEN, gc_when),
                (THREAD, thread_entries),
                (STACK_TRACE, traces),
                (METHOD, methods),
                (CLASS, classes),
                (PACKAGE, package_entries),
                (SYMBOL, symbols),
                (LOG_LEVEL, log_levels),
            ]
        }
    }

    /// The metadata's types, in `jfrMetadata.cpp`'s order, of those the
    /// written events use.
    fn metadata() -> Vec<ClassSpec> {
        // (name, class, constant pool, array)
        type F = (&'static str, i64, bool, bool);
        let class = |id: i64, name: &str, fields: &[F]| ClassSpec {
            id,
            name: name.to_owned(),
            super_type: (id > 100).then(|| "jdk.jfr.Event".to_owned()),
            simple_type: false,
            fields: fields
                .iter()
                .map(|(name, class, constant_pool, array)| FieldSpec {
                    name: (*name).to_owned(),
                    class: *class,
                    constant_pool: *constant_pool,
                    array: *array,
                })
                .collect(),
        };
        let simple = |id: i64, name: &str, field: F| ClassSpec {
            simple_type: true,
            ..class(id, name, &[field])
        };
        let start: F = ("startTime", LONG, false, false);
        let thread = |name| -> F { (name, THREAD, true, false) };
        let stack: F = ("stackTrace", STACK_TRACE, true, false);
        let context: F = ("contextId", LONG, false, false);
        vec![
            class(BOOLEAN, "boolean", &[]),
            class(CHAR, "char", &[]),
            class(FLOAT, "float", &[]),
            class(DOUBLE, "double", &[]),
            class(BYTE, "byte", &[]),
            class(SHORT, "short", &[]),
            class(INT, "int", &[]),
            class(LONG, "long", &[]),
            class(STRING, "java.lang.String", &[]),
            class(
                CLASS,
                "java.lang.Class",
                &[
                    ("classLoader", CLASS_LOADER, true, false),
                    ("name", SYMBOL, true, false),
                    ("package", PACKAGE, true, false),
                    ("modifiers", INT, false, false),
                ],
            ),
            class(
                THREAD,
                "java.lang.Thread",
                &[
                    ("osName", STRING, false, false),
                    ("osThreadId", LONG, false, false),
                    ("javaName", STRING, false, false),
                    ("javaThreadId", LONG, false, false),
                ],
            ),
            class(
                CLASS_LOADER,
                "jdk.types.ClassLoader",
                &[("type", CLASS, true, false), ("name", SYMBOL, true, false)],
            ),
            simple(
                FRAME_TYPE,
                "jdk.types.FrameType",
                ("description", STRING, false, false),
            ),
            simple(
                THREAD_STATE,
                "jdk.types.ThreadState",
                ("name", STRING, false, false),
            ),
            class(
                STACK_TRACE,
                "jdk.types.StackTrace",
                &[
                    ("truncated", BOOLEAN, false, false),
                    ("frames", STACK_FRAME, false, true),
                ],
            ),
            class(
                STACK_FRAME,
                "jdk.types.StackFrame",
                &[
                    ("method", METHOD, true, false),
                    ("lineNumber", INT, false, false),
                    ("bytecodeIndex", INT, false, false),
                    ("type", FRAME_TYPE, true, false),
                ],
            ),
            class(
                METHOD,
                "jdk.types.Method",
                &[
                    ("type", CLASS, true, false),
                    ("name", SYMBOL, true, false),
                    ("descriptor", SYMBOL, true, false),
                    ("modifiers", INT, false, false),
                    ("hidden", BOOLEAN, false, false),
                ],
            ),
            class(
                PACKAGE,
                "jdk.types.Package",
                &[("name", SYMBOL, true, false)],
            ),
            simple(SYMBOL, "jdk.types.Symbol", ("string", STRING, false, false)),
            simple(GC_WHEN, "jdk.types.GCWhen", ("when", STRING, false, false)),
            simple(
                LOG_LEVEL,
                "profiler.types.LogLevel",
                ("name", STRING, false, false),
            ),
            class(
                EXECUTION_SAMPLE,
                "jdk.ExecutionSample",
                &[
                    start,
                    thread("sampledThread"),
                    stack,
                    ("state", THREAD_STATE, true, false),
                    context,
                ],
            ),
            class(
                ALLOC_IN_NEW_TLAB,
                "jdk.ObjectAllocationInNewTLAB",
                &[
                    start,
                    thread("eventThread"),
                    stack,
                    ("objectClass", CLASS, true, false),
                    ("allocationSize", LONG, false, false),
                    ("tlabSize", LONG, false, false),
                    context,
                ],
            ),
            class(
                ALLOC_OUTSIDE_TLAB,
                "jdk.ObjectAllocationOutsideTLAB",
                &[
                    start,
                    thread("eventThread"),
                    stack,
                    ("objectClass", CLASS, true, false),
                    ("allocationSize", LONG, false, false),
                    context,
                ],
            ),
            class(
                MONITOR_ENTER,
                "jdk.JavaMonitorEnter",
                &[
                    start,
                    ("duration", LONG, false, false),
                    thread("eventThread"),
                    stack,
                    ("monitorClass", CLASS, true, false),
                    ("previousOwner", THREAD, true, false),
                    ("address", LONG, false, false),
                    context,
                ],
            ),
            class(
                THREAD_PARK,
                "jdk.ThreadPark",
                &[
                    start,
                    ("duration", LONG, false, false),
                    thread("eventThread"),
                    stack,
                    ("parkedClass", CLASS, true, false),
                    ("timeout", LONG, false, false),
                    ("until", LONG, false, false),
                    ("address", LONG, false, false),
                ],
            ),
            class(
                ACTIVE_RECORDING,
                "jdk.ActiveRecording",
                &[
                    start,
                    ("id", LONG, false, false),
                    ("name", STRING, false, false),
                    ("destination", STRING, false, false),
                    ("maxAge", LONG, false, false),
                    ("maxSize", LONG, false, false),
                    ("recordingStart", LONG, false, false),
                    ("recordingDuration", LONG, false, false),
                ],
            ),
            class(
                ACTIVE_SETTING,
                "jdk.ActiveSetting",
                &[
                    start,
                    ("id", LONG, false, false),
                    ("name", STRING, false, false),
                    ("value", STRING, false, false),
                ],
            ),
            class(
                WALL_CLOCK_SAMPLE,
                "profiler.WallClockSample",
                &[
                    start,
                    thread("sampledThread"),
                    stack,
                    ("state", THREAD_STATE, true, false),
                    ("samples", INT, false, false),
                ],
            ),
        ]
    }
}
