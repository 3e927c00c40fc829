//! Fair admission at `max_connections`: a listener at its cap still
//! accepts, and closes the connection doing the least to make room:
//! first one that has not greeted (oldest first: a TLS handshake, a
//! request head or HTTP/2 preface not yet complete), then the one idle
//! the longest; never one with a request in flight. Only when every
//! connection has a request in flight does accepting wait.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::activity::Activity;

/// The connections of one listener.
pub struct Admission {
    /// The listener's address, for the log.
    listener: String,
    max_connections: usize,
    open: Mutex<Open>,
    /// Told when a connection closes or a request ends.
    room: Arc<Notify>,
    /// Whether an eviction was already logged at warn level.
    warned: AtomicBool,
}

#[derive(Default)]
struct Open {
    connections: HashMap<u64, Arc<Activity>>,
    next_id: u64,
}

impl Admission {
    pub fn new(listener: String, max_connections: usize) -> Arc<Self> {
        Arc::new(Self {
            listener,
            max_connections: max_connections.max(1),
            open: Mutex::default(),
            room: Arc::default(),
            warned: AtomicBool::new(false),
        })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a new connection can be admitted: below the cap, or a
    /// connection that could give way.
    pub async fn room(&self) {
        loop {
            let notified = self.room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let open = self.open();
                if open.connections.len() < self.max_connections
                    || open.connections.values().any(|c| !c.busy())
                {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Admits a connection just accepted, closing the least active one
    /// when at the cap; `None` when every connection has a request in
    /// flight (wait for [`Self::room`] and try again).
    pub fn admit(self: &Arc<Self>) -> Option<Ticket> {
        let mut open = self.open();
        if open.connections.len() >= self.max_connections {
            let victim = least_active(&open.connections)?;
            if let Some(evicted) = open.connections.remove(&victim) {
                evicted.evict();
                self.log_eviction(&evicted);
            }
        }
        let id = open.next_id;
        open.next_id = open.next_id.wrapping_add(1);
        let activity = Arc::new(Activity::new(Arc::clone(&self.room)));
        open.connections.insert(id, Arc::clone(&activity));
        Some(Ticket {
            id,
            activity,
            admission: Arc::clone(self),
        })
    }

    fn log_eviction(&self, evicted: &Activity) {
        let (listener, greeted) = (self.listener.as_str(), evicted.greeted());
        if self.warned.swap(true, Ordering::Relaxed) {
            tracing::debug!(
                listener,
                greeted,
                "at max_connections: closed the least active connection"
            );
        } else {
            tracing::warn!(
                listener,
                max_connections = self.max_connections,
                "at max_connections: closing the least active connections (silent, then idle) to admit new ones"
            );
        }
    }

    fn left(&self, id: u64) {
        self.open().connections.remove(&id);
        self.room.notify_waiters();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open().connections.len()
    }
}

/// The connection to close first: not greeted before greeted, then the
/// earliest accepted or idle; none has a request in flight.
fn least_active(connections: &HashMap<u64, Arc<Activity>>) -> Option<u64> {
    connections
        .iter()
        .filter(|(_, activity)| !activity.busy())
        .min_by_key(|(_, activity)| (activity.greeted(), activity.quiet_since()))
        .map(|(id, _)| *id)
}

/// A connection's place in its listener's table, given back on drop.
pub struct Ticket {
    id: u64,
    activity: Arc<Activity>,
    admission: Arc<Admission>,
}

impl Ticket {
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.left(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Poll};

    fn evicted(ticket: &Ticket) -> bool {
        ticket.activity.evicted(std::task::Waker::noop())
    }

    #[test]
    fn at_the_cap_the_silent_go_first_then_the_longest_idle_never_the_busy() {
        let admission = Admission::new("test".to_owned(), 3);
        let busy = admission.admit().unwrap();
        let _request = busy.activity().request_started();
        let idle_first = admission.admit().unwrap();
        drop(idle_first.activity().request_started());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let idle_later = admission.admit().unwrap();
        drop(idle_later.activity().request_started());

        // Full: the longest idle gives way.
        let silent = admission.admit().unwrap();
        assert!(evicted(&idle_first));
        assert!(!evicted(&busy) && !evicted(&idle_later));
        drop(idle_first);
        assert_eq!(admission.len(), 3);

        // A silent connection gives way before an idle one.
        let newest = admission.admit().unwrap();
        assert!(evicted(&silent));
        assert!(!evicted(&idle_later) && !evicted(&newest));

        // Then the oldest silent one, then the idle one.
        let _next = admission.admit().unwrap();
        assert!(evicted(&newest));
        assert!(!evicted(&idle_later));
    }

    #[test]
    fn when_every_connection_is_busy_admission_waits_for_a_request_to_end() {
        let admission = Admission::new("test".to_owned(), 1);
        let only = admission.admit().unwrap();
        let request = only.activity().request_started();
        assert!(admission.admit().is_none());
        assert!(!evicted(&only));

        let mut room = Box::pin(admission.room());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(room.as_mut().poll(&mut cx).is_pending());
        drop(request);
        assert!(matches!(room.as_mut().poll(&mut cx), Poll::Ready(())));
        assert!(admission.admit().is_some());
        assert!(evicted(&only));
    }
}
