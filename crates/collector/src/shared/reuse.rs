//! Things kept for reuse between requests (buffers, decoder states, decoded
//! requests), a bounded number of them: what the receivers and exporters
//! would otherwise allocate, fault in and free for every request.

use std::sync::{Mutex, PoisonError};

/// At most `max` things kept, the last kept given out first.
#[derive(Debug)]
pub(crate) struct ReusePool<T> {
    max: usize,
    items: Mutex<Vec<T>>,
}

impl<T> ReusePool<T> {
    pub const fn new(max: usize) -> Self {
        Self {
            max,
            items: Mutex::new(Vec::new()),
        }
    }

    /// A kept thing, if there is one.
    pub fn take(&self) -> Option<T> {
        self.lock().pop()
    }

    /// Keeps `item` unless `max` are kept already.
    pub fn keep(&self, item: T) {
        self.keep_if(item, |_| true);
    }

    /// Keeps `item` unless `max` are kept already or `room` says, of those
    /// kept, that there is no room for it.
    pub fn keep_if(&self, item: T, room: impl FnOnce(&[T]) -> bool) {
        let mut items = self.lock();
        if items.len() < self.max && room(&items) {
            items.push(item);
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_are_kept_and_the_last_kept_comes_out_first() {
        let kept = ReusePool::new(2);
        for item in 1..=3 {
            kept.keep(item);
        }
        assert_eq!(kept.len(), 2);
        assert_eq!(kept.take(), Some(2));
        kept.keep_if(4, |items| items.iter().sum::<i32>() + 4 <= 4);
        assert_eq!(kept.len(), 1, "no room for 4 beside 1");
        kept.keep_if(3, |items| items.iter().sum::<i32>() + 3 <= 4);
        assert_eq!(kept.take(), Some(3));
        assert_eq!(kept.take(), Some(1));
        assert_eq!(kept.take(), None);
    }
}
