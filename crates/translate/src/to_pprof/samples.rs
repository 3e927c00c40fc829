//! A pprof's samples before they are spelled out: each distinct stack's
//! location ids and each row's labels are held once, however many samples
//! (one per timestamp) share them. They become `Sample`s for callers that
//! want the profile itself, or protobuf bytes directly for those that only
//! write it out, which skips building a `Sample` per observation.

use profbridge_pprof::wire::{
    after_samples_len_bound, put_message, put_packed, put_varint, varint_len, write_after_samples,
    write_label, write_sample_types,
};
use profbridge_pprof::{Label, Profile as Pprof, Sample};

/// profile.proto's `Profile.sample` and `Sample.label` field numbers.
const PROFILE_SAMPLE: u8 = 2;
const SAMPLE_LOCATION_ID: u8 = 1;
const SAMPLE_VALUE: u8 = 2;
const SAMPLE_LABEL: u8 = 3;
const PROFILE_SAMPLE_TAG: u8 = PROFILE_SAMPLE << 3 | 2;
const SAMPLE_LABEL_TAG: u8 = SAMPLE_LABEL << 3 | 2;
const LABEL_KEY_TAG: u8 = 1 << 3;
const LABEL_NUM_TAG: u8 = 3 << 3;

#[derive(Debug, Clone, Default)]
pub(super) struct Samples {
    stacks: Vec<Vec<u64>>,
    rows: Vec<SampleRow>,
    /// The string index of `timestamp_ns`, when a row is timed.
    timestamp_key: i64,
}

/// One sample, or one per observation when timed; each observation's
/// sample carries the row's labels and a timestamp label.
#[derive(Debug, Clone)]
struct SampleRow {
    stack: usize,
    labels: Vec<Label>,
    values: Vec<i64>,
    observations: Vec<(u64, Vec<i64>)>,
}

impl Samples {
    /// Adds a distinct stack's location ids; returns its handle for
    /// [`Samples::push_row`].
    pub fn add_stack(&mut self, location_ids: Vec<u64>) -> usize {
        self.stacks.push(location_ids);
        self.stacks.len() - 1
    }

    pub fn set_timestamp_key(&mut self, key: i64) {
        self.timestamp_key = key;
    }

    pub fn push_row(
        &mut self,
        stack: usize,
        labels: Vec<Label>,
        values: Vec<i64>,
        observations: Vec<(u64, Vec<i64>)>,
    ) {
        self.rows.push(SampleRow {
            stack,
            labels,
            values,
            observations,
        });
    }

    pub fn count(&self) -> usize {
        self.rows
            .iter()
            .map(|row| row.observations.len().max(1))
            .sum()
    }

    fn location_ids(&self, stack: usize) -> &[u64] {
        self.stacks.get(stack).map_or(&[][..], Vec::as_slice)
    }

    fn timestamp_label(&self, timestamp: u64) -> Label {
        Label {
            key: self.timestamp_key,
            num: timestamp as i64,
            ..Label::default()
        }
    }

    /// The samples spelled out, in row order.
    pub fn into_samples(self) -> Vec<Sample> {
        let mut samples = Vec::with_capacity(self.count());
        for row in &self.rows {
            let location_id = self.location_ids(row.stack);
            if row.observations.is_empty() {
                samples.push(Sample {
                    location_id: location_id.to_vec(),
                    value: row.values.clone(),
                    label: row.labels.clone(),
                });
                continue;
            }
            for (timestamp, values) in &row.observations {
                let mut label = Vec::with_capacity(row.labels.len() + 1);
                label.extend_from_slice(&row.labels);
                label.push(self.timestamp_label(*timestamp));
                samples.push(Sample {
                    location_id: location_id.to_vec(),
                    value: values.clone(),
                    label,
                });
            }
        }
        samples
    }

    /// `head` (a profile without samples) with these samples, as protobuf:
    /// byte for byte what prost writes for the spelled-out profile.
    pub fn encode_with(&self, head: &Pprof) -> Vec<u8> {
        let stacks: Vec<Vec<u8>> = self
            .stacks
            .iter()
            .map(|ids| {
                let mut field = Vec::with_capacity(packed_len(ids.iter().copied()));
                put_packed(&mut field, SAMPLE_LOCATION_ID, ids.iter().copied());
                field
            })
            .collect();
        let labels: Vec<Vec<u8>> = self
            .rows
            .iter()
            .map(|row| {
                let mut fields = Vec::new();
                for label in &row.labels {
                    put_message(&mut fields, SAMPLE_LABEL, |out| write_label(label, out));
                }
                fields
            })
            .collect();

        let mut sample_bytes = 0;
        self.for_each_sample(&stacks, &labels, |parts| {
            sample_bytes += field_len(parts.len());
        });
        let mut out = Vec::with_capacity(
            (head.sample_type.len() * 24) + sample_bytes + after_samples_len_bound(head),
        );
        write_sample_types(head, &mut out);
        self.for_each_sample(&stacks, &labels, |parts| {
            out.push(PROFILE_SAMPLE_TAG);
            put_varint(&mut out, parts.len() as u64);
            out.extend_from_slice(parts.stack);
            put_packed(
                &mut out,
                SAMPLE_VALUE,
                parts.values.iter().map(|&v| v as u64),
            );
            out.extend_from_slice(parts.labels);
            if let Some(timestamp) = parts.timestamp {
                timestamp_label_into(self.timestamp_key, timestamp, &mut out);
            }
        });
        write_after_samples(head, &mut out);
        out
    }

    fn for_each_sample<'a>(
        &'a self,
        stacks: &'a [Vec<u8>],
        labels: &'a [Vec<u8>],
        mut visit: impl FnMut(SampleParts<'a>),
    ) {
        for (row, row_labels) in self.rows.iter().zip(labels) {
            let stack = stacks.get(row.stack).map_or(&[][..], Vec::as_slice);
            if row.observations.is_empty() {
                visit(SampleParts {
                    stack,
                    values: &row.values,
                    labels: row_labels,
                    timestamp: None,
                    timestamp_key: self.timestamp_key,
                });
                continue;
            }
            for (timestamp, values) in &row.observations {
                visit(SampleParts {
                    stack,
                    values,
                    labels: row_labels,
                    timestamp: Some(*timestamp),
                    timestamp_key: self.timestamp_key,
                });
            }
        }
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
        let timestamp = self
            .timestamp
            .map_or(0, |t| field_len(timestamp_label_len(self.timestamp_key, t)));
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

fn timestamp_label_len(key: i64, timestamp: u64) -> usize {
    let field = |v: u64| if v == 0 { 0 } else { 1 + varint_len(v) };
    field(key as u64) + field(timestamp)
}

fn timestamp_label_into(key: i64, timestamp: u64, out: &mut Vec<u8>) {
    out.push(SAMPLE_LABEL_TAG);
    put_varint(out, timestamp_label_len(key, timestamp) as u64);
    if key != 0 {
        out.push(LABEL_KEY_TAG);
        put_varint(out, key as u64);
    }
    if timestamp != 0 {
        out.push(LABEL_NUM_TAG);
        put_varint(out, timestamp);
    }
}
