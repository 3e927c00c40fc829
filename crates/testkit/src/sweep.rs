//! Sweeps in two tiers: the whole sweep when `PROFBRIDGE_FULL_SWEEP=1` (as
//! `.ci/run` sets), otherwise a seeded sample of it that still visits every
//! input. The sample's seed is printed, and `PROFBRIDGE_SWEEP_SEED` replays
//! it.

use crate::{say_loudly, SeededRng};

/// Set to 1 to run every sweep whole.
pub const FULL_SWEEP_VAR: &str = "PROFBRIDGE_FULL_SWEEP";
/// Chooses a sampled sweep's seed (decimal or 0x hex), to replay a failure.
pub const SWEEP_SEED_VAR: &str = "PROFBRIDGE_SWEEP_SEED";

/// Which tier a sweep runs in.
#[derive(Debug, Clone, Copy)]
pub enum Sweep {
    Full,
    Sample { seed: u64 },
}

impl Sweep {
    /// The tier the environment asks for; a sample says loudly, naming
    /// `test`, which seed it uses and how to replay it.
    pub fn from_env(test: &str) -> Self {
        if std::env::var(FULL_SWEEP_VAR).is_ok_and(|v| v == "1") {
            return Self::Full;
        }
        let seed = match std::env::var(SWEEP_SEED_VAR) {
            Ok(text) => parse_seed(&text)
                .unwrap_or_else(|| panic!("{SWEEP_SEED_VAR}={text:?} is not a number")),
            Err(_) => SeededRng::from_time().next_u64(),
        };
        say_loudly(&format!(
            "{test}: a sampled sweep, seed {seed:#x} (replay with \
             {SWEEP_SEED_VAR}={seed:#x}; {FULL_SWEEP_VAR}=1 runs it whole)"
        ));
        Self::Sample { seed }
    }

    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full)
    }

    /// `items` whole in a full sweep; in a sample, at most `at_most` of them
    /// chosen by the seed and `salt` (say, which file they belong to), in
    /// their order.
    pub fn sample<T>(&self, items: Vec<T>, at_most: usize, salt: u64) -> Vec<T> {
        let Self::Sample { seed } = *self else {
            return items;
        };
        if items.len() <= at_most {
            return items;
        }
        let mut rng = SeededRng::new(seed ^ salt);
        let mut keep = vec![false; items.len()];
        let mut kept = 0;
        while kept < at_most {
            let at = rng.below(items.len());
            if !keep[at] {
                keep[at] = true;
                kept += 1;
            }
        }
        items
            .into_iter()
            .zip(keep)
            .filter_map(|(item, keep)| keep.then_some(item))
            .collect()
    }

    /// `full` in a full sweep, `sampled` in a sample.
    pub fn count(&self, full: usize, sampled: usize) -> usize {
        if self.is_full() {
            full
        } else {
            sampled
        }
    }

    /// The random source of a part of the sweep: `full_seed`'s, as it always
    /// was, in a full sweep; in a sample, one mixed with the sample's seed.
    pub fn rng(&self, full_seed: u64) -> SeededRng {
        match *self {
            Self::Full => SeededRng::new(full_seed),
            Self::Sample { seed } => SeededRng::new(full_seed ^ seed),
        }
    }
}

/// How many cases a property test runs: `full` when the environment asks
/// for whole sweeps, `sampled` otherwise.
pub fn proptest_cases(full: u32, sampled: u32) -> u32 {
    if std::env::var(FULL_SWEEP_VAR).is_ok_and(|v| v == "1") {
        full
    } else {
        sampled
    }
}

fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => text.parse().ok(),
    }
}
