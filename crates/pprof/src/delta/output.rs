//! The delta profile: the scrape with its rows' deltas as samples, and only
//! the table entries and strings those samples use.

use super::rows::Rows;
use crate::validate::ids::IdIndex;
use crate::{Profile, Sample};

/// `scrape` (valid) with one sample per row whose `deltas` are not all
/// zero, in order of first appearance; each keeps the locations and labels
/// of the row's first sample.
pub(super) fn delta_profile(
    mut scrape: Profile,
    rows: &Rows,
    deltas: &[i64],
    duration_nanos: i64,
) -> Profile {
    let mut samples = std::mem::take(&mut scrape.sample);
    let width = rows.width.max(1);
    for (values, &first) in deltas.chunks(width).zip(&rows.first_sample) {
        if values.iter().all(|&v| v == 0) {
            continue;
        }
        if let Some(sample) = samples.get_mut(first) {
            scrape.sample.push(Sample {
                location_id: std::mem::take(&mut sample.location_id),
                value: values.to_vec(),
                label: std::mem::take(&mut sample.label),
            });
        }
    }
    scrape.duration_nanos = duration_nanos;
    drop_unreferenced(&mut scrape);
    scrape
}

/// Removes the locations, functions, mappings and strings that nothing
/// refers to, keeping the order and ids of the rest.
fn drop_unreferenced(profile: &mut Profile) {
    let (Ok(locations), Ok(functions), Ok(mappings)) = (
        IdIndex::build(profile.location.iter().map(|l| l.id)),
        IdIndex::build(profile.function.iter().map(|f| f.id)),
        IdIndex::build(profile.mapping.iter().map(|m| m.id)),
    ) else {
        return;
    };
    let mut keep_location = vec![false; profile.location.len()];
    for id in profile.sample.iter().flat_map(|s| &s.location_id) {
        mark(&mut keep_location, locations.position(*id));
    }
    let mut keep_function = vec![false; profile.function.len()];
    let mut keep_mapping = vec![false; profile.mapping.len()];
    for (location, _) in profile
        .location
        .iter()
        .zip(&keep_location)
        .filter(|(_, &keep)| keep)
    {
        mark(&mut keep_mapping, mappings.position(location.mapping_id));
        for line in &location.line {
            mark(&mut keep_function, functions.position(line.function_id));
        }
    }
    retain_marked(&mut profile.location, &keep_location);
    retain_marked(&mut profile.function, &keep_function);
    retain_marked(&mut profile.mapping, &keep_mapping);
    drop_unreferenced_strings(profile);
}

fn mark(keep: &mut [bool], position: Option<usize>) {
    if let Some(slot) = position.and_then(|p| keep.get_mut(p)) {
        *slot = true;
    }
}

fn retain_marked<T>(entries: &mut Vec<T>, keep: &[bool]) {
    let mut marks = keep.iter();
    entries.retain(|_| marks.next().copied().unwrap_or(false));
}

fn drop_unreferenced_strings(profile: &mut Profile) {
    let mut used = vec![false; profile.string_table.len()];
    if let Some(first) = used.first_mut() {
        *first = true;
    }
    for_each_string_index(profile, |index| {
        mark(&mut used, usize::try_from(*index).ok());
    });
    let mut next = 0i64;
    let new_index: Vec<i64> = used
        .iter()
        .map(|&used| {
            let index = next;
            next += i64::from(used);
            index
        })
        .collect();
    for_each_string_index(profile, |index| {
        let new = usize::try_from(*index).ok().and_then(|i| new_index.get(i));
        *index = new.copied().unwrap_or(0);
    });
    retain_marked(&mut profile.string_table, &used);
}

/// Calls `visit` on every string index of `profile`.
fn for_each_string_index(profile: &mut Profile, mut visit: impl FnMut(&mut i64)) {
    let Profile {
        sample_type,
        sample,
        mapping,
        function,
        drop_frames,
        keep_frames,
        period_type,
        comment,
        default_sample_type,
        doc_url,
        ..
    } = profile;
    for value_type in sample_type.iter_mut().chain(period_type.as_mut()) {
        visit(&mut value_type.r#type);
        visit(&mut value_type.unit);
    }
    for label in sample.iter_mut().flat_map(|s| &mut s.label) {
        visit(&mut label.key);
        visit(&mut label.str);
        visit(&mut label.num_unit);
    }
    for mapping in mapping {
        visit(&mut mapping.filename);
        visit(&mut mapping.build_id);
    }
    for function in function {
        visit(&mut function.name);
        visit(&mut function.system_name);
        visit(&mut function.filename);
    }
    for index in comment
        .iter_mut()
        .chain([drop_frames, keep_frames, default_sample_type, doc_url])
    {
        visit(index);
    }
}
