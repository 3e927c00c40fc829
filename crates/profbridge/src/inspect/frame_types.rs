//! Values by the type of the leaf frame, read from the reserved label
//! `profile.frame.types` (docs/mapping.md): comma-separated run-length
//! items `type` or `type*n` over the sample's locations, leaf first; an
//! empty item is an untyped frame; `%`, `,` and `*` in types are %-escaped.

use std::collections::HashMap;

use profbridge_pprof::{Profile, Sample};

pub const FRAME_TYPES_LABEL: &str = "profile.frame.types";
/// What samples without a (readable) frame type count as.
pub const UNKNOWN_FRAME_TYPE: &str = "(unknown)";

/// The summed value of the sample type at `index` per leaf frame type,
/// largest first. `pruned` is `original` after drop-frame pruning, which
/// only ever removes frames from the leaf end: its leaf is the frame at
/// depth `original − pruned` of the original stack, whose types the label
/// lists.
pub fn frame_type_values(
    original: &Profile,
    pruned: &Profile,
    index: usize,
) -> Vec<(String, i128)> {
    let mut totals: HashMap<String, i128> = HashMap::new();
    for (sample, pruned_sample) in original.sample.iter().zip(&pruned.sample) {
        let value = i128::from(sample.value.get(index).copied().unwrap_or(0));
        if value == 0 {
            continue;
        }
        let leaf_depth = sample
            .location_id
            .len()
            .saturating_sub(pruned_sample.location_id.len());
        let leaf_type = frame_types(original, sample)
            .and_then(|types| types.into_iter().nth(leaf_depth).flatten());
        *totals
            .entry(leaf_type.unwrap_or_else(|| UNKNOWN_FRAME_TYPE.to_owned()))
            .or_default() += value;
    }
    let mut values: Vec<(String, i128)> = totals.into_iter().collect();
    values.sort_by(|a, b| b.1.abs().cmp(&a.1.abs()).then_with(|| a.0.cmp(&b.0)));
    values
}

/// The type of each of the sample's locations, leaf first, when the sample
/// has exactly one `profile.frame.types` label, a string that decodes.
fn frame_types(profile: &Profile, sample: &Sample) -> Option<Vec<Option<String>>> {
    let text = |index: i64| {
        usize::try_from(index)
            .ok()
            .and_then(|i| profile.string_table.get(i))
    };
    let mut labels = sample
        .label
        .iter()
        .filter(|label| text(label.key).is_some_and(|key| key == FRAME_TYPES_LABEL));
    let label = labels.next()?;
    if labels.next().is_some() || label.str == 0 {
        return None;
    }
    decode(text(label.str)?, sample.location_id.len())
}

/// Decodes a label value for a stack of `depth` locations; `None` when it
/// does not parse or its runs do not add up to `depth`.
pub fn decode(value: &str, depth: usize) -> Option<Vec<Option<String>>> {
    let mut types: Vec<Option<String>> = Vec::with_capacity(depth);
    for item in value.split(',') {
        let (escaped_name, count) = match item.rsplit_once('*') {
            Some((name, count)) => (name, count.parse::<usize>().ok().filter(|&n| n > 0)?),
            None => (item, 1),
        };
        if types.len().checked_add(count)? > depth {
            return None;
        }
        let frame_type = if escaped_name.is_empty() {
            None
        } else {
            Some(unescape(escaped_name)?)
        };
        types.extend(std::iter::repeat_n(frame_type, count));
    }
    (types.len() == depth).then_some(types)
}

/// Undoes `%XX` escapes; `None` on a bad escape or a bare `*` or `,`.
fn unescape(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'%' => {
                let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = tail.get(2..)?;
            }
            b'*' | b',' => return None,
            _ => {
                bytes.push(byte);
                rest = tail;
            }
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_pprof::Label;

    fn some(names: &[Option<&str>]) -> Option<Vec<Option<String>>> {
        Some(names.iter().map(|name| name.map(str::to_owned)).collect())
    }

    #[test]
    fn runs_escapes_and_gaps_decode() {
        assert_eq!(
            decode("kernel*2,,native,a%2Cb%2Ac%25", 5),
            some(&[
                Some("kernel"),
                Some("kernel"),
                None,
                Some("native"),
                Some("a,b*c%")
            ])
        );
        assert_eq!(decode(",", 2), some(&[None, None]));
    }

    #[test]
    fn values_that_do_not_fit_the_stack_do_not_decode() {
        for (value, depth) in [
            ("kernel*2", 3),
            ("kernel*0", 0),
            ("kernel*x", 1),
            ("a%2", 1),
            ("a,b", 1),
        ] {
            assert_eq!(decode(value, depth), None, "{value} at depth {depth}");
        }
    }

    #[test]
    fn the_leaf_type_after_pruning_gets_the_value() {
        let string_table = ["", FRAME_TYPES_LABEL, "kernel,native*2", "bogus"]
            .map(str::to_owned)
            .to_vec();
        let label = |str| Label {
            key: 1,
            str,
            ..Label::default()
        };
        let sample = |labels: Vec<Label>, value| Sample {
            location_id: vec![1, 2, 3],
            value: vec![value],
            label: labels,
        };
        let original = Profile {
            string_table,
            sample: vec![
                sample(vec![label(2)], 5),
                sample(vec![label(2)], 7),
                sample(vec![], 1),
                sample(vec![label(3)], 2),
            ],
            ..Profile::default()
        };
        let mut pruned = original.clone();
        if let Some(second) = pruned.sample.get_mut(1) {
            second.location_id.remove(0);
        }
        assert_eq!(
            frame_type_values(&original, &pruned, 0),
            vec![
                ("native".to_owned(), 7),
                ("kernel".to_owned(), 5),
                (UNKNOWN_FRAME_TYPE.to_owned(), 3),
            ]
        );
    }
}
