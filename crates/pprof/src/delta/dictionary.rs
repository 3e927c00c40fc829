//! Frames and labels by content, as small numbers that outlive a scrape.
//!
//! A sample's identity is the list of its tokens: its frames, leaf first,
//! then its labels in token order. Tokens are interned across scrapes, so
//! equal identities of two scrapes are equal lists, whatever ids the
//! scrapes gave their locations and strings.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::DeltaError;

pub(super) type TokenId = u32;

/// A sample's frames, leaf first, then its labels in token order.
pub(super) type Identity = Box<[TokenId]>;

/// Strings are the dictionary's string ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Token {
    /// A line of a location: its function's name, system name and file
    /// name, and the line and column.
    Line {
        function: [u32; 3],
        line: i64,
        column: i64,
    },
    /// A location without lines: its mapping's file and build id, and the
    /// address as an offset in that file.
    Address {
        mapping: [u32; 2],
        file_offset: u64,
    },
    StrLabel {
        key: u32,
        value: u32,
    },
    NumLabel {
        key: u32,
        value: i64,
        unit: u32,
    },
}

impl Token {
    pub(super) fn is_label(&self) -> bool {
        matches!(self, Self::StrLabel { .. } | Self::NumLabel { .. })
    }

    fn map_strings(self, mut map: impl FnMut(u32) -> Option<u32>) -> Option<Self> {
        Some(match self {
            Self::Line {
                function: [name, system_name, filename],
                line,
                column,
            } => Self::Line {
                function: [map(name)?, map(system_name)?, map(filename)?],
                line,
                column,
            },
            Self::Address {
                mapping: [filename, build_id],
                file_offset,
            } => Self::Address {
                mapping: [map(filename)?, map(build_id)?],
                file_offset,
            },
            Self::StrLabel { key, value } => Self::StrLabel {
                key: map(key)?,
                value: map(value)?,
            },
            Self::NumLabel { key, value, unit } => Self::NumLabel {
                key: map(key)?,
                value,
                unit: map(unit)?,
            },
        })
    }
}

/// Entries in the order they were first interned; an entry's id is its
/// position.
#[derive(Debug)]
struct Interner<K> {
    index: HashTable<u32>,
    entries: Vec<K>,
}

impl<K: Hash + Eq> Interner<K> {
    fn new() -> Self {
        Self {
            index: HashTable::new(),
            entries: Vec::new(),
        }
    }

    fn intern<Q>(&mut self, key: &Q) -> Result<u32, DeltaError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Self { index, entries } = self;
        let hash = FxBuildHasher.hash_one(key);
        let position = |&id: &u32| usize::try_from(id).ok().and_then(|id| entries.get(id));
        if let Some(&id) = index.find(hash, |id| position(id).is_some_and(|e| e.borrow() == key)) {
            return Ok(id);
        }
        let id = u32::try_from(entries.len()).map_err(|_| DeltaError::DictionaryFull)?;
        entries.push(key.to_owned());
        index.insert_unique(hash, id, |id| {
            let entry = usize::try_from(*id).ok().and_then(|id| entries.get(id));
            entry.map_or(0, |e| FxBuildHasher.hash_one(e.borrow()))
        });
        Ok(id)
    }

    fn get(&self, id: u32) -> Option<&K> {
        self.entries.get(usize::try_from(id).ok()?)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[derive(Debug)]
pub(super) struct Dictionary {
    strings: Interner<String>,
    tokens: Interner<Token>,
}

impl Dictionary {
    /// The string id 0 is "".
    pub(super) fn new() -> Self {
        let mut strings = Interner::new();
        strings.entries.push(String::new());
        strings
            .index
            .insert_unique(FxBuildHasher.hash_one(""), 0, |_| {
                FxBuildHasher.hash_one("")
            });
        Self {
            strings,
            tokens: Interner::new(),
        }
    }

    pub(super) fn string(&mut self, s: &str) -> Result<u32, DeltaError> {
        self.strings.intern(s)
    }

    pub(super) fn token(&mut self, token: Token) -> Result<TokenId, DeltaError> {
        self.tokens.intern(&token)
    }

    pub(super) fn is_label(&self, id: TokenId) -> bool {
        self.tokens.get(id).is_some_and(Token::is_label)
    }

    /// Tokens interned so far, live or not.
    pub(super) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// A dictionary of only what `identities` use, and those identities
    /// rewritten in its ids, in the same order; `None` if it cannot be
    /// built.
    pub(super) fn compacted<'a>(
        &self,
        identities: impl Iterator<Item = &'a [TokenId]>,
    ) -> Option<(Self, Vec<Identity>)> {
        let mut remap = Remap {
            old: self,
            fresh: Self::new(),
            tokens: vec![None; self.tokens.len()],
            strings: vec![None; self.strings.len()],
        };
        let mut rewritten = Vec::new();
        for identity in identities {
            let mut words = identity
                .iter()
                .map(|&old| remap.token(old))
                .collect::<Option<Vec<TokenId>>>()?;
            remap.fresh.sort_labels(&mut words);
            rewritten.push(words.into_boxed_slice());
        }
        Some((remap.fresh, rewritten))
    }

    /// Puts the labels at the end of `identity` in token order.
    pub(super) fn sort_labels(&self, identity: &mut [TokenId]) {
        let frames = identity
            .iter()
            .take_while(|&&id| !self.is_label(id))
            .count();
        if let Some(labels) = identity.get_mut(frames..) {
            labels.sort_unstable();
        }
    }
}

/// Ids of an old dictionary to those of a fresh one, given as they are
/// first asked for.
struct Remap<'a> {
    old: &'a Dictionary,
    fresh: Dictionary,
    tokens: Vec<Option<TokenId>>,
    strings: Vec<Option<u32>>,
}

impl Remap<'_> {
    fn token(&mut self, old: TokenId) -> Option<TokenId> {
        let index = usize::try_from(old).ok()?;
        if let Some(new) = *self.tokens.get(index)? {
            return Some(new);
        }
        let token = self.old.tokens.get(old)?.map_strings(|s| self.string(s))?;
        let new = self.fresh.token(token).ok()?;
        *self.tokens.get_mut(index)? = Some(new);
        Some(new)
    }

    fn string(&mut self, old: u32) -> Option<u32> {
        let index = usize::try_from(old).ok()?;
        if let Some(new) = *self.strings.get(index)? {
            return Some(new);
        }
        let new = self.fresh.string(self.old.strings.get(old)?).ok()?;
        *self.strings.get_mut(index)? = Some(new);
        Some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(dictionary: &mut Dictionary, value: &str) -> TokenId {
        let key = dictionary.string("span").unwrap();
        let value = dictionary.string(value).unwrap();
        dictionary.token(Token::StrLabel { key, value }).unwrap()
    }

    #[test]
    fn compaction_keeps_what_identities_use_and_their_labels_in_order() {
        let mut dictionary = Dictionary::new();
        let name = dictionary.string("gone").unwrap();
        let unused = Token::Line {
            function: [name, name, 0],
            line: 1,
            column: 0,
        };
        dictionary.token(unused).unwrap();
        let main = dictionary.string("main").unwrap();
        let frame = dictionary
            .token(Token::Line {
                function: [main, main, 0],
                line: 3,
                column: 0,
            })
            .unwrap();
        let a = label(&mut dictionary, "a");
        let b = label(&mut dictionary, "b");
        assert!(a < b);

        let identities: [&[TokenId]; 2] = [&[frame, b], &[frame, a, b]];
        let (fresh, rewritten) = dictionary.compacted(identities.into_iter()).unwrap();
        assert_eq!(fresh.len(), 3);
        // b was met first, so it now comes before a.
        assert_eq!(&*rewritten[0], &[0, 1]);
        assert_eq!(&*rewritten[1], &[0, 1, 2]);

        let mut again = fresh;
        let main = again.string("main").unwrap();
        let frame_again = again
            .token(Token::Line {
                function: [main, main, 0],
                line: 3,
                column: 0,
            })
            .unwrap();
        assert_eq!(frame_again, 0);
        assert_eq!(label(&mut again, "a"), 2);
        assert_eq!(again.len(), 3);
    }
}
