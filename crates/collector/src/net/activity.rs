//! What one connection is doing, as fair admission needs to know it:
//! whether it has greeted (sent a whole request head, or the HTTP/2
//! preface and SETTINGS), how many requests it has in flight, and since
//! when it has been idle. Shared by the connection's I/O, the services
//! that handle its requests and the listener's [`super::admission`]
//! table, which closes it through [`Activity::evict`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

use atomic_waker::AtomicWaker;
use tokio::sync::Notify;

pub struct Activity {
    accepted: Instant,
    greeted: AtomicBool,
    in_flight: AtomicUsize,
    /// When the last request ended, in nanoseconds after `accepted`.
    idle_since: AtomicU64,
    evicted: AtomicBool,
    /// The task polling the connection's I/O, woken when it is evicted.
    io_task: AtomicWaker,
    /// The listener's: told when a request ends, which may make a
    /// connection evictable.
    room: Arc<Notify>,
}

impl Activity {
    pub(super) fn new(room: Arc<Notify>) -> Self {
        Self {
            accepted: Instant::now(),
            greeted: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            io_task: AtomicWaker::new(),
            room,
        }
    }

    /// The connection sent a whole request head, or the HTTP/2 preface
    /// and SETTINGS.
    pub(super) fn greet(&self) {
        self.greeted.store(true, Ordering::Release);
    }

    pub(super) fn greeted(&self) -> bool {
        self.greeted.load(Ordering::Acquire)
    }

    /// Counts a request as in flight until the guard is dropped; its head
    /// has arrived, so the connection has greeted.
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.greet();
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        RequestGuard {
            activity: Arc::clone(self),
        }
    }

    pub(super) fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// When the connection was accepted (not greeted yet) or its last
    /// request ended (greeted): the earlier, the sooner it gives way.
    pub(super) fn quiet_since(&self) -> Instant {
        let nanos = self.idle_since.load(Ordering::Acquire);
        self.accepted + std::time::Duration::from_nanos(nanos)
    }

    /// Closes the connection: its next read or write fails.
    pub(super) fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.io_task.wake();
    }

    /// Whether the connection was evicted; otherwise `waker` is woken
    /// when it is.
    pub(super) fn evicted(&self, waker: &Waker) -> bool {
        if self.evicted.load(Ordering::Acquire) {
            return true;
        }
        self.io_task.register(waker);
        self.evicted.load(Ordering::Acquire)
    }

    fn request_ended(&self) {
        let nanos = u64::try_from(self.accepted.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.idle_since.fetch_max(nanos, Ordering::AcqRel);
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.room.notify_waiters();
        }
    }
}

/// A request in flight on a connection; ends when dropped.
pub struct RequestGuard {
    activity: Arc<Activity>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.request_ended();
    }
}
