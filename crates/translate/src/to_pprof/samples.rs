//! A pprof's samples before they are spelled out: each distinct stack's
//! location ids (as the protobuf field its samples carry) and each row's
//! labels are held once, however many samples (one per timestamp) share
//! them, and everything sits in a few shared vectors. They become
//! `Sample`s for callers that want the profile itself, or protobuf bytes
//! directly for those that only write it out, which skips building a
//! `Sample` per observation.

use profbridge_pprof::wire::field::{profile, sample};
use profbridge_pprof::wire::{
    put_packed, put_varint, tag, varint_len, write_after_locations, write_label, write_mappings,
    write_sample_types, LEN,
};
use profbridge_pprof::{Label, Profile as Pprof, Sample};

use super::rows::{index32, Rows, Span};

const SAMPLE_LOCATION_ID: u8 = sample::LOCATION_ID;
const SAMPLE_VALUE: u8 = sample::VALUE;
const PROFILE_SAMPLE_TAG: u8 = tag(profile::SAMPLE, LEN);
const SAMPLE_LABEL_TAG: u8 = tag(sample::LABEL, LEN);

#[derive(Debug, Clone, Default)]
pub(super) struct Samples {
    /// Every distinct stack's `Sample.location_id` field, encoded.
    stacks: EncodedFields,
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
    /// A handle of [`Samples::add_stack`].
    stack: u32,
    labels: Span,
    values: Span,
    timestamps: Span,
}

/// How much room samples need: for `stacks` distinct stacks whose
/// `Sample.location_id` fields take `stack_bytes` in all, and about
/// `labels` labels.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SamplesSize {
    pub stacks: usize,
    pub stack_bytes: usize,
    pub labels: usize,
}

impl Samples {
    /// Samples for `rows`, in `spare`'s memory; they take over the rows'
    /// values and timestamps, and leave `rows` spare's emptied vectors for
    /// them. [`Samples::push_row`] then adds each row.
    pub fn for_rows(rows: &mut Rows, width: usize, size: SamplesSize, spare: Self) -> Self {
        let mut samples = Self {
            width,
            timestamp_key: 0,
            ..spare
        };
        samples.stacks.clear();
        samples.labels.clear();
        samples.rows.clear();
        samples.values.clear();
        samples.timestamps.clear();
        std::mem::swap(&mut samples.values, &mut rows.values);
        std::mem::swap(&mut samples.timestamps, &mut rows.timestamps);
        samples.stacks.reserve(size.stacks, size.stack_bytes);
        samples.rows.reserve(rows.rows.len());
        samples.labels.reserve(size.labels);
        samples
    }

    /// Gives back the rows' values and timestamps that
    /// [`Samples::for_rows`] took, emptied, so that only one of `rows` and
    /// these samples keeps them.
    pub fn give_back_values(&mut self, rows: &mut Rows) {
        rows.keep_larger(
            std::mem::take(&mut self.values),
            std::mem::take(&mut self.timestamps),
        );
    }

    /// The bytes these samples hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.stacks.capacity_bytes()
            + self.labels.capacity() * size_of::<Label>()
            + self.rows.capacity() * size_of::<SampleRow>()
            + self.values.capacity() * size_of::<i64>()
            + self.timestamps.capacity() * size_of::<u64>()
    }

    /// Adds a distinct stack's location ids; returns its handle for
    /// [`Samples::push_row`].
    pub fn add_stack(&mut self, location_ids: impl Iterator<Item = u64>) -> u32 {
        self.stacks
            .push_with(|out| put_packed_once(out, SAMPLE_LOCATION_ID, location_ids))
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
    pub fn push_row(&mut self, stack: u32, labels_start: usize, values: Span, timestamps: Span) {
        self.rows.push(SampleRow {
            stack,
            labels: Span::new(labels_start..self.labels.len()),
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

    /// The location ids of stack `stack` into `ids` (emptied first).
    fn location_ids(&self, stack: u32, ids: &mut Vec<u64>) {
        ids.clear();
        // The field's tag, its length, then the ids.
        let mut field = self.stacks.get(stack as usize).get(1..).unwrap_or_default();
        if read_varint(&mut field).is_some() {
            while let Some(id) = read_varint(&mut field) {
                ids.push(id);
            }
        }
    }

    fn row_labels(&self, row: &SampleRow) -> &[Label] {
        self.labels.get(row.labels.range()).unwrap_or_default()
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
            let values = self.values.get(row.values.range()).unwrap_or_default();
            (values, None)
        });
        let timed = row.timestamps.range().enumerate().map(move |(k, t)| {
            let start = row.values.start() + k * self.width;
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
        let mut location_id = Vec::new();
        for row in &self.rows {
            self.location_ids(row.stack, &mut location_id);
            let labels = self.row_labels(row);
            for (values, timestamp) in self.samples_of(row) {
                let mut label = Vec::with_capacity(labels.len() + 1);
                label.extend_from_slice(labels);
                label.extend(timestamp.map(|t| self.timestamp_label(t)));
                samples.push(Sample {
                    location_id: location_id.clone(),
                    value: values.to_vec(),
                    label,
                });
            }
        }
        samples
    }

    /// Replaces `out`'s contents with `head` (a profile without samples
    /// or locations) with `locations` (its `Profile.location` fields) and
    /// these samples, as protobuf: byte for byte what prost writes for the
    /// spelled-out profile. `fields` is working memory.
    pub fn encode_with(
        &self,
        head: &Pprof,
        locations: &[u8],
        out: &mut Vec<u8>,
        fields: &mut SampleFields,
    ) {
        let SampleFields { labels } = fields;
        let label_bytes = self.labels.iter().map(|l| 2 + label_len(l)).sum();
        labels.fill(self.rows.iter(), label_bytes, |row, out| {
            for label in self.row_labels(row) {
                put_label(out, label);
            }
        });
        let (stacks, labels) = (&self.stacks, &*labels);

        let mut sample_bytes = 0;
        self.for_each_sample(stacks, labels, |parts| {
            sample_bytes += field_len(parts.len());
        });
        out.clear();
        // `head` has no samples or locations: its length is that of
        // everything else.
        let rest = prost::Message::encoded_len(head) + locations.len();
        out.reserve(sample_bytes + rest);
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
        write_mappings(head, out);
        out.extend_from_slice(locations);
        write_after_locations(head, out);
    }

    fn for_each_sample<'a>(
        &'a self,
        stacks: &'a EncodedFields,
        labels: &'a EncodedFields,
        mut visit: impl FnMut(SampleParts<'a>),
    ) {
        for (r, row) in self.rows.iter().enumerate() {
            let stack = stacks.get(row.stack as usize);
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

/// What encoding samples writes once and copies into every sample of a
/// row: its labels, as protobuf fields. Kept between encodings for its
/// memory.
#[derive(Debug, Default)]
pub(super) struct SampleFields {
    labels: EncodedFields,
}

impl SampleFields {
    /// The bytes these fields hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.labels.capacity_bytes()
    }
}

/// Protobuf fields written once per item (a stack, a row), back to back.
#[derive(Debug, Clone, Default)]
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
        self.clear();
        self.reserve(items.len(), capacity);
        for item in items {
            write(item, &mut self.bytes);
            self.ends.push(self.bytes.len());
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Room for `items` more items of `bytes` in all.
    fn reserve(&mut self, items: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        self.ends.reserve(items);
    }

    /// Adds an item, `write`'s fields; returns its index.
    fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> u32 {
        write(&mut self.bytes);
        self.ends.push(self.bytes.len());
        index32(self.ends.len() - 1)
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

/// What `put_packed` writes (nothing when there are no values), in one pass
/// over the values: their length prefix is made room for once they are
/// written, which moves them only when it takes more than a byte.
fn put_packed_once(out: &mut Vec<u8>, field: u8, values: impl Iterator<Item = u64>) {
    let start = out.len();
    out.push(tag(field, LEN));
    out.push(0);
    let body_start = out.len();
    for value in values {
        put_varint(out, value);
    }
    let len = out.len() - body_start;
    if len == 0 {
        out.truncate(start);
        return;
    }
    let prefix_len = varint_len(len as u64);
    if prefix_len > 1 {
        out.resize(out.len() + prefix_len - 1, 0);
        out.copy_within(body_start..body_start + len, body_start + prefix_len - 1);
    }
    let mut rest = len;
    let prefix = out.get_mut(start + 1..start + 1 + prefix_len);
    for (i, byte) in prefix.into_iter().flatten().enumerate() {
        let more = if i + 1 < prefix_len { 0x80 } else { 0 };
        *byte = (rest & 0x7f) as u8 | more;
        rest >>= 7;
    }
}

/// The varint `bytes` start with, which it moves past; `None` at the end
/// (or when it is cut short).
fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            *bytes = bytes.get(i + 1..).unwrap_or_default();
            return Some(value);
        }
    }
    None
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
    fn stacks_are_packed_as_the_general_writer_packs_them_and_read_back() {
        // Bodies around each length prefix size, with ids of 1 to 10 bytes.
        for count in [0, 1, 2, 63, 64, 127, 128, 129, 8000, 20000] {
            let ids: Vec<u64> = (0..count)
                .map(|i: u64| match i % 7 {
                    0 => u64::MAX,
                    1 => 1 << 35,
                    _ => (i * 7919) % 40000,
                })
                .collect();
            let mut fast = vec![9];
            put_packed_once(&mut fast, SAMPLE_LOCATION_ID, ids.iter().copied());
            let mut general = vec![9];
            put_packed(&mut general, SAMPLE_LOCATION_ID, ids.iter().copied());
            assert_eq!(fast, general, "{count} ids");

            let mut samples = Samples::default();
            samples.add_stack([5].into_iter());
            let stack = samples.add_stack(ids.iter().copied());
            let mut read = vec![1];
            samples.location_ids(stack, &mut read);
            assert_eq!(read, ids, "{count} ids");
        }
    }

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
            profbridge_pprof::wire::put_message(&mut general, sample::LABEL, |out| {
                write_label(&label, out)
            });
            assert_eq!(fast, general);
        }
    }
}
