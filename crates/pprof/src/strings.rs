use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Builds a pprof string table: "" is index 0, and each distinct string gets
/// the next index the first time it is interned. Each string is stored once,
/// in the table; the index finds it by hash. An interner can build one
/// table after another ([`StringInterner::take_table`],
/// [`StringInterner::restart`]), reusing its memory and the strings of
/// tables it is given back.
#[derive(Debug, Clone)]
pub struct StringInterner {
    indexes: HashTable<usize>,
    table: Vec<String>,
    /// Emptied strings to hold new ones, the next to use last.
    spare: Vec<String>,
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
            spare: Vec::new(),
        };
        interner.intern("");
        interner
    }

    /// The index of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> i64 {
        let Self {
            indexes,
            table,
            spare,
        } = self;
        let hash = FxBuildHasher.hash_one(s);
        let found = indexes.find(hash, |&i| table.get(i).is_some_and(|t| t == s));
        let index = match found {
            Some(&index) => index,
            None => {
                let index = table.len();
                let mut owned = spare.pop().unwrap_or_default();
                owned.clear();
                owned.push_str(s);
                table.push(owned);
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

    /// The finished table, for `Profile::string_table`; the interner is
    /// left empty until [`StringInterner::restart`].
    pub fn take_table(&mut self) -> Vec<String> {
        self.indexes.clear();
        std::mem::take(&mut self.table)
    }

    /// Starts a new table ("" at 0), keeping the interner's memory, and
    /// keeps `old_table` (one this interner built, say) and its strings to
    /// hold the new table: interned in the same order as before, the same
    /// strings need no allocation.
    pub fn restart(&mut self, mut old_table: Vec<String>) {
        self.indexes.clear();
        self.spare.extend(self.table.drain(..).rev());
        self.spare.extend(old_table.drain(..).rev());
        if old_table.capacity() > self.table.capacity() {
            self.table = old_table;
        }
        self.intern("");
    }

    /// The bytes this interner holds allocated, its spare strings included.
    pub fn capacity_bytes(&self) -> usize {
        let strings: usize = self
            .table
            .iter()
            .chain(&self.spare)
            .map(String::capacity)
            .sum();
        strings
            + (self.table.capacity() + self.spare.capacity()) * std::mem::size_of::<String>()
            + self.indexes.capacity() * (std::mem::size_of::<usize>() + 1)
    }
}

/// Looks up a string index that validation has already checked.
pub(crate) fn resolve(table: &[String], index: i64) -> &str {
    usize::try_from(index)
        .ok()
        .and_then(|i| table.get(i))
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restarted_interner_builds_the_same_table_in_the_old_strings() {
        let words = ["b", "a", "", "b", "longer string", "a"];
        let mut fresh = StringInterner::new();
        let fresh_indexes: Vec<i64> = words.iter().map(|w| fresh.intern(w)).collect();
        let fresh_table = fresh.into_table();

        let mut reused = StringInterner::new();
        for word in ["x", "y", "zzzzzzzzzzzzzzzzzzzzzzzz"] {
            reused.intern(word);
        }
        let old_table = reused.take_table();
        let old_pointers: Vec<*const u8> = old_table.iter().map(|s| s.as_ptr()).collect();
        reused.restart(old_table);
        let reused_indexes: Vec<i64> = words.iter().map(|w| reused.intern(w)).collect();
        let reused_table = reused.take_table();
        assert_eq!(reused_indexes, fresh_indexes);
        assert_eq!(reused_table, fresh_table);
        // "" and the two new strings after it took the old table's strings.
        let new_pointers: Vec<*const u8> = reused_table.iter().map(|s| s.as_ptr()).collect();
        assert_eq!(new_pointers.get(1..3), old_pointers.get(1..3));
    }

    #[test]
    fn restarting_without_taking_the_table_starts_afresh() {
        let mut interner = StringInterner::new();
        interner.intern("a");
        interner.restart(Vec::new());
        assert_eq!(interner.len(), 1);
        assert_eq!(interner.intern("b"), 1);
        assert_eq!(interner.into_table(), ["", "b"]);
    }
}
