//! A queue bounded in requests and bytes that counts what it holds until
//! each request is done (waiting or being exported), with waiting for
//! room and for work.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::telemetry::instruments::QueueLevel;

/// Why there is no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoom {
    Full,
    Closed,
}

/// One queued item and the bytes it holds.
#[derive(Debug)]
pub struct Entry<T> {
    pub item: T,
    pub bytes: u64,
}

#[derive(Debug)]
pub struct Bounded<T> {
    max_requests: usize,
    max_bytes: u64,
    state: Mutex<State<T>>,
    added: Notify,
    freed: Notify,
}

#[derive(Debug)]
struct State<T> {
    waiting: VecDeque<Entry<T>>,
    held_requests: usize,
    held_bytes: u64,
    closed: bool,
}

impl<T> Bounded<T> {
    pub fn new(max_requests: usize, max_bytes: u64) -> Self {
        Self {
            max_requests: max_requests.max(1),
            max_bytes,
            state: Mutex::new(State {
                waiting: VecDeque::new(),
                held_requests: 0,
                held_bytes: 0,
                closed: false,
            }),
            added: Notify::new(),
            freed: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds room for a request of `bytes`, or says why not. A request
    /// larger than `max_bytes` fits into an empty queue, so that it is not
    /// refused forever.
    pub fn try_reserve(&self, bytes: u64) -> Result<(), NoRoom> {
        let mut state = self.state();
        if state.closed {
            return Err(NoRoom::Closed);
        }
        let fits_bytes = state
            .held_bytes
            .checked_add(bytes)
            .is_some_and(|total| total <= self.max_bytes)
            || state.held_bytes == 0;
        if state.held_requests >= self.max_requests || !fits_bytes {
            return Err(NoRoom::Full);
        }
        state.held_requests += 1;
        state.held_bytes = state.held_bytes.saturating_add(bytes);
        Ok(())
    }

    /// Waits until room for `bytes` is held, or the queue closes.
    pub async fn reserve(&self, bytes: u64) -> Result<(), NoRoom> {
        loop {
            let mut freed = pin!(self.freed.notified());
            freed.as_mut().enable();
            match self.try_reserve(bytes) {
                Err(NoRoom::Full) => freed.await,
                done => return done,
            }
        }
    }

    /// Queues an item whose room [`Self::try_reserve`] or [`Self::reserve`]
    /// holds.
    pub fn push_reserved(&self, item: T, bytes: u64) {
        self.state().waiting.push_back(Entry { item, bytes });
        self.added.notify_one();
    }

    /// Queues an item whatever the limits say: for what is already on disk.
    pub fn push_unbounded(&self, item: T, bytes: u64) {
        {
            let mut state = self.state();
            state.held_requests += 1;
            state.held_bytes = state.held_bytes.saturating_add(bytes);
            state.waiting.push_back(Entry { item, bytes });
        }
        self.added.notify_one();
    }

    /// The next item, waiting for one; `None` once closed and empty.
    pub async fn take(&self) -> Option<Entry<T>> {
        loop {
            let mut added = pin!(self.added.notified());
            added.as_mut().enable();
            {
                let mut state = self.state();
                if let Some(entry) = state.waiting.pop_front() {
                    if !state.waiting.is_empty() {
                        self.added.notify_one();
                    }
                    return Some(entry);
                }
                if state.closed {
                    return None;
                }
            }
            added.await;
        }
    }

    /// Gives back the room of a request that is done, or whose reserved
    /// room went unused.
    pub fn release(&self, bytes: u64) {
        {
            let mut state = self.state();
            state.held_requests = state.held_requests.saturating_sub(1);
            state.held_bytes = state.held_bytes.saturating_sub(bytes);
        }
        self.freed.notify_waiters();
    }

    /// Refuses new requests; takers get what is waiting, then `None`.
    pub fn close(&self) {
        self.state().closed = true;
        self.added.notify_waiters();
        self.freed.notify_waiters();
    }

    /// Removes everything waiting (but still counts it as held).
    pub fn drain_waiting(&self) -> Vec<Entry<T>> {
        self.state().waiting.drain(..).collect()
    }

    /// Whether [`Self::try_reserve`] would hold `bytes` now.
    pub fn has_room_for(&self, bytes: u64) -> bool {
        let state = self.state();
        !state.closed
            && state.held_requests < self.max_requests
            && (state.held_requests == 0
                || state.held_bytes.saturating_add(bytes) <= self.max_bytes)
    }

    pub fn held_requests(&self) -> usize {
        self.state().held_requests
    }

    pub fn held_bytes(&self) -> u64 {
        self.state().held_bytes
    }
}

impl<T: Send> QueueLevel for Bounded<T> {
    fn requests(&self) -> usize {
        self.held_requests()
    }

    fn bytes(&self) -> u64 {
        self.held_bytes()
    }

    fn capacity_requests(&self) -> usize {
        self.max_requests
    }

    fn capacity_bytes(&self) -> u64 {
        self.max_bytes
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn requests_and_bytes_are_bounded_until_released() {
        let queue = Bounded::<u32>::new(2, 100);
        assert_eq!(queue.try_reserve(60), Ok(()));
        assert_eq!(queue.try_reserve(50), Err(NoRoom::Full), "bytes");
        assert_eq!(queue.try_reserve(40), Ok(()));
        assert_eq!(queue.try_reserve(0), Err(NoRoom::Full), "requests");
        assert_eq!((queue.held_requests(), queue.held_bytes()), (2, 100));
        queue.release(60);
        assert_eq!(queue.try_reserve(60), Ok(()));
        queue.release(60);
        queue.release(40);
        assert_eq!(queue.try_reserve(1000), Ok(()), "oversized into empty");
        queue.close();
        queue.release(1000);
        assert_eq!(queue.try_reserve(1), Err(NoRoom::Closed));
    }

    #[test]
    fn replayed_items_may_exceed_the_limits() {
        let queue = Bounded::new(1, 10);
        queue.push_unbounded('a', 50);
        queue.push_unbounded('b', 50);
        assert_eq!(queue.held_requests(), 2);
        assert_eq!(queue.try_reserve(1), Err(NoRoom::Full));
        assert_eq!(queue.drain_waiting().len(), 2);
    }

    #[tokio::test]
    async fn items_come_out_in_order_then_none_once_closed() {
        let queue = Bounded::new(10, 100);
        for item in 0..3 {
            queue.try_reserve(1).unwrap();
            queue.push_reserved(item, 1);
        }
        queue.close();
        let mut taken = Vec::new();
        while let Some(entry) = queue.take().await {
            taken.push(entry.item);
        }
        assert_eq!(taken, [0, 1, 2]);
    }

    #[tokio::test]
    async fn reserve_waits_for_room_and_take_waits_for_items() {
        let queue = Arc::new(Bounded::new(1, 100));
        queue.try_reserve(10).unwrap();
        let waiting = {
            let queue = Arc::clone(&queue);
            tokio::spawn(async move { queue.reserve(10).await })
        };
        let taker = {
            let queue = Arc::clone(&queue);
            tokio::spawn(async move { queue.take().await.map(|entry| entry.item) })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        assert!(!taker.is_finished());
        queue.push_reserved(7, 10);
        assert_eq!(taker.await.unwrap(), Some(7));
        queue.release(10);
        assert_eq!(waiting.await.unwrap(), Ok(()));
        let blocked = {
            let queue = Arc::clone(&queue);
            tokio::spawn(async move { queue.reserve(10).await })
        };
        tokio::task::yield_now().await;
        queue.close();
        assert_eq!(blocked.await.unwrap(), Err(NoRoom::Closed));
    }
}
