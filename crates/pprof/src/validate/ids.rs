use std::collections::HashMap;

/// Finds a table entry's position from its id. Ids are usually small and
/// dense, so a direct vector serves them; sparse ids fall back to a map.
#[derive(Debug)]
pub enum IdIndex {
    Direct(Vec<u32>),
    Sparse(HashMap<u64, usize>),
}

/// Why a table's ids cannot be indexed.
#[derive(Debug, PartialEq, Eq)]
pub enum IdProblem {
    Zero {
        index: usize,
    },
    Duplicate {
        id: u64,
        first: usize,
        second: usize,
    },
}

impl IdIndex {
    pub fn build(ids: impl ExactSizeIterator<Item = u64> + Clone) -> Result<Self, IdProblem> {
        let len = ids.len();
        let max_id = ids.clone().max().unwrap_or(0);
        let direct_limit = len.saturating_mul(4).saturating_add(64);
        if usize::try_from(max_id).is_ok_and(|max| max <= direct_limit) && len < u32::MAX as usize {
            let mut slots = vec![0u32; usize::try_from(max_id).unwrap_or(0) + 1];
            for (index, id) in ids.enumerate() {
                let slot = usize::try_from(id).ok().and_then(|id| slots.get_mut(id));
                match slot {
                    _ if id == 0 => return Err(IdProblem::Zero { index }),
                    Some(slot) if *slot != 0 => {
                        return Err(IdProblem::Duplicate {
                            id,
                            first: *slot as usize - 1,
                            second: index,
                        })
                    }
                    Some(slot) => *slot = u32::try_from(index + 1).unwrap_or(u32::MAX),
                    None => {}
                }
            }
            Ok(Self::Direct(slots))
        } else {
            let mut positions = HashMap::with_capacity(len);
            for (index, id) in ids.enumerate() {
                if id == 0 {
                    return Err(IdProblem::Zero { index });
                }
                if let Some(&first) = positions.get(&id) {
                    return Err(IdProblem::Duplicate {
                        id,
                        first,
                        second: index,
                    });
                }
                positions.insert(id, index);
            }
            Ok(Self::Sparse(positions))
        }
    }

    /// Position in the table of the entry with this id.
    pub fn position(&self, id: u64) -> Option<usize> {
        match self {
            Self::Direct(slots) => usize::try_from(id)
                .ok()
                .and_then(|id| slots.get(id))
                .and_then(|&slot| (slot as usize).checked_sub(1)),
            Self::Sparse(positions) => positions.get(&id).copied(),
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        self.position(id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_ids_resolve_to_positions() {
        let dense = IdIndex::build([3u64, 1, 2].into_iter()).unwrap();
        assert!(matches!(dense, IdIndex::Direct(_)));
        assert_eq!(dense.position(1), Some(1));
        assert_eq!(dense.position(3), Some(0));
        assert_eq!(dense.position(4), None);
        assert_eq!(dense.position(0), None);

        let sparse = IdIndex::build([1u64 << 40, 7].into_iter()).unwrap();
        assert!(matches!(sparse, IdIndex::Sparse(_)));
        assert_eq!(sparse.position(1 << 40), Some(0));
        assert_eq!(sparse.position(8), None);
    }

    #[test]
    fn zero_and_duplicate_ids_are_reported_with_positions() {
        assert_eq!(
            IdIndex::build([1u64, 0].into_iter()).unwrap_err(),
            IdProblem::Zero { index: 1 }
        );
        assert_eq!(
            IdIndex::build([5u64, 6, 5].into_iter()).unwrap_err(),
            IdProblem::Duplicate {
                id: 5,
                first: 0,
                second: 2
            }
        );
        assert_eq!(
            IdIndex::build([1u64 << 50, 9, 1 << 50].into_iter()).unwrap_err(),
            IdProblem::Duplicate {
                id: 1 << 50,
                first: 0,
                second: 2
            }
        );
    }
}
