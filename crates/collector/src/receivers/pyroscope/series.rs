//! A `PushRequest` into one OTLP request: each series is a resource whose
//! attributes come from its labels, each raw sample one pprof profile under
//! it. A sample that cannot be read is left out and reported; the others
//! go on.

use profbridge_pprof::{
    gunzip, is_gzip, parse_any_keeping_raw, DecodeError, DecodeOptions, ParseError, Profile,
};
use profbridge_translate::otlp::{ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

use crate::protocol::push_v1::{
    LabelPair, PushRequest, LABEL_DELTA, LABEL_PROFILE_NAME, LABEL_SERVICE_NAME, LABEL_SESSION_ID,
};
use crate::receivers::from_pprof::string_attributes;
use crate::receivers::pprof_http::Failure;
use crate::telemetry::ReceiverMetrics;

pub use crate::protocol::pyroscope_attributes::{
    DELTA_ATTRIBUTE, PROFILE_NAME_ATTRIBUTE, SESSION_ID_ATTRIBUTE,
};
/// The resource attribute `pyroscope_spy` becomes, as `spyName` does.
pub const SPY_NAME_ATTRIBUTE: &str = "pyroscope.spy_name";

/// What became of a push besides its request: how many profiles it held
/// and why those left out were.
#[derive(Debug, Default)]
pub(super) struct Rejections {
    pub total: usize,
    /// Profiles left out before the intake.
    pub left_out: usize,
    /// The first [`MAX_REASONS`] reasons; `untold` counts the others.
    pub reasons: Vec<String>,
    untold: usize,
}

/// A push of millions of broken samples must not make millions of
/// messages: answers and logs give this many reasons, then a count.
const MAX_REASONS: usize = 10;

/// Label values in messages are cut to this many characters.
const MAX_NAME_CHARS: usize = 64;

impl Rejections {
    /// A profile left out, and why.
    pub fn note(&mut self, reason: String) {
        self.left_out = self.left_out.saturating_add(1);
        self.describe(reason);
    }

    /// A reason to give, for profiles counted elsewhere.
    pub fn describe(&mut self, reason: String) {
        if self.reasons.len() < MAX_REASONS {
            self.reasons.push(reason);
        } else {
            self.untold = self.untold.saturating_add(1);
        }
    }

    /// The reasons joined, and how many were not told.
    pub fn summary(&self) -> String {
        let told = self.reasons.join("; ");
        match self.untold {
            0 => told,
            untold => format!("{told}; and {untold} more"),
        }
    }
}

/// The resource attributes of a series' labels: `service_name` is
/// `service.name`, `__name__`, `__delta__`, `__session_id__` and
/// `pyroscope_spy` are `pyroscope.*` attributes, other labels keep their
/// names; other `__` labels (Pyroscope's internal ones) and labels with
/// empty values are dropped. A later label replaces an earlier one of the
/// same name.
pub(super) fn series_attributes(labels: &[LabelPair]) -> Vec<KeyValue> {
    let pairs = labels.iter().filter_map(|label| {
        let value = label.value.trim();
        if value.is_empty() {
            return None;
        }
        let key = match label.name.trim() {
            LABEL_SERVICE_NAME => "service.name",
            LABEL_PROFILE_NAME => PROFILE_NAME_ATTRIBUTE,
            LABEL_DELTA => DELTA_ATTRIBUTE,
            LABEL_SESSION_ID => SESSION_ID_ATTRIBUTE,
            "pyroscope_spy" => SPY_NAME_ATTRIBUTE,
            "" => return None,
            internal if internal.starts_with("__") => return None,
            name => name,
        };
        Some((key.to_owned(), value.to_owned()))
    });
    string_attributes(pairs)
}

/// The request a push makes, and what was left out of it. `max_unzipped`
/// bounds the raw profiles after gunzip, all of them together; a profile
/// without a time gets `received_at`. A push none of whose profiles can
/// be read is refused whole.
pub(super) fn push_request(
    push: &PushRequest,
    max_unzipped: usize,
    received_at: i64,
    metrics: &ReceiverMetrics,
) -> Result<(ExportProfilesServiceRequest, Rejections), Failure> {
    let mut rejections = Rejections::default();
    let mut room = max_unzipped;
    let mut profiles: Vec<(usize, Profile)> = Vec::new();
    for (s, series) in push.series.iter().enumerate() {
        for (i, sample) in series.samples.iter().enumerate() {
            rejections.total += 1;
            match read_profile(&sample.raw_profile, &mut room, metrics) {
                Ok(mut profile) => {
                    if profile.time_nanos == 0 {
                        profile.time_nanos = received_at;
                    }
                    profiles.push((s, profile));
                }
                Err(reason) => rejections.note(format!("{}: {reason}", place(series, s, i))),
            }
        }
    }
    if rejections.total == 0 {
        return Err(Failure::BadRequest(
            "no profiles received: the push has no series with samples".to_owned(),
        ));
    }
    let attributes: Vec<Vec<KeyValue>> = push
        .series
        .iter()
        .map(|series| series_attributes(&series.labels))
        .collect();
    let inputs: Vec<PprofInput<'_>> = profiles
        .iter()
        .filter_map(|(s, profile)| {
            Some(PprofInput {
                profile,
                resource_attributes: attributes.get(*s)?,
                scope: None,
                original_payload: None,
            })
        })
        .collect();
    let converted = pprof_to_otlp(&inputs, &ToOtlpOptions::default());
    for (index, error) in &converted.rejected {
        let at = profiles
            .get(*index)
            .map(|(s, _)| *s)
            .and_then(|s| Some((s, push.series.get(s)?)));
        let place = at.map_or_else(
            || format!("profile {index}"),
            |(s, series)| format!("series {s}{}", series_name(series)),
        );
        rejections.note(format!("{place}: {error}"));
    }
    if converted.rejected.len() == inputs.len() {
        return Err(Failure::BadRequest(format!(
            "none of the {} profiles can be read: {}",
            rejections.total,
            rejections.summary()
        )));
    }
    Ok((converted.request, rejections))
}

/// Why one raw profile of a push cannot be read.
#[derive(Debug, thiserror::Error)]
enum RawProfileError {
    #[error("the raw profiles decompress to more than max_request_body_size in all: {0}")]
    TooLarge(DecodeError),
    #[error("cannot gunzip the raw profile: {0}")]
    Gunzip(DecodeError),
    #[error("cannot read the profile: {0}")]
    Parse(ParseError),
}

/// A raw profile, gunzipped within `room` (which shrinks by what it took),
/// then read as every received pprof is: strings that are not UTF-8 are
/// replaced, and counted.
fn read_profile(
    raw: &[u8],
    room: &mut usize,
    metrics: &ReceiverMetrics,
) -> Result<Profile, RawProfileError> {
    let limits = DecodeOptions {
        max_input_bytes: raw.len().max(1),
        max_decompressed_bytes: *room,
    };
    let unzipped;
    let bytes = if is_gzip(raw) {
        unzipped = gunzip(raw, &limits).map_err(|error| match error {
            DecodeError::DecompressedTooLarge { .. } => RawProfileError::TooLarge(error),
            other => RawProfileError::Gunzip(other),
        })?;
        *room = room.saturating_sub(unzipped.len());
        unzipped.as_slice()
    } else {
        raw
    };
    let limits = DecodeOptions {
        max_input_bytes: bytes.len().max(1),
        max_decompressed_bytes: *room,
    };
    let (profile, _, replaced) =
        parse_any_keeping_raw(bytes, &limits).map_err(RawProfileError::Parse)?;
    metrics.strings_replaced(replaced.len());
    Ok(profile)
}

fn place(series: &crate::protocol::push_v1::RawProfileSeries, s: usize, i: usize) -> String {
    format!("series {s}{}, sample {i}", series_name(series))
}

/// ` (service_name=…, __name__=…)` for messages, when the labels say.
fn series_name(series: &crate::protocol::push_v1::RawProfileSeries) -> String {
    let named: Vec<String> = [LABEL_SERVICE_NAME, LABEL_PROFILE_NAME]
        .iter()
        .filter_map(|name| {
            series
                .labels
                .iter()
                .find(|label| label.name == *name)
                .map(|label| {
                    let value: String = label.value.chars().take(MAX_NAME_CHARS).collect();
                    format!("{name}={value:?}")
                })
        })
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" ({})", named.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use profbridge_translate::otlp::any_value;

    use super::*;
    use crate::protocol::push_v1::{RawProfileSeries, RawSample};

    fn texts(attributes: &[KeyValue]) -> Vec<(String, String)> {
        attributes
            .iter()
            .map(|kv| {
                let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(any_value::Value::StringValue(text)) => text.clone(),
                    other => format!("{other:?}"),
                };
                (kv.key.clone(), value)
            })
            .collect()
    }

    #[test]
    fn labels_become_resource_attributes() {
        let labels = [
            LabelPair::new("__name__", "process_cpu"),
            LabelPair::new("service_name", "checkout"),
            LabelPair::new("__delta__", "false"),
            LabelPair::new("__session_id__", "0123456789abcdef"),
            LabelPair::new("__period_type__", "cpu"),
            LabelPair::new("pyroscope_spy", "pyspy"),
            LabelPair::new("env", "prod"),
            LabelPair::new("process.runtime.name", "cpython"),
            LabelPair::new("empty", " "),
            LabelPair::new("env", "staging"),
        ];
        assert_eq!(
            texts(&series_attributes(&labels)),
            [
                ("pyroscope.profile_name", "process_cpu"),
                ("service.name", "checkout"),
                ("pyroscope.delta", "false"),
                ("pyroscope.session_id", "0123456789abcdef"),
                ("pyroscope.spy_name", "pyspy"),
                ("process.runtime.name", "cpython"),
                ("env", "staging"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn unreadable_samples_are_left_out_and_named() {
        let Ok(folded) = profbridge_pprof::parse_folded(b"main;work 3\n", ("samples", "count"))
        else {
            unreachable!("folded text parses");
        };
        let good = profbridge_pprof::encode(&folded, &profbridge_pprof::EncodeOptions::default());
        let push = PushRequest {
            series: vec![
                RawProfileSeries {
                    labels: vec![LabelPair::new("service_name", "good")],
                    samples: vec![RawSample {
                        raw_profile: good.clone(),
                        id: String::new(),
                    }],
                },
                RawProfileSeries {
                    labels: vec![LabelPair::new("service_name", "bad")],
                    samples: vec![RawSample {
                        raw_profile: b"\x1f\x8b\x08 not gzip".to_vec(),
                        id: String::new(),
                    }],
                },
            ],
        };
        let result = push_request(&push, 1 << 20, 42, &ReceiverMetrics::default());
        let Ok((request, rejections)) = result else {
            unreachable!("{result:?}");
        };
        assert_eq!(request.resource_profiles.len(), 1);
        assert_eq!(rejections.total, 2);
        assert_eq!(rejections.reasons.len(), 1);
        assert!(
            rejections.reasons[0].starts_with("series 1 (service_name=\"bad\"), sample 0: "),
            "{:?}",
            rejections.reasons
        );
        // Thousands of broken samples under a long name: the reasons are
        // few and short, the count exact.
        let mut many = push.clone();
        many.series[1].labels = vec![LabelPair::new("service_name", "n".repeat(100_000))];
        many.series[1].samples = vec![many.series[1].samples[0].clone(); 5000];
        let result = push_request(&many, 1 << 20, 42, &ReceiverMetrics::default());
        let Ok((_, rejections)) = result else {
            unreachable!("{result:?}");
        };
        assert_eq!(rejections.left_out, 5000);
        assert_eq!(rejections.reasons.len(), MAX_REASONS);
        let summary = rejections.summary();
        assert!(summary.ends_with("; and 4990 more"), "{summary}");
        assert!(summary.len() < 4000, "{} bytes", summary.len());
        let only_bad = PushRequest {
            series: vec![push.series[1].clone()],
        };
        assert!(push_request(&only_bad, 1 << 20, 42, &ReceiverMetrics::default()).is_err());
        assert!(push_request(
            &PushRequest::default(),
            1 << 20,
            42,
            &ReceiverMetrics::default()
        )
        .is_err_and(|e| e.message().contains("no profiles")));
        // A gzip bomb against the shared budget.
        let mut big = Vec::new();
        {
            use std::io::Write;
            let mut encoder = flate2::write::GzEncoder::new(&mut big, flate2::Compression::best());
            let _ = encoder.write_all(&vec![0u8; 4 << 20]);
            let _ = encoder.finish();
        }
        let bomb = PushRequest {
            series: vec![RawProfileSeries {
                labels: vec![],
                samples: vec![RawSample {
                    raw_profile: big,
                    id: String::new(),
                }],
            }],
        };
        assert!(
            push_request(&bomb, 1 << 20, 42, &ReceiverMetrics::default())
                .is_err_and(|e| e.message().contains("max_request_body_size"))
        );
    }
}
