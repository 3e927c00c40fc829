//! How many connections each listener may hold, so that they all fit
//! under the limit of open files with a reserve for everything else.

use std::fmt;

use super::DescriptorLimit;
use crate::settings::server::DEFAULT_MAX_CONNECTIONS;

/// Descriptors set aside for the process itself: standard streams, the
/// log file, the runtime's, the files receivers and exporters read and
/// write, TLS and token files, checkpoints.
pub const PROCESS_RESERVE: u64 = 64;

/// Descriptors the listeners' caps leave free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve {
    /// [`PROCESS_RESERVE`].
    pub process: u64,
    /// Two for each sending-queue consumer of each exporter that runs (its
    /// outgoing connection, and the file it writes or reads back from a
    /// persistent queue); one consumer for an exporter without a queue.
    pub exporters: u64,
    /// The `max_connections` of the telemetry endpoint and of each HTTP
    /// extension that runs: they are never derived, so that `/health`
    /// answers while receivers are full.
    pub endpoints: u64,
}

impl Reserve {
    pub fn total(&self) -> u64 {
        self.process
            .saturating_add(self.exporters)
            .saturating_add(self.endpoints)
    }
}

/// The receivers' connection caps: those written, and one derived for
/// each listener whose `max_connections` is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionPlan {
    limit: DescriptorLimit,
    reserve: Reserve,
    /// The caps written, summed.
    written: u64,
    /// The listeners whose cap is derived, by the key path of their
    /// section.
    derived: Vec<String>,
    /// Each derived listener's cap.
    cap: usize,
}

impl ConnectionPlan {
    /// Splits what `limit` leaves after `reserve` and the caps written
    /// evenly among the `listeners` (each a key path, and its cap if
    /// written) without one, each getting at most
    /// [`DEFAULT_MAX_CONNECTIONS`] and at least 1.
    pub fn derive(
        limit: DescriptorLimit,
        reserve: Reserve,
        listeners: &[(String, Option<u32>)],
    ) -> Self {
        let written = listeners
            .iter()
            .filter_map(|(_, cap)| *cap)
            .map(u64::from)
            .fold(0, u64::saturating_add);
        let derived: Vec<String> = listeners
            .iter()
            .filter(|(_, cap)| cap.is_none())
            .map(|(name, _)| name.clone())
            .collect();
        let most = u64::from(DEFAULT_MAX_CONNECTIONS);
        let share = match (limit.soft, u64::try_from(derived.len())) {
            (Some(soft), Ok(count)) if count > 0 => {
                let free = soft.saturating_sub(reserve.total()).saturating_sub(written);
                (free / count).clamp(1, most)
            }
            _ => most,
        };
        Self {
            limit,
            reserve,
            written,
            derived,
            cap: usize::try_from(share).unwrap_or(usize::MAX),
        }
    }

    /// The cap of each listener whose `max_connections` is not written.
    pub fn max_connections(&self) -> usize {
        self.cap
    }

    /// Descriptors the listeners may hold and the reserve, together.
    pub fn needed(&self) -> u64 {
        let count = u64::try_from(self.derived.len()).unwrap_or(u64::MAX);
        let cap = u64::try_from(self.cap).unwrap_or(u64::MAX);
        self.reserve
            .total()
            .saturating_add(self.written)
            .saturating_add(count.saturating_mul(cap))
    }

    /// Whether [`Self::needed`] is within the limit.
    pub fn fits(&self) -> bool {
        self.limit.soft.is_none_or(|soft| self.needed() <= soft)
    }

    /// Logs the plan in one line, and a warning when it does not fit.
    pub fn log(&self) {
        tracing::info!("{self}");
        if let (false, Some(soft)) = (self.fits(), self.limit.soft) {
            tracing::warn!(
                "the listeners' max_connections ({} written, {} derived) and the reserve ({}) \
                 need {} open files, more than the limit of {soft}: when descriptors run out, \
                 listeners stop accepting until connections close; raise the limit \
                 (LimitNOFILE, ulimit -n) or lower max_connections",
                self.written,
                self.derived.len().saturating_mul(self.cap),
                self.reserve.total(),
                self.needed(),
            );
        }
    }
}

impl fmt::Display for ConnectionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.limit.soft, self.limit.raised_from) {
            (None, _) => write!(f, "open files: no limit")?,
            (Some(soft), None) => write!(f, "open files: limit {soft}")?,
            (Some(soft), Some(from)) => {
                write!(f, "open files: limit {soft} (raised from {from})")?;
            }
        }
        let Reserve {
            process,
            exporters,
            endpoints,
        } = self.reserve;
        write!(
            f,
            "; reserve {} ({process} for the process, {exporters} for exporters, \
             {endpoints} for the telemetry endpoint and extensions)",
            self.reserve.total()
        )?;
        write!(f, "; max_connections written: {} in all", self.written)?;
        if self.derived.is_empty() {
            return Ok(());
        }
        write!(f, "; derived:")?;
        for (at, name) in self.derived.iter().enumerate() {
            let separator = if at == 0 { " " } else { ", " };
            write!(f, "{separator}{name} {}", self.cap)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESERVE: Reserve = Reserve {
        process: 64,
        exporters: 20,
        endpoints: 128,
    };

    fn limit(soft: Option<u64>) -> DescriptorLimit {
        DescriptorLimit {
            soft,
            raised_from: None,
        }
    }

    fn listeners(caps: &[Option<u32>]) -> Vec<(String, Option<u32>)> {
        caps.iter()
            .enumerate()
            .map(|(at, cap)| (format!("receivers.r{at}"), *cap))
            .collect()
    }

    #[test]
    fn what_the_reserve_leaves_is_split_evenly_among_unwritten_caps() {
        let plan = ConnectionPlan::derive(limit(Some(512)), RESERVE, &listeners(&[None, None]));
        assert_eq!(plan.max_connections(), 150);
        assert!(plan.fits());
        assert_eq!(plan.needed(), 512);
    }

    #[test]
    fn written_caps_are_taken_first() {
        let plan = ConnectionPlan::derive(
            limit(Some(512)),
            RESERVE,
            &listeners(&[Some(100), None, Some(0)]),
        );
        assert_eq!(plan.max_connections(), 200);
        assert!(plan.fits());
    }

    #[test]
    fn a_derived_cap_never_grows_past_the_default() {
        let plan = ConnectionPlan::derive(limit(Some(1 << 20)), RESERVE, &listeners(&[None]));
        assert_eq!(plan.max_connections(), 1024);
        let plan = ConnectionPlan::derive(limit(None), RESERVE, &listeners(&[None]));
        assert_eq!(plan.max_connections(), 1024);
        assert!(plan.fits());
    }

    #[test]
    fn a_limit_below_the_reserve_leaves_one_connection_and_does_not_fit() {
        let plan = ConnectionPlan::derive(limit(Some(64)), RESERVE, &listeners(&[None, None]));
        assert_eq!(plan.max_connections(), 1);
        assert!(!plan.fits());
    }

    #[test]
    fn written_caps_past_the_limit_do_not_fit() {
        let plan = ConnectionPlan::derive(limit(Some(1024)), RESERVE, &listeners(&[Some(1024)]));
        assert!(!plan.fits());
        assert_eq!(plan.needed(), 1024 + 212);
    }

    #[test]
    fn the_line_names_the_limit_the_reserve_and_each_derived_cap() {
        let raised = DescriptorLimit {
            soft: Some(512),
            raised_from: Some(256),
        };
        let plan = ConnectionPlan::derive(raised, RESERVE, &listeners(&[None, Some(10), None]));
        assert_eq!(
            plan.to_string(),
            "open files: limit 512 (raised from 256); reserve 212 (64 for the process, \
             20 for exporters, 128 for the telemetry endpoint and extensions); \
             max_connections written: 10 in all; derived: receivers.r0 145, receivers.r2 145"
        );
    }
}
