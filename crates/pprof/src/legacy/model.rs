//! A profile under construction, shaped like google/pprof's in-memory
//! Profile (locations and mappings are shared objects that the clean-up
//! passes move around), and its conversion to the wire type.

use rustc_hash::FxHashMap;

use crate::{Function, Label, Line, Location, Mapping, Profile, Sample, StringInterner, ValueType};

#[derive(Debug, Default)]
pub(super) struct LegacyProfile {
    pub sample_types: Vec<(String, String)>,
    pub period_type: (String, String),
    pub period: i64,
    pub duration_nanos: i64,
    pub samples: Vec<LegacySample>,
    pub drop_frames: String,
    pub keep_frames: String,
    /// Every location ever created; `location_order` lists the live ones.
    pub locations: Vec<LegacyLocation>,
    pub location_order: Vec<usize>,
    location_by_address: FxHashMap<u64, usize>,
    pub functions: Vec<LegacyFunction>,
    pub function_order: Vec<usize>,
    /// Every mapping ever created; `mapping_order` is the profile's list.
    pub mappings: Vec<LegacyMapping>,
    pub mapping_order: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct LegacySample {
    pub locations: Vec<usize>,
    pub values: Vec<i64>,
    pub num_labels: Vec<(String, i64)>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct LegacyLocation {
    pub address: u64,
    pub mapping: Option<usize>,
    pub line: Option<LegacyLine>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct LegacyLine {
    pub function: usize,
    pub line: i64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct LegacyFunction {
    pub name: String,
    pub filename: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LegacyMapping {
    pub start: u64,
    pub limit: u64,
    pub offset: u64,
    pub file: String,
    pub build_id: String,
}

impl LegacyProfile {
    pub fn new(sample_types: &[(&str, &str)], period_type: (&str, &str), period: i64) -> Self {
        Self {
            sample_types: sample_types
                .iter()
                .map(|&(t, u)| (t.to_owned(), u.to_owned()))
                .collect(),
            period_type: (period_type.0.to_owned(), period_type.1.to_owned()),
            period,
            ..Self::default()
        }
    }

    /// The location at `address`, created on first use.
    pub fn location_at(&mut self, address: u64) -> usize {
        if let Some(&index) = self.location_by_address.get(&address) {
            return index;
        }
        let index = self.locations.len();
        self.locations.push(LegacyLocation {
            address,
            ..LegacyLocation::default()
        });
        self.location_order.push(index);
        self.location_by_address.insert(address, index);
        index
    }

    pub fn location_index_at(&self, address: u64) -> Option<usize> {
        self.location_by_address.get(&address).copied()
    }

    pub fn add_sample(&mut self, locations: Vec<usize>, values: Vec<i64>) {
        self.samples.push(LegacySample {
            locations,
            values,
            num_labels: Vec::new(),
        });
    }

    /// Locations for the addresses of a stack, created on first use;
    /// `adjust(i, address)` gives the address to use for frame `i`.
    pub fn stack(&mut self, addresses: &[u64], adjust: impl Fn(usize, u64) -> u64) -> Vec<usize> {
        addresses
            .iter()
            .enumerate()
            .map(|(i, &address)| self.location_at(adjust(i, address)))
            .collect()
    }

    pub fn add_function(&mut self, function: LegacyFunction) -> usize {
        self.functions.push(function);
        let index = self.functions.len() - 1;
        self.function_order.push(index);
        index
    }

    pub fn add_mapping(&mut self, mapping: LegacyMapping) -> usize {
        self.mappings.push(mapping);
        let index = self.mappings.len() - 1;
        self.mapping_order.push(index);
        index
    }

    pub fn mapping_mut(&mut self, index: usize) -> Option<&mut LegacyMapping> {
        self.mappings.get_mut(index)
    }

    /// Keeps the locations samples reach, numbered in order of first use.
    pub fn remap_location_ids(&mut self) {
        let mut seen = vec![false; self.locations.len()];
        let mut order = Vec::new();
        for sample in &self.samples {
            for &location in &sample.locations {
                if let Some(flag) = seen.get_mut(location) {
                    if !*flag {
                        *flag = true;
                        order.push(location);
                    }
                }
            }
        }
        self.location_order = order;
    }

    /// Keeps the functions live locations reach, in order of first use.
    pub fn remap_function_ids(&mut self) {
        let mut seen = vec![false; self.functions.len()];
        let mut order = Vec::new();
        for &location in &self.location_order {
            let line = self.locations.get(location).and_then(|l| l.line);
            if let Some(line) = line {
                if let Some(flag) = seen.get_mut(line.function) {
                    if !*flag {
                        *flag = true;
                        order.push(line.function);
                    }
                }
            }
        }
        self.function_order = order;
    }

    pub fn into_profile(self) -> Profile {
        let mut strings = StringInterner::new();
        let mut value_type = |(t, u): &(String, String)| ValueType {
            r#type: strings.intern(t),
            unit: strings.intern(u),
        };
        let sample_type = self.sample_types.iter().map(&mut value_type).collect();
        let period_type = Some(value_type(&self.period_type));

        let ids = |order: &[usize], len: usize| {
            let mut ids = vec![0u64; len];
            for (position, &index) in order.iter().enumerate() {
                if let Some(id) = ids.get_mut(index) {
                    *id = position as u64 + 1;
                }
            }
            ids
        };
        let location_ids = ids(&self.location_order, self.locations.len());
        let function_ids = ids(&self.function_order, self.functions.len());
        let mapping_ids = ids(&self.mapping_order, self.mappings.len());
        let id_of = |ids: &[u64], index: usize| ids.get(index).copied().unwrap_or(0);

        let sample = self
            .samples
            .iter()
            .map(|s| Sample {
                location_id: s
                    .locations
                    .iter()
                    .map(|&l| id_of(&location_ids, l))
                    .collect(),
                value: s.values.clone(),
                label: s
                    .num_labels
                    .iter()
                    .map(|(key, num)| Label {
                        key: strings.intern(key),
                        num: *num,
                        ..Label::default()
                    })
                    .collect(),
            })
            .collect();
        let mapping = self
            .mapping_order
            .iter()
            .filter_map(|&index| Some((index, self.mappings.get(index)?)))
            .map(|(index, m)| Mapping {
                id: id_of(&mapping_ids, index),
                memory_start: m.start,
                memory_limit: m.limit,
                file_offset: m.offset,
                filename: strings.intern(&m.file),
                build_id: strings.intern(&m.build_id),
                ..Mapping::default()
            })
            .collect();
        let location = self
            .location_order
            .iter()
            .filter_map(|&index| Some((index, self.locations.get(index)?)))
            .map(|(index, l)| Location {
                id: id_of(&location_ids, index),
                mapping_id: l.mapping.map_or(0, |m| id_of(&mapping_ids, m)),
                address: l.address,
                line: l
                    .line
                    .iter()
                    .map(|line| Line {
                        function_id: id_of(&function_ids, line.function),
                        line: line.line,
                        column: 0,
                    })
                    .collect(),
                is_folded: false,
            })
            .collect();
        let function = self
            .function_order
            .iter()
            .filter_map(|&index| Some((index, self.functions.get(index)?)))
            .map(|(index, f)| {
                let name = strings.intern(&f.name);
                Function {
                    id: id_of(&function_ids, index),
                    name,
                    system_name: name,
                    filename: strings.intern(&f.filename),
                    start_line: 0,
                }
            })
            .collect();
        let drop_frames = strings.intern(&self.drop_frames);
        let keep_frames = strings.intern(&self.keep_frames);
        Profile {
            sample_type,
            sample,
            mapping,
            location,
            function,
            drop_frames,
            keep_frames,
            duration_nanos: self.duration_nanos,
            period_type,
            period: self.period,
            string_table: strings.into_table(),
            ..Profile::default()
        }
    }
}
