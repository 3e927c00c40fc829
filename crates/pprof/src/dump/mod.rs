//! The text that google/pprof's `Profile.String()` prints, byte for byte
//! (times in UTC). Go's strings are bytes, printed as they are (`%s`, `%v`
//! and concatenation; no `%q`), so the dump is bytes too: [`dump_bytes`]
//! writes strings that were not UTF-8 as the file held them.

mod go_fmt;

use std::collections::BTreeMap;
use std::io::Write;

use crate::codec::RawStrings;
use crate::strings::resolve;
use crate::validate::ids::IdIndex;
use crate::validate::{validate, ValidationError};
use crate::{Location, Mapping, Profile, Sample};

const LABEL_INDENT: &[u8] = b"                ";
const NEXT_LINE_INDENT: &[u8] = b"             ";

/// Dumps a profile as google/pprof's `Profile.String()` does.
pub fn dump(profile: &Profile) -> Result<String, ValidationError> {
    let bytes = dump_bytes(profile, &RawStrings::default())?;
    // The profile's strings are UTF-8, and so is everything written.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
}

/// [`dump`], with the original bytes of the strings `raw` kept (see
/// [`crate::decode_keeping_raw`]): what google/pprof prints for a file
/// whose strings are not all UTF-8.
pub fn dump_bytes(profile: &Profile, raw: &RawStrings) -> Result<Vec<u8>, ValidationError> {
    validate(profile)?;
    let mut dumper = Dumper {
        profile,
        originals: (!raw.is_empty()).then(|| raw.bytes_of(&profile.string_table)),
        functions: IdIndex::build(profile.function.iter().map(|f| f.id)).ok(),
        out: Vec::with_capacity(estimated_size(profile)),
    };
    dumper.header();
    dumper.samples();
    dumper.out.extend_from_slice(b"Locations\n");
    for location in &profile.location {
        dumper.location(location);
    }
    dumper.out.extend_from_slice(b"Mappings\n");
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
    /// Each string's bytes, when some were not UTF-8.
    originals: Option<Vec<&'a [u8]>>,
    functions: Option<IdIndex>,
    out: Vec<u8>,
}

/// `parts` joined by `separator`.
fn join(parts: &[&[u8]], separator: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(part);
    }
    out
}

/// `key:[values]`, as Go's `fmt.Sprintf("%s:%v", k, v)` prints a
/// `[]string`.
fn label_item(key: &[u8], values: &[&[u8]]) -> Vec<u8> {
    let mut item = key.to_vec();
    item.extend_from_slice(b":[");
    item.extend_from_slice(&join(values, b" "));
    item.push(b']');
    item
}

impl<'a> Dumper<'a> {
    fn text(&self, index: i64) -> &'a [u8] {
        match &self.originals {
            Some(bytes) => usize::try_from(index)
                .ok()
                .and_then(|i| bytes.get(i))
                .copied()
                .unwrap_or(b""),
            None => resolve(&self.profile.string_table, index).as_bytes(),
        }
    }

    fn header(&mut self) {
        let p = self.profile;
        let mut header = Vec::new();
        for &comment in &p.comment {
            header.extend_from_slice(b"Comment: ");
            header.extend_from_slice(self.text(comment));
            header.push(b'\n');
        }
        if p.doc_url != 0 && !self.text(p.doc_url).is_empty() {
            header.extend_from_slice(b"Doc: ");
            header.extend_from_slice(self.text(p.doc_url));
            header.push(b'\n');
        }
        let (period_type, period_unit): (&[u8], &[u8]) = p
            .period_type
            .as_ref()
            .map_or((b"", b""), |vt| (self.text(vt.r#type), self.text(vt.unit)));
        header.extend_from_slice(b"PeriodType: ");
        header.extend_from_slice(period_type);
        header.push(b' ');
        header.extend_from_slice(period_unit);
        header.push(b'\n');
        let _ = writeln!(header, "Period: {}", p.period);
        if p.time_nanos != 0 {
            let _ = writeln!(header, "Time: {}", go_fmt::time_utc(p.time_nanos));
        }
        if p.duration_nanos != 0 {
            let text = go_fmt::duration(p.duration_nanos);
            let _ = writeln!(header, "Duration: {}", go_fmt::truncate_chars(&text, 4));
        }
        header.extend_from_slice(b"Samples:\n");
        let default_type = self.text(p.default_sample_type);
        let mut types = Vec::new();
        for sample_type in &p.sample_type {
            let name = self.text(sample_type.r#type);
            types.extend_from_slice(name);
            types.push(b'/');
            types.extend_from_slice(self.text(sample_type.unit));
            if name == default_type {
                types.extend_from_slice(b"[dflt]");
            }
            types.push(b' ');
        }
        header.extend_from_slice(go_fmt::trim_space(&types));
        header.push(b'\n');
        self.out.extend_from_slice(&header);
    }

    fn samples(&mut self) {
        for sample in &self.profile.sample {
            let mut line = Vec::new();
            for value in &sample.value {
                let _ = write!(line, " {value:>10}");
            }
            line.extend_from_slice(b": ");
            for id in &sample.location_id {
                let _ = write!(line, "{id} ");
            }
            self.out.extend_from_slice(&line);
            self.out.push(b'\n');
            self.labels(sample);
        }
    }

    /// Labels as Go's decoder groups them: str labels, then num labels, each
    /// as sorted `key:[values]` items. Key-only labels are dropped.
    fn labels(&mut self, sample: &Sample) {
        let mut strs: BTreeMap<&[u8], Vec<&[u8]>> = BTreeMap::new();
        let mut nums: BTreeMap<&[u8], NumValues> = BTreeMap::new();
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
            let items = strs.iter().map(|(key, values)| label_item(key, values));
            self.push_label_line(items.collect());
        }
        if !nums.is_empty() {
            let items = nums.iter().map(|(key, nums)| {
                let values: Vec<Vec<u8>> = if nums.any_unit {
                    nums.values
                        .iter()
                        .zip(&nums.units)
                        .map(|(value, unit)| {
                            let mut text = format!("{value} ").into_bytes();
                            text.extend_from_slice(unit);
                            text
                        })
                        .collect()
                } else {
                    nums.values
                        .iter()
                        .map(|value| value.to_string().into_bytes())
                        .collect()
                };
                let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                label_item(key, &values)
            });
            self.push_label_line(items.collect());
        }
    }

    fn push_label_line(&mut self, mut items: Vec<Vec<u8>>) {
        items.sort();
        let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        self.out.extend_from_slice(LABEL_INDENT);
        self.out.extend_from_slice(&join(&items, b" "));
        self.out.push(b'\n');
    }

    fn location(&mut self, location: &Location) {
        let mut prefix = format!("{:>6}: {:#x} ", location.id, location.address).into_bytes();
        if location.mapping_id != 0 {
            let _ = write!(prefix, "M={} ", location.mapping_id);
        }
        if location.is_folded {
            prefix.extend_from_slice(b"[F] ");
        }
        if location.line.is_empty() {
            self.out.extend_from_slice(&prefix);
            self.out.push(b'\n');
            return;
        }
        let functions = self.functions.as_ref();
        for line in &location.line {
            let function = functions
                .and_then(|index| index.position(line.function_id))
                .and_then(|position| self.profile.function.get(position));
            let text = match function {
                None => b"??".to_vec(),
                Some(function) => {
                    let name = self.text(function.name);
                    let system_name = self.text(function.system_name);
                    let mut text = name.to_vec();
                    text.push(b' ');
                    text.extend_from_slice(self.text(function.filename));
                    let _ = write!(
                        text,
                        ":{}:{} s={}",
                        line.line, line.column, function.start_line
                    );
                    if name != system_name {
                        text.push(b'(');
                        text.extend_from_slice(system_name);
                        text.push(b')');
                    }
                    text
                }
            };
            self.out.extend_from_slice(&prefix);
            self.out.extend_from_slice(&text);
            self.out.push(b'\n');
            prefix = NEXT_LINE_INDENT.to_vec();
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
        let _ = write!(
            self.out,
            "{}: {:#x}/{:#x}/{:#x} ",
            mapping.id, mapping.memory_start, mapping.memory_limit, mapping.file_offset,
        );
        self.out.extend_from_slice(self.text(mapping.filename));
        self.out.push(b' ');
        self.out.extend_from_slice(self.text(mapping.build_id));
        self.out.push(b' ');
        self.out.extend_from_slice(flags.as_bytes());
        self.out.push(b'\n');
    }
}

#[derive(Default)]
struct NumValues<'a> {
    values: Vec<i64>,
    units: Vec<&'a [u8]>,
    any_unit: bool,
}
