//! Stack traces, kept as compact frames rather than value trees: they
//! are most of a recording's constant pools.

use super::metadata::Types;
use super::value::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawFrame {
    /// Id in the method pool.
    pub(crate) method: Option<i64>,
    pub(crate) line: Option<i64>,
    /// Id in the frame type pool.
    pub(crate) frame_type: Option<i64>,
}

/// Where a stack trace's frames and a frame's fields are, by the names
/// the metadata gives them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StackTraceLayout {
    pub(crate) type_id: i64,
    frames: usize,
    method: Option<usize>,
    line: Option<usize>,
    frame_type: Option<usize>,
}

impl StackTraceLayout {
    pub(crate) fn new(types: &Types) -> Option<Self> {
        let type_id = types.id_of("jdk.types.StackTrace")?;
        let trace = types.get(type_id)?;
        let frames = trace.field_index("frames")?;
        let frame = types.get(trace.fields.get(frames)?.type_id)?;
        Some(Self {
            type_id,
            frames,
            method: frame.field_index("method"),
            line: frame.field_index("lineNumber"),
            frame_type: frame.field_index("type"),
        })
    }

    /// The frames of a decoded stack trace, leaf first.
    pub(crate) fn compact(&self, trace: &Value) -> Box<[RawFrame]> {
        let Value::Object(fields) = trace else {
            return Box::default();
        };
        let Some(Value::Array(frames)) = fields.get(self.frames) else {
            return Box::default();
        };
        let field = |frame: &Value, index: Option<usize>| match frame {
            Value::Object(fields) => fields.get(index?).and_then(Value::as_int),
            _ => None,
        };
        frames
            .iter()
            .map(|frame| RawFrame {
                method: field(frame, self.method),
                line: field(frame, self.line),
                frame_type: field(frame, self.frame_type),
            })
            .collect()
    }
}
