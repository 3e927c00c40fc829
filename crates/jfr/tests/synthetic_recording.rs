//! A small recording writer for precise cases: one chunk with a
//! metadata event, a constant pool event and the events asked for, every
//! part editable before it is written.

/// A field value as the writer encodes it.
#[derive(Debug, Clone)]
pub enum Val {
    Long(i64),
    Int(i32),
    Bool(bool),
    Str(String),
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
        let mut chunk = vec![0u8; 68];
        for (type_id, fields) in &self.events {
            chunk.extend(enc.event(*type_id, &self.encode_fields(&enc, fields)));
        }
        let metadata = chunk.len();
        chunk.extend(enc.event(0, &self.metadata_body(&enc)));
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
        let mut header = Vec::with_capacity(68);
        header.extend(b"FLR\0");
        header.extend(2u16.to_be_bytes());
        header.extend(1u16.to_be_bytes());
        header.extend((size as u64).to_be_bytes());
        header.extend((constant_pool as u64).to_be_bytes());
        header.extend((metadata as u64).to_be_bytes());
        header.extend(1_700_000_000_000_000_000u64.to_be_bytes());
        header.extend(2_000_000_000u64.to_be_bytes());
        header.extend(0u64.to_be_bytes());
        header.extend(1_000_000_000u64.to_be_bytes());
        header.extend(u32::from(self.compressed).to_be_bytes());
        chunk.splice(0..68, header);
        (
            chunk,
            Layout {
                size,
                metadata,
                constant_pool,
            },
        )
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
        enc.long(&mut body, 0);
        enc.long(&mut body, 0);
        enc.long(&mut body, delta);
        enc.int(&mut body, 0);
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
        enc.event(1, &body)
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
            let attributes = [
                (index("id"), index(&class.id.to_string())),
                (index("name"), index(&class.name)),
            ];
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
        element(&mut tree, index("region"), &[], 0);
        let mut body = Vec::new();
        enc.long(&mut body, 0);
        enc.long(&mut body, 0);
        enc.long(&mut body, 0);
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

    /// An event: its size (4 bytes, as the JDK pads it), type id, body.
    fn event(&self, type_id: i64, body: &[u8]) -> Vec<u8> {
        let mut rest = Vec::new();
        self.long(&mut rest, type_id);
        rest.extend(body);
        let size = rest.len() + 4;
        let mut out = Vec::with_capacity(size);
        if self.compressed {
            out.extend([
                (size as u8 & 0x7f) | 0x80,
                ((size >> 7) as u8 & 0x7f) | 0x80,
                ((size >> 14) as u8 & 0x7f) | 0x80,
                (size >> 21) as u8 & 0x7f,
            ]);
        } else {
            out.extend((size as u32).to_be_bytes());
        }
        out.extend(rest);
        out
    }
}
