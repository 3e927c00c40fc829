//! A pprof's samples before they are spelled out: each distinct stack's
//! location ids and each row's labels are held once, however many samples
//! (one per timestamp) share them, and everything sits in a few shared
//! vectors. They become `Sample`s for callers that want the profile
//! itself, or protobuf bytes directly for those that only write it out,
//! which skips building a `Sample` per observation.

use std::ops::Range;

use profbridge_pprof::wire::{
    after_samples_len_bound, put_packed, put_varint, varint_len, write_after_samples, write_label,
    write_sample_types,
};
use profbridge_pprof::{Label, Profile as Pprof, Sample};

use super::rows::Rows;

/// profile.proto's `Profile.sample` and `Sample.label` field numbers.
const PROFILE_SAMPLE: u8 = 2;
const SAMPLE_LOCATION_ID: u8 = 1;
const SAMPLE_VALUE: u8 = 2;
const SAMPLE_LABEL: u8 = 3;
const PROFILE_SAMPLE_TAG: u8 = PROFILE_SAMPLE << 3 | 2;
const SAMPLE_LABEL_TAG: u8 = SAMPLE_LABEL << 3 | 2;

#[derive(Debug, Clone, Default)]
pub(super) struct Samples {
    /// Every distinct stack's location ids, back to back.
    location_ids: Vec<u64>,
    /// Each stack's range in `location_ids`.
    stacks: Vec<Range<usize>>,
    /// Every row's labels, back to back.
    labels: Vec<Label>,
    rows: Vec<SampleRow>,
    /// The rows' values and timestamps, as [`Rows`] holds them.
    values: Vec<i64>,
    timestamps: Vec<u64>,
    /// Values per sample.
    width: usize,
    /// The string index of `timestamp_ns`, when a row is timed.
    timestamp_key: i64,
}

/// One sample, or one per observation when timed; each observation's
/// sample carries the row's labels and a timestamp label.
#[derive(Debug, Clone)]
struct SampleRow {
    stack: usize,
    labels: Range<usize>,
    values: Range<usize>,
    timestamps: Range<usize>,
}

impl Samples {
    /// Samples for `rows`, in `spare`'s memory; they take over the rows'
    /// values and timestamps, and leave `rows` spare's emptied vectors for
    /// them. [`Samples::push_row`] then adds each row.
    pub fn for_rows(rows: &mut Rows, width: usize, spare: Self) -> Self {
        let mut samples = Self {
            width,
            timestamp_key: 0,
            ..spare
        };
        samples.location_ids.clear();
        samples.stacks.clear();
        samples.labels.clear();
        samples.rows.clear();
        samples.values.clear();
        samples.timestamps.clear();
        std::mem::swap(&mut samples.values, &mut rows.values);
        std::mem::swap(&mut samples.timestamps, &mut rows.timestamps);
        samples.rows.reserve(rows.rows.len());
        samples.labels.reserve(rows.rows.len() * 2);
        samples
    }

    /// The bytes these samples hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.location_ids.capacity() * size_of::<u64>()
            + self.stacks.capacity() * size_of::<Range<usize>>()
            + self.labels.capacity() * size_of::<Label>()
            + self.rows.capacity() * size_of::<SampleRow>()
            + self.values.capacity() * size_of::<i64>()
            + self.timestamps.capacity() * size_of::<u64>()
    }

    /// Adds a distinct stack's location ids; returns its handle for
    /// [`Samples::push_row`].
    pub fn add_stack(&mut self, location_ids: impl Iterator<Item = u64>) -> usize {
        let start = self.location_ids.len();
        self.location_ids.extend(location_ids);
        self.stacks.push(start..self.location_ids.len());
        self.stacks.len() - 1
    }

    /// Whether `timestamp_ns` is interned: never at index 0, which is "".
    pub fn has_timestamp_key(&self) -> bool {
        self.timestamp_key != 0
    }

    pub fn set_timestamp_key(&mut self, key: i64) {
        self.timestamp_key = key;
    }

    /// Where the next row's labels start, for [`Samples::push_row`].
    pub fn labels_end(&self) -> usize {
        self.labels.len()
    }

    pub fn push_label(&mut self, label: Label) {
        self.labels.push(label);
    }

    pub fn extend_labels(&mut self, labels: &[Label]) {
        self.labels.extend_from_slice(labels);
    }

    /// Adds a row of [`Rows`], whose labels are those pushed since
    /// `labels_start`.
    pub fn push_row(
        &mut self,
        stack: usize,
        labels_start: usize,
        values: Range<usize>,
        timestamps: Range<usize>,
    ) {
        self.rows.push(SampleRow {
            stack,
            labels: labels_start..self.labels.len(),
            values,
            timestamps,
        });
    }

    pub fn count(&self) -> usize {
        self.rows
            .iter()
            .map(|row| row.timestamps.len().max(1))
            .sum()
    }

    fn location_ids(&self, stack: usize) -> &[u64] {
        self.stacks
            .get(stack)
            .and_then(|range| self.location_ids.get(range.clone()))
            .unwrap_or_default()
    }

    fn row_labels(&self, row: &SampleRow) -> &[Label] {
        self.labels.get(row.labels.clone()).unwrap_or_default()
    }

    fn timestamp_label(&self, timestamp: u64) -> Label {
        Label {
            key: self.timestamp_key,
            num: timestamp as i64,
            ..Label::default()
        }
    }

    /// Each sample of `row`: its values and, when timed, its timestamp.
    fn samples_of<'a>(
        &'a self,
        row: &'a SampleRow,
    ) -> impl Iterator<Item = (&'a [i64], Option<u64>)> + 'a {
        let untimed = row.timestamps.is_empty().then(|| {
            let values = self.values.get(row.values.clone()).unwrap_or_default();
            (values, None)
        });
        let timed = row.timestamps.clone().enumerate().map(move |(k, t)| {
            let start = row.values.start + k * self.width;
            let values = self
                .values
                .get(start..start + self.width)
                .unwrap_or_default();
            (values, self.timestamps.get(t).copied())
        });
        untimed.into_iter().chain(timed)
    }

    /// The samples spelled out, in row order.
    pub fn into_samples(self) -> Vec<Sample> {
        let mut samples = Vec::with_capacity(self.count());
        for row in &self.rows {
            let location_id = self.location_ids(row.stack);
            let labels = self.row_labels(row);
            for (values, timestamp) in self.samples_of(row) {
                let mut label = Vec::with_capacity(labels.len() + 1);
                label.extend_from_slice(labels);
                label.extend(timestamp.map(|t| self.timestamp_label(t)));
                samples.push(Sample {
                    location_id: location_id.to_vec(),
                    value: values.to_vec(),
                    label,
                });
            }
        }
        samples
    }

    /// Replaces `out`'s contents with `head` (a profile without samples)
    /// with these samples, as protobuf: byte for byte what prost writes
    /// for the spelled-out profile. `fields` is working memory.
    pub fn encode_with(&self, head: &Pprof, out: &mut Vec<u8>, fields: &mut SampleFields) {
        let SampleFields { stacks, labels } = fields;
        // Location ids take about two bytes each.
        let stack_bytes = 2 * self.location_ids.len() + 4 * self.stacks.len();
        stacks.fill(self.stacks.iter(), stack_bytes, |range, out| {
            let ids = self.location_ids.get(range.clone()).unwrap_or_default();
            put_packed(out, SAMPLE_LOCATION_ID, ids.iter().copied());
        });
        let label_bytes = 8 * self.labels.len();
        labels.fill(self.rows.iter(), label_bytes, |row, out| {
            for label in self.row_labels(row) {
                put_label(out, label);
            }
        });
        let (stacks, labels) = (&*stacks, &*labels);

        let mut sample_bytes = 0;
        self.for_each_sample(stacks, labels, |parts| {
            sample_bytes += field_len(parts.len());
        });
        out.clear();
        out.reserve((head.sample_type.len() * 24) + sample_bytes + after_samples_len_bound(head));
        write_sample_types(head, out);
        self.for_each_sample(stacks, labels, |parts| {
            out.push(PROFILE_SAMPLE_TAG);
            put_varint(out, parts.len() as u64);
            out.extend_from_slice(parts.stack);
            put_packed(out, SAMPLE_VALUE, parts.values.iter().map(|&v| v as u64));
            out.extend_from_slice(parts.labels);
            if let Some(timestamp) = parts.timestamp {
                put_label(out, &self.timestamp_label(timestamp));
            }
        });
        write_after_samples(head, out);
    }

    fn for_each_sample<'a>(
        &'a self,
        stacks: &'a EncodedFields,
        labels: &'a EncodedFields,
        mut visit: impl FnMut(SampleParts<'a>),
    ) {
        for (r, row) in self.rows.iter().enumerate() {
            let stack = stacks.get(row.stack);
            let row_labels = labels.get(r);
            for (values, timestamp) in self.samples_of(row) {
                visit(SampleParts {
                    stack,
                    values,
                    labels: row_labels,
                    timestamp,
                    timestamp_key: self.timestamp_key,
                });
            }
        }
    }
}

/// What encoding samples writes once and copies into every sample: each
/// stack's location ids and each row's labels, as protobuf fields. Kept
/// between encodings for its memory.
#[derive(Debug, Default)]
pub(super) struct SampleFields {
    stacks: EncodedFields,
    labels: EncodedFields,
}

impl SampleFields {
    /// The bytes these fields hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.stacks.capacity_bytes() + self.labels.capacity_bytes()
    }
}

/// Protobuf fields written once per item (a stack, a row), back to back.
#[derive(Debug, Default)]
struct EncodedFields {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl EncodedFields {
    /// Replaces the fields with `write`'s for each of `items`; `capacity`:
    /// about how many bytes they take.
    fn fill<T>(
        &mut self,
        items: impl ExactSizeIterator<Item = T>,
        capacity: usize,
        mut write: impl FnMut(T, &mut Vec<u8>),
    ) {
        self.bytes.clear();
        self.ends.clear();
        self.bytes.reserve(capacity);
        self.ends.reserve(items.len());
        for item in items {
            write(item, &mut self.bytes);
            self.ends.push(self.bytes.len());
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    fn get(&self, item: usize) -> &[u8] {
        let start = match item.checked_sub(1) {
            Some(previous) => self.ends.get(previous).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(item).copied().unwrap_or(start);
        self.bytes.get(start..end).unwrap_or_default()
    }
}

/// The encoded pieces of one sample.
struct SampleParts<'a> {
    stack: &'a [u8],
    values: &'a [i64],
    labels: &'a [u8],
    timestamp: Option<u64>,
    timestamp_key: i64,
}

impl SampleParts<'_> {
    /// The length of the sample message's body.
    fn len(&self) -> usize {
        let values = packed_len(self.values.iter().map(|&v| v as u64));
        let timestamp = self.timestamp.map_or(0, |t| {
            field_len(label_len(&Label {
                key: self.timestamp_key,
                num: t as i64,
                ..Label::default()
            }))
        });
        self.stack.len() + values + self.labels.len() + timestamp
    }
}

/// Tag, length and body of a length-delimited field whose body is `len`.
fn field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

fn packed_len(values: impl Iterator<Item = u64>) -> usize {
    let body: usize = values.map(varint_len).sum();
    if body == 0 {
        0
    } else {
        field_len(body)
    }
}

/// The length of a label's body: at most four fields of eleven bytes, so
/// its length prefix is always one byte.
fn label_len(label: &Label) -> usize {
    let field = |v: i64| if v == 0 { 0 } else { 1 + varint_len(v as u64) };
    field(label.key) + field(label.str) + field(label.num) + field(label.num_unit)
}

/// A `Sample.label` field, its length worked out before its body.
fn put_label(out: &mut Vec<u8>, label: &Label) {
    out.push(SAMPLE_LABEL_TAG);
    out.push(label_len(label) as u8);
    write_label(label, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_fields_match_the_general_writer() {
        let big = i64::MAX;
        for label in [
            Label::default(),
            Label {
                key: 1,
                str: 2,
                ..Label::default()
            },
            Label {
                key: big,
                str: -1,
                num: i64::MIN,
                num_unit: -1,
            },
        ] {
            let mut fast = Vec::new();
            put_label(&mut fast, &label);
            let mut general = Vec::new();
            profbridge_pprof::wire::put_message(&mut general, SAMPLE_LABEL, |out| {
                write_label(&label, out)
            });
            assert_eq!(fast, general);
        }
    }
}
