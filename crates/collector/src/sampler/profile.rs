//! What the sampler recorded, as a pprof CPU profile: the sample types Go
//! writes (`samples`/`count`, `cpu`/`nanoseconds`), one location per
//! sampled address with its inlined functions, mappings from
//! /proc/self/maps, and the thread of each sample as a `thread` label.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use profbridge_pprof::{
    Function, Label, Line, Location, Mapping, Profile, Sample, StringInterner, ValueType,
};

use super::maps::MappedFile;

/// The sampler's own signal handler: it and the frame below it (the
/// kernel's signal trampoline) are not part of the stack sampled.
const SIGNAL_HANDLER: &str = "perf_signal_handler";

/// One stack the sampler recorded: its addresses (innermost first, the
/// sampler's own frames included), thread, and how often it was seen.
pub struct RecordedStack {
    pub addresses: Vec<u64>,
    pub thread: String,
    pub count: i64,
}

/// One function at an address, as the symbolizer found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Demangled, without Rust's hash suffix.
    pub name: String,
    /// As the binary has it (mangled).
    pub system_name: String,
    pub filename: String,
    pub line: i64,
}

/// When and how the samples were taken.
pub struct Timing {
    pub start: SystemTime,
    pub duration: Duration,
    /// Samples per CPU second.
    pub frequency: i64,
}

/// The profile of `stacks`; `symbolize` gives the functions at an address
/// (innermost inlined first), `mappings` the files they lie in.
pub fn build(
    stacks: &[RecordedStack],
    timing: &Timing,
    mappings: &[MappedFile],
    mut symbolize: impl FnMut(u64) -> Vec<Symbol>,
) -> Profile {
    let mut builder = Builder::new(mappings);
    let period = 1_000_000_000 / timing.frequency.max(1);
    for stack in stacks {
        let symbols: Vec<Vec<Symbol>> = stack
            .addresses
            .iter()
            .map(|&address| builder.symbols(address, &mut symbolize))
            .collect();
        let sampled_from = symbols
            .iter()
            .rposition(|at| at.iter().any(|symbol| symbol.name == SIGNAL_HANDLER))
            .map_or(0, |handler| handler + 2);
        let location_id = stack
            .addresses
            .iter()
            .zip(symbols)
            .skip(sampled_from)
            .map(|(&address, symbols)| builder.location(address, symbols))
            .collect();
        let thread = Label {
            key: builder.strings.intern("thread"),
            str: builder.strings.intern(&stack.thread),
            ..Label::default()
        };
        builder.profile.sample.push(Sample {
            location_id,
            value: vec![stack.count, stack.count.saturating_mul(period)],
            label: vec![thread],
        });
    }
    builder.finish(timing, period)
}

struct Builder<'a> {
    profile: Profile,
    strings: StringInterner,
    mappings: &'a [MappedFile],
    /// Mapping ids by index in `mappings`, once a location uses it.
    mapping_ids: HashMap<usize, u64>,
    symbols: HashMap<u64, Vec<Symbol>>,
    locations: HashMap<u64, u64>,
    functions: HashMap<(i64, i64, i64), u64>,
}

impl<'a> Builder<'a> {
    fn new(mappings: &'a [MappedFile]) -> Self {
        Self {
            profile: Profile::default(),
            strings: StringInterner::new(),
            mappings,
            mapping_ids: HashMap::new(),
            symbols: HashMap::new(),
            locations: HashMap::new(),
            functions: HashMap::new(),
        }
    }

    fn symbols(
        &mut self,
        address: u64,
        symbolize: &mut impl FnMut(u64) -> Vec<Symbol>,
    ) -> Vec<Symbol> {
        self.symbols
            .entry(address)
            .or_insert_with(|| symbolize(address))
            .clone()
    }

    fn location(&mut self, address: u64, symbols: Vec<Symbol>) -> u64 {
        if let Some(&id) = self.locations.get(&address) {
            return id;
        }
        let id = next_id(self.profile.location.len());
        let mapping_id = self.mapping(address);
        let line = symbols
            .iter()
            .map(|symbol| Line {
                function_id: self.function(symbol),
                line: symbol.line,
                ..Line::default()
            })
            .collect();
        self.profile.location.push(Location {
            id,
            mapping_id,
            address,
            line,
            ..Location::default()
        });
        self.locations.insert(address, id);
        id
    }

    fn function(&mut self, symbol: &Symbol) -> u64 {
        let key = (
            self.strings.intern(&symbol.name),
            self.strings.intern(&symbol.system_name),
            self.strings.intern(&symbol.filename),
        );
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = next_id(self.profile.function.len());
        self.profile.function.push(Function {
            id,
            name: key.0,
            system_name: key.1,
            filename: key.2,
            ..Function::default()
        });
        self.functions.insert(key, id);
        id
    }

    /// The id of the mapping `address` lies in; 0 when none holds it.
    fn mapping(&mut self, address: u64) -> u64 {
        let Some(index) = self
            .mappings
            .iter()
            .position(|file| file.start <= address && address < file.limit)
        else {
            return 0;
        };
        if let Some(&id) = self.mapping_ids.get(&index) {
            return id;
        }
        let Some(file) = self.mappings.get(index) else {
            return 0;
        };
        let id = next_id(self.profile.mapping.len());
        let filename = self.strings.intern(&file.path);
        self.profile.mapping.push(Mapping {
            id,
            memory_start: file.start,
            memory_limit: file.limit,
            file_offset: file.file_offset,
            filename,
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            has_inline_frames: true,
            ..Mapping::default()
        });
        self.mapping_ids.insert(index, id);
        id
    }

    fn finish(mut self, timing: &Timing, period: i64) -> Profile {
        let samples = ValueType {
            r#type: self.strings.intern("samples"),
            unit: self.strings.intern("count"),
        };
        let cpu = ValueType {
            r#type: self.strings.intern("cpu"),
            unit: self.strings.intern("nanoseconds"),
        };
        let mut profile = self.profile;
        profile.sample_type = vec![samples, cpu];
        profile.period_type = Some(cpu);
        profile.period = period;
        profile.time_nanos = timing
            .start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
            });
        profile.duration_nanos = i64::try_from(timing.duration.as_nanos()).unwrap_or(i64::MAX);
        profile.string_table = self.strings.into_table();
        profile
    }
}

/// pprof ids start at 1: the id of the entry after `len` others.
fn next_id(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX).saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbol(name: &str, line: i64) -> Symbol {
        Symbol {
            name: name.to_owned(),
            system_name: format!("_ZN{name}E"),
            filename: "src/lib.rs".to_owned(),
            line,
        }
    }

    /// Addresses 0x10.. lie in the binary; the handler at 0x1, the
    /// trampoline at 0x2, the sampler's own frame at 0x0.
    fn symbolize(address: u64) -> Vec<Symbol> {
        match address {
            0x0 => vec![symbol("backtrace::trace", 1)],
            0x1 => vec![symbol(SIGNAL_HANDLER, 2)],
            0x2 => vec![symbol("__restore_rt", 0)],
            0x10 => vec![symbol("decode_inner", 10), symbol("decode", 20)],
            0x11 => vec![symbol("main", 30)],
            _ => Vec::new(),
        }
    }

    #[test]
    fn stacks_become_go_style_cpu_samples_without_the_samplers_frames() {
        let stacks = [
            RecordedStack {
                addresses: vec![0x0, 0x1, 0x2, 0x10, 0x11],
                thread: "worker".to_owned(),
                count: 3,
            },
            RecordedStack {
                addresses: vec![0x0, 0x1, 0x2, 0x11, 0x99],
                thread: "main".to_owned(),
                count: 1,
            },
        ];
        let mappings = [MappedFile {
            start: 0x10,
            limit: 0x20,
            file_offset: 0x1000,
            path: "/usr/bin/profbridge".to_owned(),
        }];
        let timing = Timing {
            start: SystemTime::UNIX_EPOCH + Duration::from_secs(5),
            duration: Duration::from_secs(2),
            frequency: 100,
        };
        let profile = build(&stacks, &timing, &mappings, symbolize);
        let text = |index: i64| {
            profile
                .string_table
                .get(usize::try_from(index).unwrap())
                .unwrap()
                .as_str()
        };
        let types: Vec<_> = profile
            .sample_type
            .iter()
            .map(|value| (text(value.r#type), text(value.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        assert_eq!(profile.period, 10_000_000);
        assert_eq!(profile.time_nanos, 5_000_000_000);
        assert_eq!(profile.duration_nanos, 2_000_000_000);

        let address_of = |id: u64| {
            profile
                .location
                .iter()
                .find(|location| location.id == id)
                .unwrap()
                .address
        };
        let samples: Vec<_> = profile
            .sample
            .iter()
            .map(|sample| {
                let addresses: Vec<u64> = sample
                    .location_id
                    .iter()
                    .map(|&id| address_of(id))
                    .collect();
                let thread = text(sample.label[0].str);
                (addresses, sample.value.clone(), thread)
            })
            .collect();
        assert_eq!(
            samples,
            [
                (vec![0x10, 0x11], vec![3, 30_000_000], "worker"),
                (vec![0x11, 0x99], vec![1, 10_000_000], "main"),
            ]
        );
        // One location per address, the inlined function first.
        assert_eq!(profile.location.len(), 3);
        let inlined = profile.location.iter().find(|l| l.address == 0x10).unwrap();
        let names: Vec<_> = inlined
            .line
            .iter()
            .map(|line| {
                let function = &profile.function[usize::try_from(line.function_id - 1).unwrap()];
                (text(function.name), line.line)
            })
            .collect();
        assert_eq!(names, [("decode_inner", 10), ("decode", 20)]);
        // Mapped only where a mapping holds the address.
        assert_eq!(profile.mapping.len(), 1);
        assert_eq!(text(profile.mapping[0].filename), "/usr/bin/profbridge");
        let unmapped = profile.location.iter().find(|l| l.address == 0x99).unwrap();
        assert_eq!((unmapped.mapping_id, unmapped.line.len()), (0, 0));
        assert!(profbridge_pprof::validate(&profile).is_ok());
    }
}
