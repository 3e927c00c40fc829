//! Exponential backoff with jitter, and when to give up.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use super::config::RetryConfig;

/// The waits between the attempts of one request.
#[derive(Debug, Clone)]
pub struct Backoff {
    interval: Duration,
    max_interval: Duration,
    multiplier: f64,
    randomization_factor: f64,
    max_elapsed: Option<Duration>,
    jitter: Jitter,
}

impl Backoff {
    pub fn new(config: &RetryConfig) -> Self {
        let initial = config.initial_interval.0;
        Self {
            interval: initial,
            max_interval: config.max_interval.0.max(initial),
            multiplier: config.multiplier.max(1.0),
            randomization_factor: config.randomization_factor.clamp(0.0, 1.0),
            max_elapsed: Some(config.max_elapsed_time.0).filter(|limit| !limit.is_zero()),
            jitter: Jitter::new(),
        }
    }

    /// The wait before the next attempt, `random` in `[0, 1)` placing it
    /// within `interval × (1 ± randomization_factor)`; the interval then
    /// grows by the multiplier, up to `max_interval`.
    pub fn next_wait(&mut self, random: f64) -> Duration {
        let spread = self.randomization_factor * (2.0 * random.clamp(0.0, 1.0) - 1.0);
        let wait = self.interval.mul_f64((1.0 + spread).max(0.0));
        self.interval = self
            .interval
            .mul_f64(self.multiplier)
            .min(self.max_interval);
        wait
    }

    /// The wait after a retryable failure: the backoff's, or what the
    /// destination asked for (`Retry-After`) when that is longer. `None`
    /// when waiting would pass `max_elapsed_time` (counted from the first
    /// attempt, `elapsed` ago).
    pub fn after_failure(
        &mut self,
        retry_after: Option<Duration>,
        elapsed: Duration,
    ) -> Option<Duration> {
        let random = self.jitter.next_unit();
        let wait = self.next_wait(random).max(retry_after.unwrap_or_default());
        match self.max_elapsed {
            Some(limit) if elapsed.saturating_add(wait) > limit => None,
            _ => Some(wait),
        }
    }
}

/// Numbers in `[0, 1)` for one backoff's jitter: a counter hashed with
/// keys of its own, so that backoffs started together spread apart.
#[derive(Debug, Clone)]
struct Jitter {
    keys: RandomState,
    calls: u64,
}

impl Jitter {
    fn new() -> Self {
        Self {
            keys: RandomState::new(),
            calls: 0,
        }
    }

    /// A number in `[0, 1)`, different at each call; good enough for jitter.
    fn next_unit(&mut self) -> f64 {
        let mut hasher = self.keys.build_hasher();
        hasher.write_u64(self.calls);
        self.calls = self.calls.wrapping_add(1);
        (hasher.finish() >> 11) as f64 / (1_u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::units;

    fn config(max_elapsed_secs: u64) -> RetryConfig {
        RetryConfig {
            initial_interval: units::Duration(Duration::from_millis(100)),
            max_interval: units::Duration(Duration::from_secs(1)),
            max_elapsed_time: units::Duration::from_secs(max_elapsed_secs),
            multiplier: 2.0,
            randomization_factor: 0.5,
            ..RetryConfig::default()
        }
    }

    #[test]
    fn waits_grow_by_the_multiplier_up_to_the_limit_within_the_jitter() {
        let expected_ms = [100, 200, 400, 800, 1000, 1000, 1000];
        for random in [0.0, 0.25, 0.5, 0.999] {
            let mut backoff = Backoff::new(&config(0));
            for interval in expected_ms {
                let wait = backoff.next_wait(random).as_secs_f64() * 1000.0;
                let low = f64::from(interval) * 0.5;
                let high = f64::from(interval) * 1.5;
                assert!(
                    (low - 1e-6..=high + 1e-6).contains(&wait),
                    "{wait} outside {low}..{high}"
                );
            }
        }
        let mut middle = Backoff::new(&config(0));
        assert_eq!(middle.next_wait(0.5), Duration::from_millis(100));
    }

    #[test]
    fn random_waits_stay_within_bounds() {
        let mut backoff = Backoff::new(&config(0));
        let mut interval = 100.0;
        for _ in 0..50 {
            let wait = backoff
                .after_failure(None, Duration::ZERO)
                .unwrap()
                .as_secs_f64()
                * 1000.0;
            assert!(wait >= interval * 0.5 - 1e-6 && wait <= interval * 1.5 + 1e-6);
            interval = (interval * 2.0_f64).min(1000.0);
        }
    }

    #[test]
    fn retry_after_is_a_lower_bound() {
        let mut backoff = Backoff::new(&config(0));
        let wait = backoff
            .after_failure(Some(Duration::from_secs(7)), Duration::ZERO)
            .unwrap();
        assert_eq!(wait, Duration::from_secs(7));
        let short = backoff
            .after_failure(Some(Duration::from_millis(1)), Duration::ZERO)
            .unwrap();
        assert!(short >= Duration::from_millis(100), "{short:?}");
    }

    #[test]
    fn giving_up_once_the_next_wait_passes_max_elapsed_time() {
        let mut backoff = Backoff::new(&config(10));
        assert!(backoff
            .after_failure(None, Duration::from_secs(1))
            .is_some());
        assert!(backoff
            .after_failure(None, Duration::from_millis(9_999))
            .is_none());
        assert!(backoff
            .after_failure(Some(Duration::from_secs(60)), Duration::ZERO)
            .is_none());
        let mut forever = Backoff::new(&config(0));
        assert!(forever
            .after_failure(None, Duration::from_secs(1_000_000))
            .is_some());
    }

    #[test]
    fn random_units_are_in_range_and_vary() {
        let mut jitter = Jitter::new();
        let values: Vec<f64> = (0..100).map(|_| jitter.next_unit()).collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        assert!(values.iter().any(|v| (v - values[0]).abs() > 1e-9));
    }
}
