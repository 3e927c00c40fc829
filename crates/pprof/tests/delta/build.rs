//! Scrapes built from rows of named frames, spelled differently each time
//! (ids, string order, sample order, rows split in two), and read back by
//! identity, independently of the library.

use std::collections::{BTreeMap, HashMap};

use profbridge_pprof::{Function, Label, Line, Location, Profile, Sample, ValueType};
use profbridge_testkit::SeededRng;

pub const HEAP: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];
pub const MUTEX: [(&str, &str); 2] = [("contentions", "count"), ("delay", "nanoseconds")];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tag {
    Str(String, String),
    Num(String, i64, String),
}

#[derive(Debug, Clone)]
pub struct Row {
    /// Function names, leaf first.
    pub stack: Vec<String>,
    pub tags: Vec<Tag>,
    pub values: Vec<i64>,
}

pub fn row(stack: &[&str], values: &[i64]) -> Row {
    Row {
        stack: stack.iter().map(|s| (*s).to_owned()).collect(),
        tags: Vec::new(),
        values: values.to_vec(),
    }
}

impl Row {
    pub fn str_tag(mut self, key: &str, value: &str) -> Self {
        self.tags.push(Tag::Str(key.to_owned(), value.to_owned()));
        self
    }

    pub fn num_tag(mut self, key: &str, value: i64, unit: &str) -> Self {
        self.tags
            .push(Tag::Num(key.to_owned(), value, unit.to_owned()));
        self
    }

    pub fn key(&self) -> Key {
        let mut tags = self.tags.clone();
        tags.sort();
        (self.stack.clone(), tags)
    }
}

/// Stack (leaf first) and sorted labels.
pub type Key = (Vec<String>, Vec<Tag>);

/// Each identity's summed values.
pub type ByKey = BTreeMap<Key, Vec<i64>>;

struct Strings(Vec<String>, HashMap<String, i64>);

impl Strings {
    fn index(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.1.get(s) {
            return i;
        }
        self.0.push(s.to_owned());
        let i = (self.0.len() - 1) as i64;
        self.1.insert(s.to_owned(), i);
        i
    }
}

/// A valid profile of `rows`. Seed 0 spells it plainly; any other seed
/// shuffles ids, strings and samples, reverses labels and splits rows.
pub fn scrape(types: &[(&str, &str)], rows: &[Row], time_nanos: i64, seed: u64) -> Profile {
    let mut rng = SeededRng::new(seed);
    let plain = seed == 0;
    let mut names: Vec<&str> = Vec::new();
    for name in rows.iter().flat_map(|r| &r.stack) {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    if !plain {
        shuffle(&mut names, &mut rng);
    }
    let id_base = if plain { 1 } else { 1 + rng.below(1000) as u64 };
    let mut strings = Strings(vec![String::new()], HashMap::new());
    strings.1.insert(String::new(), 0);
    let mut profile = Profile::default();
    for (i, name) in names.iter().enumerate() {
        let id = id_base + i as u64;
        profile.function.push(Function {
            id,
            name: strings.index(name),
            system_name: strings.index(name),
            filename: strings.index("main.go"),
            start_line: 1,
        });
        profile.location.push(Location {
            id: id + 7,
            line: vec![Line {
                function_id: id,
                line: name.len() as i64,
                column: 0,
            }],
            ..Location::default()
        });
    }
    let location_of: HashMap<&str, u64> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, id_base + i as u64 + 7))
        .collect();
    for &(kind, unit) in types {
        let value_type = ValueType {
            r#type: strings.index(kind),
            unit: strings.index(unit),
        };
        profile.sample_type.push(value_type);
    }
    for row in rows {
        let mut labels: Vec<Label> = row
            .tags
            .iter()
            .map(|tag| match tag {
                Tag::Str(k, v) => Label {
                    key: strings.index(k),
                    str: strings.index(v),
                    ..Label::default()
                },
                Tag::Num(k, n, u) => Label {
                    key: strings.index(k),
                    num: *n,
                    num_unit: strings.index(u),
                    ..Label::default()
                },
            })
            .collect();
        if !plain && rng.below(2) == 0 {
            labels.reverse();
        }
        let sample = Sample {
            location_id: row.stack.iter().map(|n| location_of[n.as_str()]).collect(),
            value: row.values.clone(),
            label: labels,
        };
        if !plain && rng.below(3) == 0 {
            let part: Vec<i64> = sample
                .value
                .iter()
                .map(|&v| {
                    if v > 0 {
                        (rng.next_u64() % (v as u64 + 1)) as i64
                    } else {
                        0
                    }
                })
                .collect();
            let mut first = sample.clone();
            let mut second = sample;
            for ((a, b), p) in first.value.iter_mut().zip(&mut second.value).zip(&part) {
                *a = *p;
                *b -= *p;
            }
            profile.sample.push(first);
            profile.sample.push(second);
        } else {
            profile.sample.push(sample);
        }
    }
    if !plain {
        shuffle(&mut profile.sample, &mut rng);
        shuffle(&mut profile.location, &mut rng);
        // Strings move too: every index is rewritten through the permutation.
        let mut order: Vec<usize> = (1..strings.0.len()).collect();
        shuffle(&mut order, &mut rng);
        let mut new_index = vec![0i64; strings.0.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as i64 + 1;
        }
        let table: Vec<String> = std::iter::once(String::new())
            .chain(order.iter().map(|&old| strings.0[old].clone()))
            .collect();
        rewrite_strings(&mut profile, |i| new_index[i as usize]);
        strings.0 = table;
    }
    profile.string_table = strings.0;
    profile.time_nanos = time_nanos;
    profile.period_type = profile.sample_type.last().cloned();
    profile.period = 1;
    profile
}

fn rewrite_strings(profile: &mut Profile, map: impl Fn(i64) -> i64) {
    for t in &mut profile.sample_type {
        t.r#type = map(t.r#type);
        t.unit = map(t.unit);
    }
    for f in &mut profile.function {
        f.name = map(f.name);
        f.system_name = map(f.system_name);
        f.filename = map(f.filename);
    }
    for l in profile.sample.iter_mut().flat_map(|s| &mut s.label) {
        l.key = map(l.key);
        l.str = map(l.str);
        l.num_unit = map(l.num_unit);
    }
}

fn shuffle<T>(items: &mut [T], rng: &mut SeededRng) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

/// Each identity's summed values: function names leaf first, and labels.
pub fn by_key(profile: &Profile) -> ByKey {
    let text = |i: i64| profile.string_table[i as usize].clone();
    let functions: HashMap<u64, &Function> = profile.function.iter().map(|f| (f.id, f)).collect();
    let locations: HashMap<u64, &Location> = profile.location.iter().map(|l| (l.id, l)).collect();
    let mut out = ByKey::new();
    for sample in &profile.sample {
        let stack: Vec<String> = sample
            .location_id
            .iter()
            .flat_map(|id| &locations[id].line)
            .map(|line| text(functions[&line.function_id].name))
            .collect();
        let mut tags: Vec<Tag> = sample
            .label
            .iter()
            .map(|l| {
                if l.str != 0 {
                    Tag::Str(text(l.key), text(l.str))
                } else {
                    Tag::Num(text(l.key), l.num, text(l.num_unit))
                }
            })
            .collect();
        tags.sort();
        let sums = out
            .entry((stack, tags))
            .or_insert_with(|| vec![0; sample.value.len()]);
        for (sum, v) in sums.iter_mut().zip(&sample.value) {
            *sum += v;
        }
    }
    out
}
