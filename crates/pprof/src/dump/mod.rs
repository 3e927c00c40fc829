//! The text that google/pprof's `Profile.String()` prints, byte for byte
//! (times in UTC).

mod go_fmt;

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::strings::resolve;
use crate::validate::ids::IdIndex;
use crate::validate::{validate, ValidationError};
use crate::{Location, Mapping, Profile, Sample};

const LABEL_INDENT: &str = "                ";
const NEXT_LINE_INDENT: &str = "             ";

/// Dumps a profile as google/pprof's `Profile.String()` does.
pub fn dump(profile: &Profile) -> Result<String, ValidationError> {
    validate(profile)?;
    let mut dumper = Dumper {
        profile,
        functions: IdIndex::build(profile.function.iter().map(|f| f.id)).ok(),
        out: String::with_capacity(estimated_size(profile)),
    };
    dumper.header();
    dumper.samples();
    dumper.out.push_str("Locations\n");
    for location in &profile.location {
        dumper.location(location);
    }
    dumper.out.push_str("Mappings\n");
    for mapping in &profile.mapping {
        dumper.mapping(mapping);
    }
    Ok(dumper.out)
}

fn estimated_size(profile: &Profile) -> usize {
    128 + profile.sample.len() * 96 + profile.location.len() * 96 + profile.mapping.len() * 96
}

struct Dumper<'a> {
    profile: &'a Profile,
    functions: Option<IdIndex>,
    out: String,
}

impl<'a> Dumper<'a> {
    fn text(&self, index: i64) -> &'a str {
        resolve(&self.profile.string_table, index)
    }

    fn header(&mut self) {
        let p = self.profile;
        let mut header = String::new();
        for &comment in &p.comment {
            let _ = writeln!(header, "Comment: {}", self.text(comment));
        }
        if p.doc_url != 0 && !self.text(p.doc_url).is_empty() {
            let _ = writeln!(header, "Doc: {}", self.text(p.doc_url));
        }
        let (period_type, period_unit) = p
            .period_type
            .as_ref()
            .map_or(("", ""), |vt| (self.text(vt.r#type), self.text(vt.unit)));
        let _ = writeln!(header, "PeriodType: {period_type} {period_unit}");
        let _ = writeln!(header, "Period: {}", p.period);
        if p.time_nanos != 0 {
            let _ = writeln!(header, "Time: {}", go_fmt::time_utc(p.time_nanos));
        }
        if p.duration_nanos != 0 {
            let text = go_fmt::duration(p.duration_nanos);
            let _ = writeln!(header, "Duration: {}", go_fmt::truncate_chars(&text, 4));
        }
        header.push_str("Samples:\n");
        let default_type = self.text(p.default_sample_type);
        let mut types = String::new();
        for sample_type in &p.sample_type {
            let name = self.text(sample_type.r#type);
            let marker = if name == default_type { "[dflt]" } else { "" };
            let _ = write!(types, "{name}/{}{marker} ", self.text(sample_type.unit));
        }
        header.push_str(types.trim());
        header.push('\n');
        self.out.push_str(&header);
    }

    fn samples(&mut self) {
        for sample in &self.profile.sample {
            let mut line = String::new();
            for value in &sample.value {
                let _ = write!(line, " {value:>10}");
            }
            line.push_str(": ");
            for id in &sample.location_id {
                let _ = write!(line, "{id} ");
            }
            self.out.push_str(&line);
            self.out.push('\n');
            self.labels(sample);
        }
    }

    /// Labels as Go's decoder groups them: str labels, then num labels, each
    /// as sorted `key:[values]` items. Key-only labels are dropped.
    fn labels(&mut self, sample: &Sample) {
        let mut strs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut nums: BTreeMap<&str, NumValues> = BTreeMap::new();
        for label in &sample.label {
            let key = self.text(label.key);
            if label.str != 0 {
                strs.entry(key).or_default().push(self.text(label.str));
            } else if label.num != 0 || label.num_unit != 0 {
                let entry = nums.entry(key).or_default();
                entry.values.push(label.num);
                entry.units.push(self.text(label.num_unit));
                entry.any_unit |= label.num_unit != 0;
            }
        }
        if !strs.is_empty() {
            let items = strs
                .iter()
                .map(|(key, values)| format!("{key}:[{}]", values.join(" ")));
            self.push_label_line(items.collect());
        }
        if !nums.is_empty() {
            let items = nums.iter().map(|(key, nums)| {
                let values: Vec<String> = if nums.any_unit {
                    nums.values
                        .iter()
                        .zip(&nums.units)
                        .map(|(value, unit)| format!("{value} {unit}"))
                        .collect()
                } else {
                    nums.values.iter().map(i64::to_string).collect()
                };
                format!("{key}:[{}]", values.join(" "))
            });
            self.push_label_line(items.collect());
        }
    }

    fn push_label_line(&mut self, mut items: Vec<String>) {
        items.sort();
        self.out.push_str(LABEL_INDENT);
        self.out.push_str(&items.join(" "));
        self.out.push('\n');
    }

    fn location(&mut self, location: &Location) {
        let mut prefix = format!("{:>6}: {:#x} ", location.id, location.address);
        if location.mapping_id != 0 {
            let _ = write!(prefix, "M={} ", location.mapping_id);
        }
        if location.is_folded {
            prefix.push_str("[F] ");
        }
        if location.line.is_empty() {
            self.out.push_str(&prefix);
            self.out.push('\n');
            return;
        }
        let functions = self.functions.as_ref();
        for line in &location.line {
            let function = functions
                .and_then(|index| index.position(line.function_id))
                .and_then(|position| self.profile.function.get(position));
            let text = match function {
                None => "??".to_owned(),
                Some(function) => {
                    let name = self.text(function.name);
                    let system_name = self.text(function.system_name);
                    let mut text = format!(
                        "{name} {}:{}:{} s={}",
                        self.text(function.filename),
                        line.line,
                        line.column,
                        function.start_line
                    );
                    if name != system_name {
                        let _ = write!(text, "({system_name})");
                    }
                    text
                }
            };
            self.out.push_str(&prefix);
            self.out.push_str(&text);
            self.out.push('\n');
            prefix = NEXT_LINE_INDENT.to_owned();
        }
    }

    fn mapping(&mut self, mapping: &Mapping) {
        let mut flags = String::new();
        for (set, flag) in [
            (mapping.has_functions, "[FN]"),
            (mapping.has_filenames, "[FL]"),
            (mapping.has_line_numbers, "[LN]"),
            (mapping.has_inline_frames, "[IN]"),
        ] {
            if set {
                flags.push_str(flag);
            }
        }
        let _ = writeln!(
            self.out,
            "{}: {:#x}/{:#x}/{:#x} {} {} {}",
            mapping.id,
            mapping.memory_start,
            mapping.memory_limit,
            mapping.file_offset,
            self.text(mapping.filename),
            self.text(mapping.build_id),
            flags
        );
    }
}

#[derive(Default)]
struct NumValues<'a> {
    values: Vec<i64>,
    units: Vec<&'a str>,
    any_unit: bool,
}
