//! The last few errors of each receiver and exporter, kept with the
//! collector's metrics for the zpages: a small ring per component, where
//! the same message again only counts up.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// Errors kept per component; older ones make room.
pub const KEPT_PER_COMPONENT: usize = 10;
/// Characters kept of a message; the rest is cut.
const LONGEST_MESSAGE: usize = 1000;

/// What kind of component an error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Receiver,
    Exporter,
}

/// "1 profile", "2 profiles": how many profiles, for a message.
pub fn profiles_phrase(profiles: usize) -> String {
    if profiles == 1 {
        "1 profile".to_owned()
    } else {
        format!("{profiles} profiles")
    }
}

/// One error, or the same message several times in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentError {
    pub first: SystemTime,
    pub last: SystemTime,
    /// How many times in a row it happened.
    pub times: u64,
    pub message: String,
}

/// One component's ring, shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct ErrorLog(Arc<Mutex<Ring>>);

#[derive(Debug, Default)]
struct Ring {
    kept: VecDeque<RecentError>,
    /// Every error noted, kept or not.
    total: u64,
}

/// What a component's ring holds now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorHistory {
    /// Newest first.
    pub recent: Vec<RecentError>,
    /// Every error noted since the start.
    pub total: u64,
}

impl ErrorLog {
    /// Keeps `message` as the newest error, at `now`.
    pub fn note(&self, message: &str, now: SystemTime) {
        let mut ring = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ring.total = ring.total.saturating_add(1);
        let message = shortened(message);
        if let Some(newest) = ring.kept.back_mut() {
            if newest.message == message {
                newest.times = newest.times.saturating_add(1);
                newest.last = now;
                return;
            }
        }
        if ring.kept.len() >= KEPT_PER_COMPONENT {
            ring.kept.pop_front();
        }
        ring.kept.push_back(RecentError {
            first: now,
            last: now,
            times: 1,
            message,
        });
    }

    pub fn history(&self) -> ErrorHistory {
        let ring = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ErrorHistory {
            recent: ring.kept.iter().rev().cloned().collect(),
            total: ring.total,
        }
    }
}

fn shortened(message: &str) -> String {
    match message.char_indices().nth(LONGEST_MESSAGE) {
        Some((cut, _)) => format!("{}…", message.get(..cut).unwrap_or(message)),
        None => message.to_owned(),
    }
}

/// Every component's ring, by kind and id.
#[derive(Debug, Default)]
pub struct RecentErrors {
    logs: Mutex<BTreeMap<(Source, String), ErrorLog>>,
}

impl RecentErrors {
    /// The ring of `id`; asking again returns the same one.
    pub fn log(&self, source: Source, id: &str) -> ErrorLog {
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.entry((source, id.to_owned())).or_default().clone()
    }

    /// What `id` noted; empty when it noted nothing.
    pub fn history(&self, source: Source, id: &str) -> ErrorHistory {
        let logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.get(&(source, id.to_owned()))
            .map(ErrorLog::history)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn one_profile_is_not_profiles() {
        assert_eq!(profiles_phrase(1), "1 profile");
        assert_eq!(profiles_phrase(0), "0 profiles");
        assert_eq!(profiles_phrase(3), "3 profiles");
    }

    #[test]
    fn the_ring_keeps_the_newest_and_counts_every_error() {
        let errors = RecentErrors::default();
        let log = errors.log(Source::Exporter, "otlp");
        let start = SystemTime::UNIX_EPOCH;
        for i in 0..KEPT_PER_COMPONENT + 3 {
            log.note(&format!("error {i}"), start + Duration::from_secs(i as u64));
        }
        let history = errors.history(Source::Exporter, "otlp");
        assert_eq!(history.total, KEPT_PER_COMPONENT as u64 + 3);
        assert_eq!(history.recent.len(), KEPT_PER_COMPONENT);
        assert_eq!(
            history.recent.first().map(|e| e.message.as_str()),
            Some(format!("error {}", KEPT_PER_COMPONENT + 2).as_str())
        );
        assert_eq!(
            history.recent.last().map(|e| e.message.as_str()),
            Some("error 3")
        );
        assert_eq!(
            errors.history(Source::Receiver, "otlp"),
            ErrorHistory::default()
        );
    }

    #[test]
    fn the_same_message_in_a_row_counts_up() {
        let log = ErrorLog::default();
        let start = SystemTime::UNIX_EPOCH;
        log.note("full", start);
        log.note("full", start + Duration::from_secs(5));
        log.note("broken", start + Duration::from_secs(6));
        log.note("full", start + Duration::from_secs(7));
        let history = log.history();
        assert_eq!(history.total, 4);
        let seen: Vec<_> = history
            .recent
            .iter()
            .map(|e| (e.message.as_str(), e.times))
            .collect();
        assert_eq!(seen, [("full", 1), ("broken", 1), ("full", 2)]);
        assert_eq!(
            history.recent.last().map(|e| (e.first, e.last)),
            Some((start, start + Duration::from_secs(5)))
        );
    }

    #[test]
    fn long_messages_are_cut_on_a_character() {
        let log = ErrorLog::default();
        log.note(&"é".repeat(LONGEST_MESSAGE + 5), SystemTime::UNIX_EPOCH);
        let message = log.history().recent.remove(0).message;
        assert_eq!(message.chars().count(), LONGEST_MESSAGE + 1);
        assert!(message.ends_with('…'));
    }
}
