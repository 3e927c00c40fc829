//! Looks events' references up in one chunk's constant pools: stack
//! traces into frames named as Pyroscope names them, threads, states.
//! Every lookup follows a fixed path of types (stack trace, frame,
//! method, class, symbol), so a pool entry that refers to itself cannot
//! make it loop.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::builder::Frame;
use super::symbols::merge_generated_names;
use crate::reader::{Chunk, JfrString, RawFrame, Value};
use crate::{FrameKind, Skipped};

/// Pool type ids of this chunk's metadata.
struct PoolTypes {
    thread: Option<i64>,
    class: Option<i64>,
    string: Option<i64>,
    method: Option<i64>,
    symbol: Option<i64>,
    frame_type: Option<i64>,
    thread_state: Option<i64>,
}

/// A resolved stack trace: its frames, leaf first, and a serial unique
/// in the whole recording (stack trace ids are only unique in a chunk).
#[derive(Debug, Clone)]
pub(crate) struct Stack {
    pub(crate) serial: u64,
    pub(crate) frames: Rc<[Frame]>,
}

/// A frame whose method or class did not resolve.
enum Unresolved {
    Method,
    Class,
}

pub(crate) struct Resolver<'c, 'a> {
    chunk: &'c Chunk<'a>,
    types: PoolTypes,
    stacks: FxHashMap<i64, Option<Stack>>,
    /// The serial the next stack resolved gets.
    next_serial: u64,
    methods: FxHashMap<i64, Option<Rc<str>>>,
    threads: FxHashMap<i64, Option<Rc<str>>>,
    frame_types: FxHashMap<i64, Option<String>>,
    max_stack_depth: usize,
}

impl<'c, 'a> Resolver<'c, 'a> {
    /// `first_serial`: the serial of the first stack this resolver
    /// resolves ([`Self::next_serial`] of the previous chunk's).
    pub(crate) fn new(chunk: &'c Chunk<'a>, max_stack_depth: usize, first_serial: u64) -> Self {
        let id = |name: &str| chunk.types.id_of(name);
        Self {
            chunk,
            types: PoolTypes {
                thread: id("java.lang.Thread"),
                class: id("java.lang.Class"),
                string: id("java.lang.String"),
                method: id("jdk.types.Method"),
                symbol: id("jdk.types.Symbol"),
                frame_type: id("jdk.types.FrameType"),
                thread_state: id("jdk.types.ThreadState"),
            },
            stacks: FxHashMap::default(),
            next_serial: first_serial,
            methods: FxHashMap::default(),
            threads: FxHashMap::default(),
            frame_types: FxHashMap::default(),
            max_stack_depth,
        }
    }

    /// The field `name` of an object of type `type_id`.
    fn field<'v>(&self, type_id: Option<i64>, value: &'v Value, name: &str) -> Option<&'v Value> {
        let index = self.chunk.types.get(type_id?)?.field_index(name)?;
        match value {
            Value::Object(fields) => fields.get(index),
            _ => None,
        }
    }

    fn entry(&self, type_id: Option<i64>, id: i64) -> Option<&'c Value> {
        self.chunk.pools.get(type_id?, id)
    }

    /// A string value, inline or in the string pool (a reference through
    /// a `constantPool` field, too).
    pub(crate) fn string(&self, value: &Value) -> Option<String> {
        match value {
            Value::Str(JfrString::Text(text)) => Some(text.clone()),
            Value::Str(JfrString::PoolRef(id)) | Value::Ref(id) => {
                match self.entry(self.types.string, *id)? {
                    Value::Str(JfrString::Text(text)) => Some(text.clone()),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn symbol(&self, value: Option<&Value>) -> Option<String> {
        let entry = self.entry(self.types.symbol, value?.as_ref_id()?)?;
        self.string(self.field(self.types.symbol, entry, "string")?)
    }

    pub(crate) fn thread_state(&self, value: Option<&Value>) -> Option<String> {
        let entry = self.entry(self.types.thread_state, value?.as_ref_id()?)?;
        self.string(self.field(self.types.thread_state, entry, "name")?)
    }

    /// The thread's Java name, else its OS name.
    pub(crate) fn thread_name(&mut self, value: Option<&Value>) -> Option<Rc<str>> {
        let id = value?.as_ref_id()?;
        if let Some(name) = self.threads.get(&id) {
            return name.clone();
        }
        let name = self.entry(self.types.thread, id).and_then(|entry| {
            let named = |field| {
                self.field(self.types.thread, entry, field)
                    .and_then(|v| self.string(v))
                    .filter(|name| !name.is_empty())
            };
            named("javaName").or_else(|| named("osName")).map(Rc::from)
        });
        self.threads.insert(id, name.clone());
        name
    }

    /// `class.method`, each symbol merged as Pyroscope merges them.
    fn method_name(&mut self, method_id: i64) -> Result<Rc<str>, Unresolved> {
        if let Some(name) = self.methods.get(&method_id) {
            return name.clone().ok_or(Unresolved::Class);
        }
        let method = self
            .entry(self.types.method, method_id)
            .ok_or(Unresolved::Method)?;
        let class = self
            .field(self.types.method, method, "type")
            .and_then(Value::as_ref_id)
            .and_then(|id| self.entry(self.types.class, id));
        let name = class.map(|class| {
            let class_name = self
                .symbol(self.field(self.types.class, class, "name"))
                .unwrap_or_default();
            let method_name = self
                .symbol(self.field(self.types.method, method, "name"))
                .unwrap_or_default();
            Rc::from(format!(
                "{}.{}",
                merge_generated_names(&class_name),
                merge_generated_names(&method_name)
            ))
        });
        self.methods.insert(method_id, name.clone());
        name.ok_or(Unresolved::Class)
    }

    /// async-profiler writes native functions as methods of a class named
    /// after their library (or of an empty class), with the descriptor
    /// `()L;`; the JDK's native Java methods belong to Java classes.
    fn is_library_function(&self, method_id: i64) -> bool {
        let Some(method) = self.entry(self.types.method, method_id) else {
            return false;
        };
        let descriptor = self.symbol(self.field(self.types.method, method, "descriptor"));
        let class_name = self
            .field(self.types.method, method, "type")
            .and_then(Value::as_ref_id)
            .and_then(|id| self.entry(self.types.class, id))
            .and_then(|class| self.symbol(self.field(self.types.class, class, "name")))
            .unwrap_or_default();
        descriptor.as_deref() == Some("()L;") || class_name.is_empty() || class_name.contains(".so")
    }

    fn frame_kind(&mut self, frame_type: Option<i64>, method_id: i64) -> FrameKind {
        let description = frame_type.and_then(|id| {
            if let Some(description) = self.frame_types.get(&id) {
                return description.clone();
            }
            let description = self
                .entry(self.types.frame_type, id)
                .and_then(|entry| self.field(self.types.frame_type, entry, "description"))
                .and_then(|v| self.string(v));
            self.frame_types.insert(id, description.clone());
            description
        });
        match description.as_deref() {
            Some("C++") => FrameKind::Native,
            Some("Kernel") => FrameKind::Kernel,
            Some("Native") if self.is_library_function(method_id) => FrameKind::Native,
            _ => FrameKind::Jvm,
        }
    }

    /// A stack trace's frames, leaf first; `None` when the stack trace is
    /// not in the pool. Frames whose method or class does not resolve are
    /// left out and counted (once per stack trace and chunk).
    pub(crate) fn stack(&mut self, value: Option<&Value>, skipped: &mut Skipped) -> Option<Stack> {
        let id = value.and_then(Value::as_ref_id);
        let Some(id) = id else {
            skipped.stack_trace_not_found += 1;
            return None;
        };
        let stack = match self.stacks.get(&id) {
            Some(stack) => stack.clone(),
            None => {
                let stack = self.resolve_stack(id, skipped).map(|frames| Stack {
                    serial: self.next_serial,
                    frames,
                });
                self.next_serial += 1;
                self.stacks.insert(id, stack.clone());
                stack
            }
        };
        if stack.is_none() {
            skipped.stack_trace_not_found += 1;
        }
        stack
    }

    pub(crate) fn next_serial(&self) -> u64 {
        self.next_serial
    }

    fn resolve_stack(&mut self, id: i64, skipped: &mut Skipped) -> Option<Rc<[Frame]>> {
        let chunk = self.chunk;
        let raw_frames: &[RawFrame] = chunk.pools.stack_trace(id)?;
        let depth = raw_frames.len().min(self.max_stack_depth);
        let mut frames = Vec::with_capacity(depth);
        for raw in raw_frames.iter().take(depth) {
            let Some(method_id) = raw.method else {
                skipped.method_not_found += 1;
                continue;
            };
            let name = match self.method_name(method_id) {
                Ok(name) => name,
                Err(Unresolved::Method) => {
                    skipped.method_not_found += 1;
                    continue;
                }
                Err(Unresolved::Class) => {
                    skipped.class_not_found += 1;
                    continue;
                }
            };
            // Pyroscope reads line numbers as unsigned 32-bit: -1 (none)
            // becomes 4294967295.
            let line = raw.line.map_or(0, |line| i64::from(line as u32));
            let kind = self.frame_kind(raw.frame_type, method_id);
            frames.push(Frame { name, line, kind });
        }
        Some(Rc::from(frames))
    }
}
