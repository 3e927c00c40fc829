use rustc_hash::FxHashMap;

/// Builds a pprof string table: "" is index 0, and each distinct string gets
/// the next index the first time it is interned.
#[derive(Debug, Clone)]
pub struct StringInterner {
    indexes: FxHashMap<String, i64>,
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
            indexes: FxHashMap::default(),
            table: Vec::new(),
        };
        interner.intern("");
        interner
    }

    /// The index of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> i64 {
        if let Some(&index) = self.indexes.get(s) {
            return index;
        }
        let index = i64::try_from(self.table.len()).unwrap_or(i64::MAX);
        self.indexes.insert(s.to_owned(), index);
        self.table.push(s.to_owned());
        index
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
