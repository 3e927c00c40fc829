//! The metadata event: a string table and an element tree whose
//! `metadata/class/field` elements describe every type of the chunk.

use rustc_hash::FxHashMap;

use super::cursor::{preallocation, Cursor, JfrString};
use super::error::{Problem, ReadError};
use crate::Limits;

/// How a type's values are written, for the types the format builds in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Primitive {
    Boolean,
    Byte,
    Char,
    Short,
    Int,
    Long,
    Float,
    Double,
    String,
}

impl Primitive {
    fn from_class_name(name: &str) -> Option<Self> {
        Some(match name {
            "boolean" => Self::Boolean,
            "byte" => Self::Byte,
            "char" => Self::Char,
            "short" => Self::Short,
            "int" => Self::Int,
            "long" => Self::Long,
            "float" => Self::Float,
            "double" => Self::Double,
            "java.lang.String" => Self::String,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FieldDef {
    pub(crate) name: String,
    pub(crate) type_id: i64,
    pub(crate) constant_pool: bool,
    pub(crate) array: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct ClassDef {
    pub(crate) name: String,
    pub(crate) primitive: Option<Primitive>,
    pub(crate) fields: Vec<FieldDef>,
}

impl ClassDef {
    pub(crate) fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|field| field.name == name)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Types {
    by_id: FxHashMap<i64, ClassDef>,
    by_name: FxHashMap<String, i64>,
}

impl Types {
    pub(crate) fn get(&self, id: i64) -> Option<&ClassDef> {
        self.by_id.get(&id)
    }

    pub(crate) fn id_of(&self, name: &str) -> Option<i64> {
        self.by_name.get(name).copied()
    }
}

struct Element {
    name: u32,
    attributes: Vec<(u32, u32)>,
    children: Vec<Element>,
}

struct MetadataReader<'c, 'a> {
    cursor: &'c mut Cursor<'a>,
    strings: Vec<String>,
    max_depth: usize,
}

impl MetadataReader<'_, '_> {
    fn string_index(&mut self) -> Result<u32, ReadError> {
        let start = self.cursor.offset();
        let index = self.cursor.int()?;
        match u32::try_from(index) {
            Ok(index) if (index as usize) < self.strings.len() => Ok(index),
            _ => Err(ReadError {
                offset: start,
                problem: Problem::BadStringIndex {
                    index: i64::from(index),
                    len: self.strings.len(),
                },
            }),
        }
    }

    fn element(&mut self, depth: usize) -> Result<Element, ReadError> {
        if depth > self.max_depth {
            return Err(self.cursor.error(Problem::TooDeep(self.max_depth)));
        }
        let name = self.string_index()?;
        let attribute_count = self.cursor.count()?;
        let mut attributes = Vec::with_capacity(preallocation(attribute_count));
        for _ in 0..attribute_count {
            attributes.push((self.string_index()?, self.string_index()?));
        }
        let child_count = self.cursor.count()?;
        let mut children = Vec::with_capacity(preallocation(child_count));
        for _ in 0..child_count {
            children.push(self.element(depth + 1)?);
        }
        Ok(Element {
            name,
            attributes,
            children,
        })
    }

    fn text(&self, index: u32) -> &str {
        self.strings.get(index as usize).map_or("", String::as_str)
    }

    fn name_of(&self, element: &Element) -> &str {
        self.text(element.name)
    }

    fn attribute(&self, element: &Element, key: &str) -> Option<&str> {
        element
            .attributes
            .iter()
            .find(|(k, _)| self.text(*k) == key)
            .map(|(_, v)| self.text(*v))
    }
}

/// Reads the metadata event at the cursor (its size and type id first),
/// within its size.
pub(crate) fn read_metadata(chunk: &mut Cursor<'_>, limits: &Limits) -> Result<Types, ReadError> {
    let start = chunk.offset();
    let event_start = chunk.pos();
    let size = chunk.int()?;
    let body_len = usize::try_from(size)
        .ok()
        .and_then(|size| size.checked_sub(chunk.pos() - event_start))
        .filter(|len| *len <= chunk.remaining())
        .ok_or(ReadError {
            offset: start,
            problem: Problem::BadEventSize {
                size: i64::from(size),
            },
        })?;
    let mut event = chunk.split(body_len)?;
    let cursor = &mut event;
    let event_type = cursor.long()?;
    if event_type != 0 {
        return Err(ReadError {
            offset: start,
            problem: Problem::WrongEventType {
                expected: 0,
                found: event_type,
            },
        });
    }
    let _start_time = cursor.long()?;
    let _duration = cursor.long()?;
    let _metadata_id = cursor.long()?;
    let string_count = cursor.count()?;
    let mut strings = Vec::with_capacity(preallocation(string_count));
    for _ in 0..string_count {
        strings.push(match cursor.string()? {
            JfrString::Text(text) => text,
            JfrString::Null | JfrString::PoolRef(_) => String::new(),
        });
    }
    let mut reader = MetadataReader {
        cursor,
        strings,
        max_depth: limits.max_value_depth,
    };
    let root = reader.element(0)?;
    if reader.name_of(&root) != "root" {
        return Err(reader.cursor.error(Problem::UnexpectedElement {
            expected: "root",
            found: reader.name_of(&root).to_owned(),
        }));
    }
    let mut types = Types::default();
    for section in root
        .children
        .iter()
        .filter(|e| reader.name_of(e) == "metadata")
    {
        for class in section
            .children
            .iter()
            .filter(|e| reader.name_of(e) == "class")
        {
            if types.by_id.len() >= limits.max_metadata_classes {
                return Err(reader.cursor.error(Problem::LimitExceeded {
                    what: "metadata classes",
                    limit: limits.max_metadata_classes,
                }));
            }
            let (id, def) = class_def(&reader, class).map_err(|problem| ReadError {
                offset: start,
                problem,
            })?;
            types.by_name.insert(def.name.clone(), id);
            types.by_id.insert(id, def);
        }
    }
    Ok(types)
}

fn number(attribute: &'static str, value: Option<&str>) -> Result<i64, Problem> {
    let value = value.ok_or(Problem::MissingAttribute(attribute))?;
    value.parse().map_err(|_| Problem::BadAttribute {
        attribute,
        value: value.to_owned(),
    })
}

fn class_def(reader: &MetadataReader<'_, '_>, class: &Element) -> Result<(i64, ClassDef), Problem> {
    let id = number("id", reader.attribute(class, "id"))?;
    let name = reader
        .attribute(class, "name")
        .filter(|name| !name.is_empty())
        .ok_or(Problem::MissingAttribute("name"))?
        .to_owned();
    let mut fields = Vec::new();
    for field in class
        .children
        .iter()
        .filter(|e| reader.name_of(e) == "field")
    {
        let field_name = reader
            .attribute(field, "name")
            .ok_or(Problem::MissingAttribute("name"))?
            .to_owned();
        let type_id = number("class", reader.attribute(field, "class"))?;
        let array = match reader.attribute(field, "dimension") {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => {
                return Err(Problem::BadAttribute {
                    attribute: "dimension",
                    value: other.to_owned(),
                })
            }
        };
        fields.push(FieldDef {
            name: field_name,
            type_id,
            constant_pool: reader.attribute(field, "constantPool") == Some("true"),
            array,
        });
    }
    Ok((
        id,
        ClassDef {
            primitive: Primitive::from_class_name(&name),
            name,
            fields,
        },
    ))
}
