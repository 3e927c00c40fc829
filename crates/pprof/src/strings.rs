use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Builds a pprof string table: "" is index 0, and each distinct string gets
/// the next index the first time it is interned. Each string is stored once,
/// in the table; the index finds it by hash.
#[derive(Debug, Clone)]
pub struct StringInterner {
    indexes: HashTable<usize>,
    table: Vec<String>,
}

impl Default for StringInterner {
    fn default() -> Self {
        Self::new()
    }
}

impl StringInterner {
    pub fn new() -> Self {
        let mut interner = Self {
            indexes: HashTable::new(),
            table: Vec::new(),
        };
        interner.intern("");
        interner
    }

    /// The index of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> i64 {
        let Self { indexes, table } = self;
        let hash = FxBuildHasher.hash_one(s);
        let found = indexes.find(hash, |&i| table.get(i).is_some_and(|t| t == s));
        let index = match found {
            Some(&index) => index,
            None => {
                let index = table.len();
                table.push(s.to_owned());
                indexes.insert_unique(hash, index, |&i| {
                    FxBuildHasher.hash_one(table.get(i).map_or("", String::as_str))
                });
                index
            }
        };
        i64::try_from(index).unwrap_or(i64::MAX)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The finished table, for `Profile::string_table`.
    pub fn into_table(self) -> Vec<String> {
        self.table
    }
}

/// Looks up a string index that validation has already checked.
pub(crate) fn resolve(table: &[String], index: i64) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| table.get(i))
        .map_or("", String::as_str)
}
