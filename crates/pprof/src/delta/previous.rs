//! The last scrape taken, and the difference of a new one from it.

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use super::dictionary::{Dictionary, Identity, TokenId};
use super::kinds::ValueKind;
use super::rows::Rows;

/// The cumulative values of each identity of the last scrape taken.
#[derive(Debug)]
pub(super) struct Previous {
    rows: HashMap<Identity, usize, FxBuildHasher>,
    /// Row after row, one value per cumulative sample type.
    values: Vec<i64>,
    width: usize,
    /// `(type, unit)` of each sample type.
    pub sample_types: Vec<(String, String)>,
    pub time_nanos: i64,
}

/// What a scrape is next to the previous one.
pub(super) enum Comparison {
    /// A cumulative value went down, or an identity with a non-zero one is
    /// gone.
    Decreased,
    /// For each row of the scrape, one value per sample type: the increase
    /// of the cumulative ones and the current value of the others.
    Deltas(Vec<i64>),
}

impl Previous {
    pub fn keep(
        rows: Rows,
        kinds: &[ValueKind],
        sample_types: Vec<(String, String)>,
        time_nanos: i64,
    ) -> Self {
        let values = rows
            .values
            .chunks(rows.width.max(1))
            .flat_map(|row| cumulative_values(row, kinds))
            .collect();
        Self {
            rows: rows.index,
            values,
            width: count_cumulative(kinds),
            sample_types,
            time_nanos,
        }
    }

    pub fn identities(&self) -> usize {
        self.rows.len()
    }

    /// Every token of every identity, an upper bound on the live tokens.
    pub fn token_count(&self) -> usize {
        self.rows.keys().map(|identity| identity.len()).sum()
    }

    /// `rows` (of a scrape with the same sample types) less this scrape.
    pub fn compare(&self, rows: &Rows, kinds: &[ValueKind]) -> Comparison {
        let mut deltas = rows.values.clone();
        let mut matched = vec![false; self.rows.len()];
        for (identity, &row) in &rows.index {
            let before = self.rows.get(identity).copied();
            if let Some(slot) = before.and_then(|before| matched.get_mut(before)) {
                *slot = true;
            }
            let before = before.map_or(&[][..], |before| self.row(before));
            let start = row.saturating_mul(rows.width);
            let now = deltas.get_mut(start..).unwrap_or(&mut []);
            let cumulative = now
                .iter_mut()
                .zip(kinds)
                .filter(|(_, &kind)| kind == ValueKind::Cumulative);
            let mut before = before.iter().copied();
            for (value, _) in cumulative {
                let previous = before.next().unwrap_or(0);
                if *value < previous {
                    return Comparison::Decreased;
                }
                // Both are non-negative, so the difference fits.
                *value -= previous;
            }
        }
        let gone_with_values = matched
            .iter()
            .enumerate()
            .any(|(row, &matched)| !matched && self.row(row).iter().any(|&v| v != 0));
        if gone_with_values {
            return Comparison::Decreased;
        }
        Comparison::Deltas(deltas)
    }

    fn row(&self, row: usize) -> &[i64] {
        let start = row.saturating_mul(self.width);
        self.values
            .get(start..start.saturating_add(self.width))
            .unwrap_or(&[])
    }

    /// Rebuilds `dictionary` with only the tokens this scrape's identities
    /// use, when most of it is no longer used. A dictionary that cannot be
    /// rebuilt stays as it is: it still holds every identity.
    pub fn compact(&mut self, dictionary: &mut Dictionary) {
        let live = self.token_count();
        if dictionary.len() <= live.saturating_mul(2).saturating_add(1024) {
            return;
        }
        let entries: Vec<(&[TokenId], usize)> = self
            .rows
            .iter()
            .map(|(identity, &row)| (&identity[..], row))
            .collect();
        let Some((fresh, rewritten)) = dictionary.compacted(entries.iter().map(|&(i, _)| i)) else {
            return;
        };
        let rows = rewritten
            .into_iter()
            .zip(entries.iter().map(|&(_, row)| row))
            .collect();
        self.rows = rows;
        *dictionary = fresh;
    }
}

fn count_cumulative(kinds: &[ValueKind]) -> usize {
    kinds
        .iter()
        .filter(|&&kind| kind == ValueKind::Cumulative)
        .count()
}

fn cumulative_values<'a>(row: &'a [i64], kinds: &'a [ValueKind]) -> impl Iterator<Item = i64> + 'a {
    row.iter()
        .zip(kinds)
        .filter(|(_, &kind)| kind == ValueKind::Cumulative)
        .map(|(&value, _)| value)
}
