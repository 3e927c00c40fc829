use serde::Deserialize;

use crate::settings::units::Duration;
use crate::settings::{Options, Problem};

/// How long the limiter waits, after it released memory, before it
/// releases again on entering the soft limit (the Collector's default for
/// its forced garbage collection).
pub const DEFAULT_MIN_RELEASE_INTERVAL_SOFT: Duration = Duration::from_secs(10);

/// `processors.memory_limiter`, with the OpenTelemetry Collector's option
/// names. Limits are in MiB of the process's resident memory, or in
/// percent of the total memory (the cgroup's limit when there is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryLimiterConfig {
    /// How often memory is measured; required.
    pub check_interval: Duration,
    /// The hard limit in MiB; takes precedence over `limit_percentage`.
    pub limit_mib: u32,
    /// How far below the hard limit the soft limit is; 0 is 20 % of the
    /// limit.
    pub spike_limit_mib: u32,
    /// The hard limit in percent of the total memory.
    pub limit_percentage: u32,
    /// The spike in percent of the total memory; 0 is 20 % of the limit.
    pub spike_limit_percentage: u32,
    /// The least time between two releases of memory made on entering the
    /// soft limit.
    pub min_gc_interval_when_soft_limited: Duration,
    /// The least time between two releases of memory above the hard limit.
    pub min_gc_interval_when_hard_limited: Duration,
}

impl Default for MemoryLimiterConfig {
    fn default() -> Self {
        Self {
            check_interval: Duration::from_secs(0),
            limit_mib: 0,
            spike_limit_mib: 0,
            limit_percentage: 0,
            spike_limit_percentage: 0,
            min_gc_interval_when_soft_limited: DEFAULT_MIN_RELEASE_INTERVAL_SOFT,
            min_gc_interval_when_hard_limited: Duration::from_secs(0),
        }
    }
}

impl MemoryLimiterConfig {
    /// Every problem in the options; empty when they are usable. The same
    /// checks as the Collector's, each at its own key.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut problem = |key: &str, message: String| problems.push(Problem::new(key, message));
        if self.check_interval.0.is_zero() {
            problem(
                "check_interval",
                "must be greater than zero, like 1s".to_owned(),
            );
        }
        if self.min_gc_interval_when_soft_limited < self.min_gc_interval_when_hard_limited {
            problem(
                "min_gc_interval_when_soft_limited",
                "must be at least min_gc_interval_when_hard_limited".to_owned(),
            );
        }
        if self.limit_mib == 0 && self.limit_percentage == 0 {
            problem(
                "limit_mib",
                "limit_mib or limit_percentage must be greater than zero".to_owned(),
            );
        }
        for (key, percentage) in [
            ("limit_percentage", self.limit_percentage),
            ("spike_limit_percentage", self.spike_limit_percentage),
        ] {
            if percentage > 100 {
                problem(
                    key,
                    format!("{percentage} is not a percentage; use 1 to 100"),
                );
            }
        }
        if self.limit_mib > 0 && self.spike_limit_mib >= self.limit_mib {
            problem(
                "spike_limit_mib",
                format!(
                    "{} must be smaller than limit_mib ({})",
                    self.spike_limit_mib, self.limit_mib
                ),
            );
        }
        if self.limit_percentage > 0 && self.spike_limit_percentage >= self.limit_percentage {
            problem(
                "spike_limit_percentage",
                format!(
                    "{} must be smaller than limit_percentage ({})",
                    self.spike_limit_percentage, self.limit_percentage
                ),
            );
        }
        problems
    }

    /// The limits in bytes; `total_memory` is asked only for percentages.
    pub fn limits<E>(&self, total_memory: impl FnOnce() -> Result<u64, E>) -> Result<Limits, E> {
        const MIB: u64 = 1024 * 1024;
        if self.limit_mib > 0 {
            return Ok(Limits::new(
                u64::from(self.limit_mib) * MIB,
                u64::from(self.spike_limit_mib) * MIB,
            ));
        }
        let total = total_memory()?;
        let share = |percentage: u32| total / 100 * u64::from(percentage);
        Ok(Limits::new(
            share(self.limit_percentage),
            share(self.spike_limit_percentage),
        ))
    }
}

impl Options for MemoryLimiterConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }
}

/// The limits in bytes of resident memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Above it, memory is released.
    pub hard: u64,
    /// The soft limit is `hard - spike`: above it, data is refused.
    pub spike: u64,
}

impl Limits {
    /// A spike of 0 is 20 % of the limit, as in the Collector.
    pub fn new(hard: u64, spike: u64) -> Self {
        let spike = if spike == 0 { hard / 5 } else { spike };
        Self { hard, spike }
    }

    pub fn soft(&self) -> u64 {
        self.hard.saturating_sub(self.spike)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Parses `options` (YAML lines) as a whole configuration's
    /// `processors.memory_limiter`, and its problems as printed.
    fn parse_all(options: &str) -> Result<MemoryLimiterConfig, Vec<String>> {
        let indented: String = options
            .lines()
            .map(|line| format!("    {line}\n"))
            .collect();
        let text = format!(
            "receivers: {{nop: {{}}}}\nprocessors:\n  memory_limiter:\n{indented}exporters: {{nop: {{}}}}\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [nop]\n      \
             processors: [memory_limiter]\n      exporters: [nop]\n"
        );
        let config = crate::config::parse_yaml(&text, &BTreeMap::new()).map_err(|errors| {
            errors
                .problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        })?;
        let (_, processor) = config.processors.first().unwrap();
        Ok(*processor.options::<MemoryLimiterConfig>().unwrap())
    }

    fn parse(options: &str) -> Result<MemoryLimiterConfig, String> {
        parse_all(options).map_err(|problems| problems.join("\n"))
    }

    fn problems(options: &str) -> Vec<String> {
        parse_all(options).err().unwrap_or_default()
    }

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_collectors_spelling_parses_with_its_defaults() {
        let config = parse("check_interval: 1s\nlimit_mib: 4000\nspike_limit_mib: 800\n").unwrap();
        assert_eq!(config.check_interval.0, std::time::Duration::from_secs(1));
        assert_eq!((config.limit_mib, config.spike_limit_mib), (4000, 800));
        assert_eq!(
            config.min_gc_interval_when_soft_limited,
            DEFAULT_MIN_RELEASE_INTERVAL_SOFT
        );
        let limits = config.limits(|| Err::<u64, ()>(())).unwrap();
        assert_eq!(limits.hard, 4000 * MIB);
        assert_eq!(limits.soft(), 3200 * MIB);
    }

    #[test]
    fn the_spike_defaults_to_a_fifth_of_the_limit() {
        let config = parse("check_interval: 1s\nlimit_mib: 1000\n").unwrap();
        let limits = config.limits(|| Err::<u64, ()>(())).unwrap();
        assert_eq!(limits.spike, 200 * MIB);
        assert_eq!(limits.soft(), 800 * MIB);
    }

    #[test]
    fn percentages_are_of_the_total_memory_and_limit_mib_takes_precedence() {
        let config =
            parse("check_interval: 5s\nlimit_percentage: 80\nspike_limit_percentage: 25\n")
                .unwrap();
        let limits = config.limits(|| Ok::<u64, ()>(1000 * MIB)).unwrap();
        assert_eq!((limits.hard, limits.spike), (800 * MIB, 250 * MIB));
        let only_limit = parse("check_interval: 5s\nlimit_percentage: 50\n").unwrap();
        let limits = only_limit.limits(|| Ok::<u64, ()>(1000 * MIB)).unwrap();
        assert_eq!((limits.hard, limits.spike), (500 * MIB, 100 * MIB));
        let both = parse("check_interval: 5s\nlimit_mib: 100\nlimit_percentage: 50\n")
            .expect("the Collector accepts both");
        let limits = both
            .limits(|| -> Result<u64, ()> { panic!("total memory asked with limit_mib set") })
            .unwrap();
        assert_eq!(limits.hard, 100 * MIB);
    }

    #[test]
    fn a_missing_check_interval_or_limit_is_refused_at_its_key() {
        let found = problems("limit_mib: 100\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("processors.memory_limiter.check_interval:"),
            "{found:?}"
        );
        let found = problems("check_interval: 1s\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("processors.memory_limiter.limit_mib:"),
            "{found:?}"
        );
        assert!(found[0].contains("limit_percentage"), "{found:?}");
    }

    #[test]
    fn a_spike_not_below_its_limit_is_refused() {
        let found = problems("check_interval: 1s\nlimit_mib: 100\nspike_limit_mib: 100\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("processors.memory_limiter.spike_limit_mib:"),
            "{found:?}"
        );
        let found =
            problems("check_interval: 1s\nlimit_percentage: 50\nspike_limit_percentage: 60\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("processors.memory_limiter.spike_limit_percentage:"),
            "{found:?}"
        );
    }

    #[test]
    fn percentages_above_a_hundred_and_inconsistent_release_intervals_are_refused() {
        let found = problems("check_interval: 1s\nlimit_percentage: 120\n");
        assert!(
            found
                .iter()
                .any(|problem| problem.starts_with("processors.memory_limiter.limit_percentage:")),
            "{found:?}"
        );
        let found = problems(
            "check_interval: 1s\nlimit_mib: 100\nmin_gc_interval_when_soft_limited: 1s\nmin_gc_interval_when_hard_limited: 5s\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("processors.memory_limiter.min_gc_interval_when_soft_limited:"),
            "{found:?}"
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error = parse("check_interval: 1s\nlimit_mb: 100\n").unwrap_err();
        assert!(error.contains("limit_mb"), "{error}");
    }
}
