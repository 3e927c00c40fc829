//! A scrape's samples merged by identity.

use std::ops::Range;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use super::dictionary::{Dictionary, Identity, Token, TokenId};
use super::kinds::ValueKind;
use super::DeltaError;
use crate::canonical::LabelKey;
use crate::strings::resolve;
use crate::validate::ids::IdIndex;
use crate::{Location, Mapping, Profile};

/// The distinct identities of a scrape, numbered in order of first
/// appearance, with their summed values.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub index: HashMap<Identity, usize, FxBuildHasher>,
    /// The position of each row's first sample in the scrape.
    pub first_sample: Vec<usize>,
    /// Row after row, one value per sample type.
    pub values: Vec<i64>,
    pub width: usize,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.first_sample.len()
    }
}

/// Merges the samples of `scrape`, a valid profile, by identity. Cumulative
/// values must not be negative.
pub(super) fn collect(
    scrape: &Profile,
    kinds: &[ValueKind],
    dictionary: &mut Dictionary,
    max_identities: usize,
) -> Result<Rows, DeltaError> {
    let stacks = LocationTokens::of(scrape, dictionary)?;
    let text = |index| resolve(&scrape.string_table, index);
    let mut rows = Rows {
        width: kinds.len(),
        ..Rows::default()
    };
    let mut identity: Vec<TokenId> = Vec::new();
    for (position, sample) in scrape.sample.iter().enumerate() {
        identity.clear();
        for &id in &sample.location_id {
            identity.extend_from_slice(stacks.frames(id));
        }
        for label in &sample.label {
            let token = match LabelKey::of(label, text) {
                None => continue,
                Some(key) if key.is_num => Token::NumLabel {
                    key: dictionary.string(key.key)?,
                    value: key.num,
                    unit: dictionary.string(key.unit)?,
                },
                Some(key) => Token::StrLabel {
                    key: dictionary.string(key.key)?,
                    value: dictionary.string(key.str_value)?,
                },
            };
            identity.push(dictionary.token(token)?);
        }
        dictionary.sort_labels(&mut identity);

        let row = match rows.index.get(identity.as_slice()) {
            Some(&row) => row,
            None => {
                let row = rows.len();
                if row >= max_identities {
                    return Err(DeltaError::TooManyIdentities {
                        limit: max_identities,
                    });
                }
                rows.index.insert(identity.as_slice().into(), row);
                rows.first_sample.push(position);
                rows.values.resize(rows.values.len() + rows.width, 0);
                row
            }
        };
        let start = row * rows.width;
        let slots = rows.values.get_mut(start..).unwrap_or(&mut []);
        for (column, ((slot, &value), kind)) in
            slots.iter_mut().zip(&sample.value).zip(kinds).enumerate()
        {
            let sample_type = || sample_type_name(scrape, column);
            if *kind == ValueKind::Cumulative && value < 0 {
                return Err(DeltaError::Negative {
                    sample: position,
                    sample_type: sample_type(),
                    value,
                });
            }
            *slot = slot
                .checked_add(value)
                .ok_or_else(|| DeltaError::Overflow {
                    sample_type: sample_type(),
                })?;
        }
    }
    Ok(rows)
}

/// `type/unit` of a sample type, for messages.
pub(super) fn sample_type_name(profile: &Profile, column: usize) -> String {
    let text = |index| resolve(&profile.string_table, index);
    profile
        .sample_type
        .get(column)
        .map_or_else(String::new, |value_type| {
            format!("{}/{}", text(value_type.r#type), text(value_type.unit))
        })
}

/// Each location's frames as tokens, leaf first.
struct LocationTokens {
    index: Option<IdIndex>,
    spans: Vec<Range<usize>>,
    tokens: Vec<TokenId>,
}

impl LocationTokens {
    fn of(profile: &Profile, dictionary: &mut Dictionary) -> Result<Self, DeltaError> {
        let functions = IdIndex::build(profile.function.iter().map(|f| f.id)).ok();
        let mappings = IdIndex::build(profile.mapping.iter().map(|m| m.id)).ok();
        let text = |index| resolve(&profile.string_table, index);
        let mut stacks = Self {
            index: IdIndex::build(profile.location.iter().map(|l| l.id)).ok(),
            spans: Vec::with_capacity(profile.location.len()),
            tokens: Vec::new(),
        };
        // A function's strings, interned the first time one of its lines is.
        let mut function_strings: Vec<Option<[u32; 3]>> = vec![None; profile.function.len()];
        for location in &profile.location {
            let start = stacks.tokens.len();
            for line in &location.line {
                let position = functions
                    .as_ref()
                    .and_then(|index| index.position(line.function_id));
                let slot = position.and_then(|p| function_strings.get_mut(p));
                let strings = match (slot, position.and_then(|p| profile.function.get(p))) {
                    (Some(Some(strings)), _) => *strings,
                    (Some(slot), Some(f)) => {
                        let strings = [
                            dictionary.string(text(f.name))?,
                            dictionary.string(text(f.system_name))?,
                            dictionary.string(text(f.filename))?,
                        ];
                        *slot = Some(strings);
                        strings
                    }
                    _ => [0; 3],
                };
                let token = Token::Line {
                    function: strings,
                    line: line.line,
                    column: line.column,
                };
                stacks.tokens.push(dictionary.token(token)?);
            }
            if location.line.is_empty() {
                let mapping = mappings
                    .as_ref()
                    .and_then(|index| index.position(location.mapping_id))
                    .and_then(|position| profile.mapping.get(position));
                let token = address_token(location, mapping, &text, dictionary)?;
                stacks.tokens.push(dictionary.token(token)?);
            }
            stacks.spans.push(start..stacks.tokens.len());
        }
        Ok(stacks)
    }

    /// The frames of the location with this id (valid profiles have it).
    fn frames(&self, id: u64) -> &[TokenId] {
        let span = self
            .index
            .as_ref()
            .and_then(|index| index.position(id))
            .and_then(|position| self.spans.get(position));
        span.and_then(|span| self.tokens.get(span.clone()))
            .unwrap_or(&[])
    }
}

fn address_token<'a>(
    location: &Location,
    mapping: Option<&Mapping>,
    text: &impl Fn(i64) -> &'a str,
    dictionary: &mut Dictionary,
) -> Result<Token, DeltaError> {
    let Some(mapping) = mapping else {
        return Ok(Token::Address {
            mapping: [0; 2],
            file_offset: location.address,
        });
    };
    Ok(Token::Address {
        mapping: [
            dictionary.string(text(mapping.filename))?,
            dictionary.string(text(mapping.build_id))?,
        ],
        file_offset: location
            .address
            .wrapping_sub(mapping.memory_start)
            .wrapping_add(mapping.file_offset),
    })
}
