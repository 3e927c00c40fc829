//! A byte budget shared by everything a pipeline holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::telemetry::metrics::labels;
use crate::telemetry::Registry;

/// Counts bytes in flight against a limit; `try_reserve` never blocks.
#[derive(Debug)]
pub struct ByteBudget {
    limit: usize,
    used: AtomicUsize,
}

/// Bytes held until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<ByteBudget>,
    bytes: usize,
}

impl ByteBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Reserves `bytes`, or `None` when that would pass the limit. A single
    /// request larger than the whole budget is admitted when nothing else
    /// is held, so that it is not refused forever.
    pub fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<Reservation> {
        self.try_add(bytes, 0).then(|| Reservation {
            budget: Arc::clone(self),
            bytes,
        })
    }

    /// Adds `bytes` to what is used unless that passes the limit; past it
    /// only when what is used is all `own` (held by the caller already).
    fn try_add(&self, bytes: usize, own: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let fits = used
                .checked_add(bytes)
                .is_some_and(|total| total <= self.limit)
                || used == own;
            if !fits {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used.saturating_add(bytes),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(current) => used = current,
            }
        }
    }

    /// Reserves `bytes` even past the limit: for memory already taken,
    /// which must be counted so that receivers refuse more.
    pub fn reserve_forced(self: &Arc<Self>, bytes: usize) -> Reservation {
        self.used.fetch_add(bytes, Ordering::AcqRel);
        Reservation {
            budget: Arc::clone(self),
            bytes,
        }
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl Reservation {
    /// Holds `bytes` more, or returns false when that would pass the limit;
    /// as with [`ByteBudget::try_reserve`], a reservation that is all the
    /// budget holds may grow past it.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let grown = self.budget.try_add(bytes, self.bytes);
        if grown {
            self.bytes = self.bytes.saturating_add(bytes);
        }
        grown
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Gauges over a pipeline's byte budget, read at scrape time.
pub fn register_queue(registry: &Registry, pipeline: &str, budget: Arc<ByteBudget>) {
    let label = || labels(&[("pipeline", pipeline)]);
    let used = Arc::clone(&budget);
    registry.gauge_fn(
        "profbridge_pipeline_queue_size_bytes",
        "Bytes a pipeline holds, queued or being exported.",
        label(),
        move || used.used() as f64,
    );
    registry.gauge_fn(
        "profbridge_pipeline_queue_capacity_bytes",
        "Bytes a pipeline may hold.",
        label(),
        move || budget.limit() as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_limited_and_released_on_drop() {
        let budget = ByteBudget::new(100);
        let a = budget.try_reserve(60).unwrap();
        assert!(budget.try_reserve(50).is_none());
        let b = budget.try_reserve(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        drop(b);
        let huge = budget.try_reserve(1000);
        assert!(
            huge.is_some(),
            "an oversized request is admitted into an empty budget"
        );
    }

    #[test]
    fn reservations_grow_within_the_limit_or_alone_past_it() {
        let budget = ByteBudget::new(100);
        let mut a = budget.try_reserve(30).unwrap();
        assert!(a.try_grow(40));
        assert_eq!(budget.used(), 70);
        let mut b = budget.try_reserve(20).unwrap();
        assert!(!b.try_grow(11), "70 + 20 + 11 passes 100");
        assert!(b.try_grow(10));
        assert_eq!(budget.used(), 100);
        drop(b);
        assert!(
            a.try_grow(1000),
            "alone in the budget, it may pass the limit"
        );
        assert_eq!(budget.used(), 1070);
        drop(a);
        assert_eq!(budget.used(), 0);
    }
}
