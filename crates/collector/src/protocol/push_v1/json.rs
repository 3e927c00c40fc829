//! `PushRequest` in Connect's JSON codec, which is protobuf's canonical
//! JSON mapping: field names in lowerCamelCase (`rawProfile`; the proto
//! names, `raw_profile`, are read too; `ID` is spelled so in both), bytes
//! as base64 (standard or URL-safe alphabet, padded or not), `null` for a
//! default value, unknown fields ignored.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::{LabelPair, PushRequest, RawProfileSeries, RawSample};

/// Why a JSON body is not a `PushRequest`.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("the JSON body is not a PushRequest: {0}")]
    Syntax(serde_json::Error),
    #[error("the JSON body is not a PushRequest: it is not an object")]
    NotAnObject,
    #[error("series {series}, sample {sample}: rawProfile is not base64: {error}")]
    Base64 {
        series: usize,
        sample: usize,
        error: base64::DecodeError,
    },
}

#[derive(Deserialize, Serialize, Default)]
struct Request {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    series: Option<Vec<Series>>,
}

#[derive(Deserialize, Serialize, Default)]
struct Series {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<Label>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    samples: Option<Vec<Sample>>,
}

#[derive(Deserialize, Serialize, Default)]
struct Label {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
}

#[derive(Deserialize, Serialize, Default)]
struct Sample {
    #[serde(
        default,
        rename = "rawProfile",
        alias = "raw_profile",
        skip_serializing_if = "Option::is_none"
    )]
    raw_profile: Option<String>,
    #[serde(default, rename = "ID", skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

const INDIFFERENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, INDIFFERENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, INDIFFERENT);

/// Reads a JSON `PushRequest`.
pub fn decode(body: &[u8]) -> Result<PushRequest, JsonError> {
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(JsonError::NotAnObject);
    }
    let request: Request = serde_json::from_slice(body).map_err(JsonError::Syntax)?;
    let mut series = Vec::new();
    for (s, json) in request.series.unwrap_or_default().into_iter().enumerate() {
        let labels = json
            .labels
            .unwrap_or_default()
            .into_iter()
            .map(|label| LabelPair {
                name: label.name.unwrap_or_default(),
                value: label.value.unwrap_or_default(),
            })
            .collect();
        let mut samples = Vec::new();
        for (i, sample) in json.samples.unwrap_or_default().into_iter().enumerate() {
            let text = sample.raw_profile.unwrap_or_default();
            let raw_profile = STANDARD
                .decode(&text)
                .or_else(|_| URL_SAFE.decode(&text))
                .map_err(|error| JsonError::Base64 {
                    series: s,
                    sample: i,
                    error,
                })?;
            samples.push(RawSample {
                raw_profile,
                id: sample.id.unwrap_or_default(),
            });
        }
        series.push(RawProfileSeries { labels, samples });
    }
    Ok(PushRequest { series })
}

/// Writes a `PushRequest` as JSON, as a Connect client's JSON codec does.
pub fn encode(request: &PushRequest) -> Vec<u8> {
    let json = Request {
        series: Some(
            request
                .series
                .iter()
                .map(|series| Series {
                    labels: Some(
                        series
                            .labels
                            .iter()
                            .map(|label| Label {
                                name: Some(label.name.clone()),
                                value: Some(label.value.clone()),
                            })
                            .collect(),
                    ),
                    samples: Some(
                        series
                            .samples
                            .iter()
                            .map(|sample| Sample {
                                raw_profile: Some(
                                    base64::engine::general_purpose::STANDARD
                                        .encode(&sample.raw_profile),
                                ),
                                id: Some(sample.id.clone()).filter(|id| !id.is_empty()),
                            })
                            .collect(),
                    ),
                })
                .collect(),
        ),
    };
    serde_json::to_vec(&json).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_proto_names_nulls_and_both_alphabets_are_read() {
        let body = br#"{"series":[{"labels":[{"name":"service_name","value":"app"},{"name":"x"}],
            "samples":[{"rawProfile":"+/8=","ID":"u-1"},{"raw_profile":"-_8"},{"rawProfile":null}],
            "annotations":[{"key":"k","value":"v"}]},{"labels":null}],"future":1}"#;
        let request = decode(body);
        let Ok(request) = request else {
            unreachable!("{request:?}");
        };
        assert_eq!(request.series.len(), 2);
        let first = &request.series[0];
        assert_eq!(
            first.labels,
            [
                LabelPair::new("service_name", "app"),
                LabelPair::new("x", "")
            ]
        );
        let raw: Vec<&[u8]> = first
            .samples
            .iter()
            .map(|s| s.raw_profile.as_slice())
            .collect();
        assert_eq!(raw, [&[0xfb, 0xff][..], &[0xfb, 0xff][..], &[][..]]);
        assert_eq!(first.samples[0].id, "u-1");
        assert!(request.series[1].samples.is_empty());
    }

    #[test]
    fn what_is_written_is_read_back() {
        let request = PushRequest {
            series: vec![RawProfileSeries {
                labels: vec![LabelPair::new("__name__", "process_cpu")],
                samples: vec![RawSample {
                    raw_profile: (0..=255).collect(),
                    id: String::new(),
                }],
            }],
        };
        assert_eq!(decode(&encode(&request)).ok(), Some(request));
    }

    #[test]
    fn broken_bodies_are_explained() {
        assert!(matches!(
            decode(b"{\"series\": 3}"),
            Err(JsonError::Syntax(_))
        ));
        assert!(matches!(decode(b" []"), Err(JsonError::NotAnObject)));
        let error = decode(br#"{"series":[{"samples":[{"rawProfile":"!!"}]}]}"#);
        assert!(
            error
                .as_ref()
                .is_err_and(|e| e.to_string().starts_with("series 0, sample 0: rawProfile")),
            "{error:?}"
        );
    }
}
