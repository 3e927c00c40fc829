//! A small metrics registry: counters are shared atomics handed out once
//! per label set, so hot paths add without locking; gauges (and counters
//! kept elsewhere) are closures evaluated when the registry is scraped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::recent_errors::RecentErrors;

/// A monotonically increasing count, cheap to clone and to add to.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn add(&self, amount: u64) {
        self.0.fetch_add(amount, Ordering::Relaxed);
    }

    /// Adds a `usize` count, saturating on the (theoretical) overflow.
    pub fn add_count(&self, amount: usize) {
        self.add(u64::try_from(amount).unwrap_or(u64::MAX));
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Labels as (name, value) pairs, in the order they are printed.
pub type Labels = Vec<(String, String)>;

/// Builds [`Labels`] from string pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

pub type GaugeFn = Box<dyn Fn() -> f64 + Send + Sync>;

pub(super) enum Value {
    Counter(Counter),
    /// Read at scrape time: a gauge, or a counter kept elsewhere.
    Read(GaugeFn),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Counter,
    Gauge,
}

pub(super) struct Family {
    pub help: String,
    pub kind: Kind,
    pub series: BTreeMap<Labels, Value>,
}

/// Every metric of the process, by name, and the components' recent
/// errors; shared through `Arc`.
#[derive(Default)]
pub struct Registry {
    families: Mutex<BTreeMap<String, Family>>,
    errors: RecentErrors,
}

impl Registry {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The counter `name{labels}`; asking again for the same name and
    /// labels returns the same counter. A name already used by a gauge
    /// gets a detached counter that is never printed.
    pub fn counter(&self, name: &str, help: &str, labels: Labels) -> Counter {
        let mut families = self.families();
        let family = families.entry(name.to_owned()).or_insert_with(|| Family {
            help: help.to_owned(),
            kind: Kind::Counter,
            series: BTreeMap::new(),
        });
        if family.kind != Kind::Counter {
            return Counter::default();
        }
        match family
            .series
            .entry(labels)
            .or_insert_with(|| Value::Counter(Counter::default()))
        {
            Value::Counter(counter) => counter.clone(),
            Value::Read(_) => Counter::default(),
        }
    }

    /// Serves `counter` (from [`Self::counter`]) under a second name too,
    /// such as the Collector's, so that both always agree.
    pub fn also_as(&self, name: &str, help: &str, labels: Labels, counter: &Counter) {
        let mut families = self.families();
        let family = families.entry(name.to_owned()).or_insert_with(|| Family {
            help: help.to_owned(),
            kind: Kind::Counter,
            series: BTreeMap::new(),
        });
        if family.kind == Kind::Counter {
            family
                .series
                .insert(labels, Value::Counter(counter.clone()));
        }
    }

    /// A counter whose total is kept elsewhere (CPU seconds, uptime) and
    /// read by calling `read` at scrape time.
    pub fn counter_fn(
        &self,
        name: &str,
        help: &str,
        labels: Labels,
        read: impl Fn() -> f64 + Send + Sync + 'static,
    ) {
        self.read_fn(Kind::Counter, name, help, labels, Box::new(read));
    }

    /// The gauge `name{labels}`, read by calling `read` at scrape time;
    /// registering the same name and labels again replaces the closure.
    /// A name already used by a counter is ignored.
    pub fn gauge_fn(
        &self,
        name: &str,
        help: &str,
        labels: Labels,
        read: impl Fn() -> f64 + Send + Sync + 'static,
    ) {
        self.read_fn(Kind::Gauge, name, help, labels, Box::new(read));
    }

    fn read_fn(&self, kind: Kind, name: &str, help: &str, labels: Labels, read: GaugeFn) {
        let mut families = self.families();
        let family = families.entry(name.to_owned()).or_insert_with(|| Family {
            help: help.to_owned(),
            kind,
            series: BTreeMap::new(),
        });
        let replaceable = match family.series.get(&labels) {
            None | Some(Value::Read(_)) => true,
            Some(Value::Counter(_)) => false,
        };
        if family.kind == kind && replaceable {
            family.series.insert(labels, Value::Read(read));
        }
    }

    /// The current value of every series of `name`, by labels.
    pub fn series(&self, name: &str) -> Vec<(Labels, f64)> {
        let families = self.families();
        let Some(family) = families.get(name) else {
            return Vec::new();
        };
        family
            .series
            .iter()
            .map(|(labels, value)| (labels.clone(), current(value)))
            .collect()
    }

    /// Every series that has the label `key="value"`: (name, labels,
    /// current value), by name.
    pub fn series_labelled(&self, key: &str, value: &str) -> Vec<(String, Labels, f64)> {
        let families = self.families();
        families
            .iter()
            .flat_map(|(name, family)| {
                family
                    .series
                    .iter()
                    .filter(|(labels, _)| labels.iter().any(|(k, v)| k == key && v == value))
                    .map(move |(labels, read)| (name.clone(), labels.clone(), current(read)))
            })
            .collect()
    }

    /// Removes every series whose labels include all of `pairs` (a
    /// scrape target that is gone), and families left empty.
    pub fn remove_labelled(&self, pairs: &[(&str, &str)]) {
        let has_all = |labels: &Labels| {
            pairs
                .iter()
                .all(|(key, value)| labels.iter().any(|(k, v)| k == key && v == value))
        };
        let mut families = self.families();
        for family in families.values_mut() {
            family.series.retain(|labels, _| !has_all(labels));
        }
        families.retain(|_, family| !family.series.is_empty());
    }

    /// The last few errors of each receiver and exporter.
    pub fn errors(&self) -> &RecentErrors {
        &self.errors
    }

    /// Every family by name, locked while the guard lives.
    pub(super) fn families(&self) -> MutexGuard<'_, BTreeMap<String, Family>> {
        self.families.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn current(value: &Value) -> f64 {
    match value {
        Value::Counter(counter) => counter.get() as f64,
        Value::Read(read) => read(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_labels_share_one_counter() {
        let registry = Registry::new();
        let a = registry.counter("c_total", "help", labels(&[("k", "v")]));
        let b = registry.counter("c_total", "help", labels(&[("k", "v")]));
        let other = registry.counter("c_total", "help", labels(&[("k", "w")]));
        a.add(2);
        b.add_count(3);
        assert_eq!(a.get(), 5);
        assert_eq!(other.get(), 0);
    }

    #[test]
    fn series_read_counters_and_gauges() {
        let registry = Registry::new();
        registry
            .counter("c_total", "help", labels(&[("k", "v")]))
            .add(3);
        registry.gauge_fn("g", "help", labels(&[("k", "w")]), || 2.5);
        assert_eq!(registry.series("c_total"), [(labels(&[("k", "v")]), 3.0)]);
        assert_eq!(registry.series("g"), [(labels(&[("k", "w")]), 2.5)]);
        assert!(registry.series("missing").is_empty());
        assert_eq!(
            registry.series_labelled("k", "w"),
            [("g".to_owned(), labels(&[("k", "w")]), 2.5)]
        );
    }

    #[test]
    fn series_with_every_given_label_are_removed() {
        let registry = Registry::new();
        let series = |target: &str, reason: &str| labels(&[("target", target), ("reason", reason)]);
        registry.counter("c_total", "help", series("a", "x")).add(1);
        registry.counter("c_total", "help", series("b", "x")).add(2);
        registry.gauge_fn("g", "help", labels(&[("target", "a")]), || 1.0);
        registry.remove_labelled(&[("target", "a")]);
        assert_eq!(registry.series("c_total"), [(series("b", "x"), 2.0)]);
        assert!(registry.series("g").is_empty());
        assert!(
            !registry.render().contains("# HELP g "),
            "an empty family goes"
        );
    }

    #[test]
    fn a_name_keeps_its_first_kind() {
        let registry = Registry::new();
        registry.gauge_fn("g", "help", Vec::new(), || 1.0);
        registry.counter("g", "help", Vec::new()).add(7);
        assert_eq!(registry.render(), "# HELP g help\n# TYPE g gauge\ng 1\n");
    }
}
