//! Values of any type the metadata describes, decoded field by field.

use super::cursor::{preallocation, Cursor, JfrString};
use super::error::{Problem, ReadError};
use super::metadata::{ClassDef, FieldDef, Primitive, Types};

/// Bytes of a `jdk.types.ChunkHeader` constant: a copy of the header.
pub(crate) const CHUNK_HEADER_SIZE: usize = 68;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(JfrString),
    /// A constant pool reference: the entry's id in the pool of the
    /// field's type.
    Ref(i64),
    /// The fields of a class, in the metadata's order.
    Object(Vec<Value>),
    Array(Vec<Value>),
    /// A value not kept (a chunk header copy).
    Skipped,
}

impl Value {
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(v) | Self::Ref(v) => Some(*v),
            Self::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub(crate) fn as_ref_id(&self) -> Option<i64> {
        match self {
            Self::Ref(v) => Some(*v),
            _ => None,
        }
    }
}

/// Decodes values; every value decoded spends one unit of a budget
/// proportional to the bytes read, so types whose values take no bytes
/// (classes without fields, nested in themselves) cannot make the work
/// grow past the input.
pub(crate) struct ValueReader<'t> {
    types: &'t Types,
    max_depth: usize,
    budget: usize,
}

/// Values decoded per byte of input at most, plus a constant.
const VALUES_PER_BYTE: usize = 8;
const VALUES_BASE: usize = 64;

impl<'t> ValueReader<'t> {
    pub(crate) fn new(types: &'t Types, max_depth: usize, bytes: usize) -> Self {
        Self {
            types,
            max_depth,
            budget: VALUES_BASE.saturating_add(bytes.saturating_mul(VALUES_PER_BYTE)),
        }
    }

    fn spend(&mut self, cursor: &Cursor<'_>) -> Result<(), ReadError> {
        self.budget = self.budget.checked_sub(1).ok_or_else(|| {
            cursor.error(Problem::TooManyValues {
                per_byte: VALUES_PER_BYTE,
            })
        })?;
        Ok(())
    }

    pub(crate) fn class(
        &self,
        type_id: i64,
        cursor: &Cursor<'_>,
    ) -> Result<&'t ClassDef, ReadError> {
        self.types
            .get(type_id)
            .ok_or_else(|| cursor.error(Problem::UnknownType(type_id)))
    }

    /// The fields of an object of `class`, in order.
    pub(crate) fn object(
        &mut self,
        cursor: &mut Cursor<'_>,
        class: &ClassDef,
        depth: usize,
    ) -> Result<Vec<Value>, ReadError> {
        let mut fields = Vec::with_capacity(class.fields.len());
        for field in &class.fields {
            fields.push(self.field(cursor, field, depth)?);
        }
        Ok(fields)
    }

    fn field(
        &mut self,
        cursor: &mut Cursor<'_>,
        field: &FieldDef,
        depth: usize,
    ) -> Result<Value, ReadError> {
        if !field.array {
            return self.element(cursor, field, depth);
        }
        let count = cursor.count()?;
        let mut elements = Vec::with_capacity(preallocation(count));
        for _ in 0..count {
            elements.push(self.element(cursor, field, depth)?);
        }
        Ok(Value::Array(elements))
    }

    fn element(
        &mut self,
        cursor: &mut Cursor<'_>,
        field: &FieldDef,
        depth: usize,
    ) -> Result<Value, ReadError> {
        self.spend(cursor)?;
        if field.constant_pool {
            return Ok(Value::Ref(cursor.long()?));
        }
        self.value(cursor, field.type_id, depth + 1)
    }

    /// A value of type `type_id` written in place.
    pub(crate) fn value(
        &mut self,
        cursor: &mut Cursor<'_>,
        type_id: i64,
        depth: usize,
    ) -> Result<Value, ReadError> {
        if depth > self.max_depth {
            return Err(cursor.error(Problem::TooDeep(self.max_depth)));
        }
        let class = self.class(type_id, cursor)?;
        let Some(primitive) = class.primitive else {
            if class.name == "jdk.types.ChunkHeader" {
                cursor.take(CHUNK_HEADER_SIZE)?;
                return Ok(Value::Skipped);
            }
            return Ok(Value::Object(self.object(cursor, class, depth)?));
        };
        Ok(match primitive {
            Primitive::Boolean => Value::Bool(cursor.u8()? != 0),
            Primitive::Byte => Value::Int(i64::from(cursor.u8()? as i8)),
            Primitive::Char | Primitive::Short => Value::Int(i64::from(cursor.short()?)),
            Primitive::Int => Value::Int(i64::from(cursor.int()?)),
            Primitive::Long => Value::Int(cursor.long()?),
            Primitive::Float => Value::Float(f64::from(cursor.f32()?)),
            Primitive::Double => Value::Float(cursor.f64()?),
            Primitive::String => Value::Str(cursor.string()?),
        })
    }
}
