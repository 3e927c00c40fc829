//! `profile.frame.types`: the frame type of each location of a sample,
//! leaf first, as comma-separated run-length items `type` or `type*n`.
//! An empty item means no type; `,`, `*` and `%` inside a type are
//! %-escaped.

use std::borrow::Cow;

/// Encodes per-location types (leaf first) into `out` (cleared first),
/// `push_name` appending the escaped name of a type (see [`escape`]);
/// false when no frame is typed.
pub(crate) fn encode_into<T: Copy + PartialEq>(
    out: &mut String,
    types: impl IntoIterator<Item = Option<T>>,
    mut push_name: impl FnMut(T, &mut String),
) -> bool {
    out.clear();
    let mut typed = false;
    let mut run: Option<(Option<T>, usize)> = None;
    let mut flush = |out: &mut String, (frame_type, count): (Option<T>, usize)| {
        if let Some(id) = frame_type {
            push_name(id, out);
        }
        if count > 1 {
            out.push('*');
            push_count(out, count);
        }
    };
    for frame_type in types {
        typed |= frame_type.is_some();
        run = match run {
            Some((last, count)) if last == frame_type => Some((last, count + 1)),
            Some(done) => {
                flush(out, done);
                out.push(',');
                Some((frame_type, 1))
            }
            None => Some((frame_type, 1)),
        };
    }
    if let Some(done) = run {
        flush(out, done);
    }
    typed
}

/// A type's name as it appears in an item.
pub(crate) fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    push_escaped(&mut out, name);
    out
}

/// `count` in decimal, without the formatting machinery: stacks have
/// thousands of runs.
fn push_count(out: &mut String, count: usize) {
    let mut digits = [0u8; 20];
    let mut rest = count;
    let mut len = 0;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
        len += 1;
        if rest == 0 {
            break;
        }
    }
    let start = digits.len() - len;
    for &digit in digits.get(start..).unwrap_or_default() {
        out.push(char::from(digit));
    }
}

fn push_escaped(out: &mut String, name: &str) {
    if !name.bytes().any(|b| matches!(b, b'%' | b',' | b'*')) {
        out.push_str(name);
        return;
    }
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            ',' => out.push_str("%2C"),
            '*' => out.push_str("%2A"),
            _ => out.push(c),
        }
    }
}

/// Decodes a label value for a stack of `depth` locations; `None` when it
/// does not parse or its runs do not add up to `depth`. Types without
/// escapes borrow from `value`.
pub(crate) fn decode(value: &str, depth: usize) -> Option<Vec<Option<Cow<'_, str>>>> {
    let mut types = Vec::with_capacity(depth);
    for item in value.split(',') {
        let (name, count) = match item.rsplit_once('*') {
            Some((name, count)) => (name, count.parse::<usize>().ok().filter(|&n| n > 0)?),
            None => (item, 1),
        };
        if types.len() + count > depth {
            return None;
        }
        let frame_type = match name {
            "" => None,
            plain if !plain.contains('%') && !plain.contains(['*', ',']) => {
                Some(Cow::Borrowed(plain))
            }
            escaped => Some(Cow::Owned(unescape(escaped)?)),
        };
        types.extend(std::iter::repeat_n(frame_type, count));
    }
    (types.len() == depth).then_some(types)
}

/// Reverses `escape`; `None` on a stray `%`, `*` or `,`.
fn unescape(text: &str) -> Option<String> {
    unescape_except(text, &['*', ','])
}

/// Decodes `%XX` escapes; `None` on a bad escape or a `forbidden` char.
pub(crate) fn unescape_except(text: &str, forbidden: &[char]) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '%' {
            let code = rest.get(1..3)?;
            out.push(char::from(u8::from_str_radix(code, 16).ok()?));
            rest = rest.get(3..)?;
            continue;
        }
        if forbidden.contains(&c) {
            return None;
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..)?;
    }
    Some(out)
}

/// %-escapes `%`, `,` and `:` (for keys and units of `otel.attr_types`).
pub(crate) fn escape_key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            ',' => out.push_str("%2C"),
            ':' => out.push_str("%3A"),
            _ => out.push(c),
        }
    }
    out
}

/// Gives each sample of `profile` the `profile.frame.types` label that
/// `frame_type_of` (by location id) says, replacing one it had, so that
/// the OTLP translation gives its locations `profile.frame.type`. Samples
/// with no typed location get no label.
pub fn label_frame_types<'t>(
    profile: &mut profbridge_pprof::Profile,
    frame_type_of: impl Fn(u64) -> Option<&'t str>,
) {
    // Each distinct value in first-use order, and the samples that carry it.
    let mut values: Vec<(String, Vec<usize>)> = Vec::new();
    let mut position: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    let mut value = String::new();
    for (index, sample) in profile.sample.iter().enumerate() {
        let types = sample.location_id.iter().map(|&id| frame_type_of(id));
        if !encode_into(&mut value, types, |name, out| push_escaped(out, name)) {
            continue;
        }
        let at = *position.entry(value.clone()).or_insert_with(|| {
            values.push((value.clone(), Vec::new()));
            values.len() - 1
        });
        if let Some((_, samples)) = values.get_mut(at) {
            samples.push(index);
        }
    }
    let key_text = crate::keys::FRAME_TYPES_LABEL;
    let mut key = None;
    let mut found: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    for (index, text) in profile.string_table.iter().enumerate() {
        if key.is_none() && text == key_text {
            key = Some(index);
        }
        if position.contains_key(text) && !found.contains_key(text) {
            found.insert(text.clone(), index);
        }
    }
    let table = &mut profile.string_table;
    let mut append = |text: &str| {
        table.push(text.to_owned());
        table.len() - 1
    };
    let as_i64 = |index: usize| i64::try_from(index).unwrap_or(i64::MAX);
    let key = as_i64(key.unwrap_or_else(|| append(key_text)));
    for sample in &mut profile.sample {
        sample.label.retain(|label| label.key != key);
    }
    for (text, samples) in values {
        let str = as_i64(match found.get(&text) {
            Some(&index) => index,
            None => append(&text),
        });
        for index in samples {
            if let Some(sample) = profile.sample.get_mut(index) {
                sample.label.push(profbridge_pprof::Label {
                    key,
                    str,
                    ..profbridge_pprof::Label::default()
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_round_trip() {
        let types = [
            Some("kernel"),
            Some("kernel"),
            None,
            Some("native"),
            Some("a,b*c%"),
        ];
        let mut encoded = String::from("stale");
        let push_name = |name: &str, out: &mut String| out.push_str(&escape(name));
        assert!(encode_into(&mut encoded, types, push_name));
        assert_eq!(encoded, "kernel*2,,native,a%2Cb%2Ac%25");
        let decoded = decode(&encoded, 5).unwrap();
        let decoded: Vec<Option<&str>> = decoded.iter().map(|t| t.as_deref()).collect();
        assert_eq!(decoded, types);
        assert!(!encode_into(&mut encoded, [None::<&str>, None], push_name));
    }

    #[test]
    fn bad_values_do_not_decode() {
        assert_eq!(decode("kernel*2", 3), None);
        assert_eq!(decode("kernel*0", 0), None);
        assert_eq!(decode("kernel*x", 1), None);
        assert_eq!(decode("a%2", 1), None);
        assert_eq!(decode("kernel,native", 1), None);
        assert_eq!(decode(",", 2), Some(vec![None, None]));
        assert_eq!(
            decode("a%2Cb", 1),
            Some(vec![Some(Cow::Owned("a,b".to_owned()))])
        );
    }
}
