//! Fair admission at `max_connections`: a listener at its cap still
//! accepts, and closes the connection doing the least to make room. It
//! is taken from the client holding the most connections (by IP address;
//! an IPv6 /64 counts as one client), so that one client's flood makes
//! room from itself; within it, first one that has not greeted (oldest
//! first: a TLS handshake, a request head or HTTP/2 preface not yet
//! complete), then the one idle the longest; never one with a request in
//! flight. Only when every connection has a request in flight does
//! accepting wait.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
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
    connections: HashMap<u64, (Client, Arc<Activity>)>,
    /// How many connections each client holds.
    per_client: HashMap<Client, usize>,
    next_id: u64,
}

/// Who holds a connection, as fair admission counts clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Client(IpAddr);

impl Client {
    fn of(peer: SocketAddr) -> Self {
        match peer.ip().to_canonical() {
            IpAddr::V6(address) => {
                let prefix = u128::from(address) & !u128::from(u64::MAX);
                Self(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            address => Self(address),
        }
    }
}

impl Open {
    fn insert(&mut self, id: u64, client: Client, activity: Arc<Activity>) {
        self.connections.insert(id, (client, activity));
        *self.per_client.entry(client).or_default() += 1;
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Activity>> {
        let (client, activity) = self.connections.remove(&id)?;
        if let Some(count) = self.per_client.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(&client);
            }
        }
        Some(activity)
    }

    /// The connection to close first: from the client holding the most,
    /// not greeted before greeted, then the earliest accepted or idle;
    /// none has a request in flight.
    fn least_active(&self) -> Option<u64> {
        self.connections
            .iter()
            .filter(|(_, (_, activity))| !activity.busy())
            .min_by_key(|(_, (client, activity))| {
                let held = self.per_client.get(client).copied().unwrap_or(0);
                (Reverse(held), activity.greeted(), activity.quiet_since())
            })
            .map(|(id, _)| *id)
    }
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
                    || open.connections.values().any(|(_, c)| !c.busy())
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
    pub fn admit(self: &Arc<Self>, peer: SocketAddr) -> Option<Ticket> {
        let mut open = self.open();
        if open.connections.len() >= self.max_connections {
            let victim = open.least_active()?;
            if let Some(evicted) = open.remove(victim) {
                evicted.evict();
                self.log_eviction(&evicted);
            }
        }
        let id = open.next_id;
        open.next_id = open.next_id.wrapping_add(1);
        let activity = Arc::new(Activity::new(Arc::clone(&self.room)));
        open.insert(id, Client::of(peer), Arc::clone(&activity));
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

    /// Closes the least active connection, if one may be closed: when
    /// descriptors ran out, so that the next accept can succeed.
    pub fn make_room(&self) -> bool {
        let mut open = self.open();
        let Some(evicted) = open.least_active().and_then(|victim| open.remove(victim)) else {
            return false;
        };
        evicted.evict();
        self.log_eviction(&evicted);
        true
    }

    fn left(&self, id: u64) {
        self.open().remove(id);
        self.room.notify_waiters();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open().connections.len()
    }
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

    const LOCAL: SocketAddr = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 4000);

    fn evicted(ticket: &Ticket) -> bool {
        ticket.activity.evicted(std::task::Waker::noop())
    }

    #[test]
    fn at_the_cap_the_silent_go_first_then_the_longest_idle_never_the_busy() {
        let admission = Admission::new("test".to_owned(), 3);
        let busy = admission.admit(LOCAL).unwrap();
        let _request = busy.activity().request_started();
        let idle_first = admission.admit(LOCAL).unwrap();
        drop(idle_first.activity().request_started());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let idle_later = admission.admit(LOCAL).unwrap();
        drop(idle_later.activity().request_started());

        // Full: the longest idle gives way.
        let silent = admission.admit(LOCAL).unwrap();
        assert!(evicted(&idle_first));
        assert!(!evicted(&busy) && !evicted(&idle_later));
        drop(idle_first);
        assert_eq!(admission.len(), 3);

        // A silent connection gives way before an idle one.
        let newest = admission.admit(LOCAL).unwrap();
        assert!(evicted(&silent));
        assert!(!evicted(&idle_later) && !evicted(&newest));

        // Then the oldest silent one, then the idle one.
        let _next = admission.admit(LOCAL).unwrap();
        assert!(evicted(&newest));
        assert!(!evicted(&idle_later));
    }

    #[test]
    fn when_every_connection_is_busy_admission_waits_for_a_request_to_end() {
        let admission = Admission::new("test".to_owned(), 1);
        let only = admission.admit(LOCAL).unwrap();
        let request = only.activity().request_started();
        assert!(admission.admit(LOCAL).is_none());
        assert!(!evicted(&only));

        let mut room = Box::pin(admission.room());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(room.as_mut().poll(&mut cx).is_pending());
        drop(request);
        assert!(matches!(room.as_mut().poll(&mut cx), Poll::Ready(())));
        assert!(admission.admit(LOCAL).is_some());
        assert!(evicted(&only));
    }
}

#[cfg(test)]
mod client_tests {
    use super::*;

    fn peer(address: &str) -> SocketAddr {
        address.parse().unwrap()
    }

    #[test]
    fn the_client_holding_the_most_connections_gives_way_first() {
        let admission = Admission::new("test".to_owned(), 3);
        let real = admission.admit(peer("10.0.0.1:1000")).unwrap();
        let flood: Vec<_> = (0..2)
            .map(|port| {
                admission
                    .admit(peer(&format!("10.0.0.2:{}", 2000 + port)))
                    .unwrap()
            })
            .collect();
        // The real client's silent connection is the oldest, but the
        // flooding client holds more.
        let newest = admission.admit(peer("10.0.0.2:3000")).unwrap();
        assert!(!real.activity().evicted(std::task::Waker::noop()));
        assert!(flood[0].activity().evicted(std::task::Waker::noop()));
        assert!(!newest.activity().evicted(std::task::Waker::noop()));
    }

    #[test]
    fn an_ipv6_slash_64_is_one_client_and_mapped_ipv4_is_ipv4() {
        assert_eq!(
            Client::of(peer("[2001:db8::1]:1")),
            Client::of(peer("[2001:db8::ffff:2]:2"))
        );
        assert_ne!(
            Client::of(peer("[2001:db8::1]:1")),
            Client::of(peer("[2001:db8:0:1::1]:1"))
        );
        assert_eq!(
            Client::of(peer("[::ffff:10.0.0.1]:1")),
            Client::of(peer("10.0.0.1:2"))
        );
    }
}
