//! Reads and extends an OTLP `ProfilesDictionary` in place: strings and
//! functions are interned against what the tables already hold.

use std::sync::Arc;

use profbridge_translate::otlp::{
    any_value, bool_value, Function, KeyValueAndUnit, ProfilesDictionary,
};
use rustc_hash::FxHashMap;

use crate::binary::FunctionText;

type FunctionKey = (i32, i32, i32, i64);

pub(crate) struct Editor<'a> {
    pub dictionary: &'a mut ProfilesDictionary,
    strings: Option<FxHashMap<String, i32>>,
    functions: Option<FxHashMap<FunctionKey, i32>>,
    /// Function indexes by the address of a shared [`FunctionText`], which
    /// the entry keeps alive so that the address names it alone.
    shared: FxHashMap<usize, (Arc<FunctionText>, i32)>,
    /// The index of the `KEY = true` attribute, by the key's string index.
    true_flags: FxHashMap<i32, i32>,
}

impl<'a> Editor<'a> {
    pub fn new(dictionary: &'a mut ProfilesDictionary) -> Self {
        Self {
            dictionary,
            strings: None,
            functions: None,
            shared: FxHashMap::default(),
            true_flags: FxHashMap::default(),
        }
    }

    pub fn text(&self, index: i32) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.dictionary.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// The key of attribute `index` and its value when it is a string.
    pub fn attribute(&self, index: i32) -> Option<(&str, Option<&str>)> {
        let entry = usize::try_from(index)
            .ok()
            .and_then(|i| self.dictionary.attribute_table.get(i))?;
        let value = match entry.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
            Some(any_value::Value::StringValueStrindex(i)) => Some(self.text(*i)),
            _ => None,
        };
        Some((self.text(entry.key_strindex), value))
    }

    pub fn string(&mut self, s: &str) -> i32 {
        let table = &mut self.dictionary.string_table;
        let strings = self.strings.get_or_insert_with(|| {
            let mut map = FxHashMap::default();
            for (i, existing) in table.iter().enumerate().rev() {
                if let Ok(i) = i32::try_from(i) {
                    map.insert(existing.clone(), i);
                }
            }
            map
        });
        if let Some(&index) = strings.get(s) {
            return index;
        }
        let index = i32::try_from(table.len()).unwrap_or(i32::MAX);
        table.push(s.to_owned());
        strings.insert(s.to_owned(), index);
        index
    }

    /// The index of `function`, interned once per shared function.
    pub fn function(&mut self, function: &Arc<FunctionText>) -> i32 {
        let address = Arc::as_ptr(function) as usize;
        if let Some((_, index)) = self.shared.get(&address) {
            return *index;
        }
        let index = self.function_of(&function.name, &function.system_name, &function.file);
        self.shared.insert(address, (Arc::clone(function), index));
        index
    }

    fn function_of(&mut self, name: &str, system_name: &str, file: &str) -> i32 {
        let key = (
            self.string(name),
            self.string(system_name),
            self.string(file),
            0,
        );
        let table = &mut self.dictionary.function_table;
        let functions = self.functions.get_or_insert_with(|| {
            let mut map = FxHashMap::default();
            for (i, f) in table.iter().enumerate().rev() {
                if let Ok(i) = i32::try_from(i) {
                    map.insert(
                        (
                            f.name_strindex,
                            f.system_name_strindex,
                            f.filename_strindex,
                            f.start_line,
                        ),
                        i,
                    );
                }
            }
            map
        });
        if let Some(&index) = functions.get(&key) {
            return index;
        }
        let index = i32::try_from(table.len()).unwrap_or(i32::MAX);
        table.push(Function {
            name_strindex: key.0,
            system_name_strindex: key.1,
            filename_strindex: key.2,
            start_line: key.3,
        });
        functions.insert(key, index);
        index
    }

    /// Makes mapping `mapping` carry `key = true`, replacing any other value.
    pub fn set_mapping_flag(&mut self, mapping: usize, key: &str) {
        let key_strindex = self.string(key);
        let is_true = |entry: &KeyValueAndUnit| {
            entry.key_strindex == key_strindex
                && entry.unit_strindex == 0
                && matches!(
                    entry.value.as_ref().and_then(|v| v.value.as_ref()),
                    Some(any_value::Value::BoolValue(true))
                )
        };
        let known = self.true_flags.get(&key_strindex).copied();
        let existing = known.or_else(|| {
            self.dictionary
                .attribute_table
                .iter()
                .position(is_true)
                .and_then(|i| i32::try_from(i).ok())
        });
        let index = match existing {
            Some(index) => index,
            None => {
                let index =
                    i32::try_from(self.dictionary.attribute_table.len()).unwrap_or(i32::MAX);
                self.dictionary.attribute_table.push(KeyValueAndUnit {
                    key_strindex,
                    value: Some(bool_value(true)),
                    unit_strindex: 0,
                });
                index
            }
        };
        self.true_flags.insert(key_strindex, index);
        let attribute_table = &self.dictionary.attribute_table;
        let Some(entry) = self.dictionary.mapping_table.get_mut(mapping) else {
            return;
        };
        entry.attribute_indices.retain(|&i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| attribute_table.get(i))
                .is_none_or(|a| a.key_strindex != key_strindex)
        });
        entry.attribute_indices.push(index);
    }
}
