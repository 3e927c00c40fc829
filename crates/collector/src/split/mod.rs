//! Splits a request into pieces within a sample and a byte limit.
//!
//! The request is walked resource by resource and scope by scope. Within a
//! scope it goes row by row: row `i` is sample `i` of every profile of the
//! scope that has one, so that the profiles a pprof's sample types became
//! stay together and each piece converts back into a pprof with all of
//! them. Rows are packed into a piece while it stays within the limits; a
//! row too big for a piece of its own is placed sample by sample, and a
//! single sample too big for the limits goes alone.
//!
//! Each piece has its own pruned dictionary (prune.rs): only the entries
//! its samples, profiles, scopes and resources reference. The piece's size
//! is tracked exactly for dictionary entries and samples, and bounded for
//! the frames of its resources, scopes and profiles, so that a piece of
//! several samples never passes the byte limit.
//!
//! With `whole_profiles`, a unit is a profile with all its samples instead
//! of a row: no profile is spread over pieces, and one too big for the
//! limits makes a piece of its own (the Kafka exporter's messages).
//!
//! A profile split over several pieces keeps its fields in each of them;
//! only its `original_payload` (and format) goes with the first piece, so
//! that it is not duplicated.

use prost::Message;

use profbridge_translate::otlp::{
    ExportProfilesServiceRequest, Profile, ProfilesDictionary, ResourceProfiles, Sample,
    ScopeProfiles,
};

mod prune;

use prune::{framed, Pruner, FRAME_BOUND};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub samples: Option<usize>,
    pub bytes: Option<usize>,
    /// Keep each profile whole: a profile is never spread over pieces, and
    /// one too big for the limits goes alone.
    pub whole_profiles: bool,
}

impl Limits {
    pub(crate) fn exceeded_by(&self, samples: usize, bytes: usize) -> bool {
        self.samples.is_some_and(|max| samples > max) || self.bytes.is_some_and(|max| bytes > max)
    }
}

/// Pieces of `request`, in its order, each within `limits` unless it holds
/// a single sample.
pub(crate) fn split(
    request: &ExportProfilesServiceRequest,
    limits: Limits,
) -> Vec<ExportProfilesServiceRequest> {
    let empty = ProfilesDictionary::default();
    let dictionary = request.dictionary.as_ref().unwrap_or(&empty);
    let mut packer = Packer {
        source: request,
        limits,
        pruner: Pruner::new(dictionary),
        piece: Piece::default(),
        payload_given: Vec::new(),
        done: Vec::new(),
    };
    packer.walk();
    packer.finish_piece();
    packer.done
}

/// A part of the request placed as a whole: samples at the same position
/// of several profiles of one scope, one sample, or a resource, scope or
/// profile that holds no samples.
struct Unit {
    resource: usize,
    scope: Option<usize>,
    /// (profile, sample); no sample for a profile without samples.
    entries: Vec<(usize, Option<usize>)>,
}

/// The piece being filled.
#[derive(Default)]
struct Piece {
    resources: Vec<ResourceProfiles>,
    open_resource: Option<usize>,
    open_scope: Option<(usize, usize)>,
    /// Profiles of the open scope with their source index, and where each
    /// source profile sits among them.
    profiles: Vec<(usize, Profile)>,
    positions: Vec<Option<usize>>,
    samples: usize,
    /// Encoded bytes of everything but the dictionary (frames bounded).
    bytes: usize,
    units: usize,
}

/// What a unit adds to the piece, renumbered for its dictionary.
#[derive(Default)]
struct Staged {
    resource: Option<ResourceProfiles>,
    scope: Option<ScopeProfiles>,
    profiles: Vec<(usize, Profile)>,
    samples: Vec<(usize, Sample)>,
    bytes: usize,
}

struct Packer<'a> {
    source: &'a ExportProfilesServiceRequest,
    limits: Limits,
    pruner: Pruner<'a>,
    piece: Piece,
    /// Per profile of the scope being walked: whether a piece already has
    /// its original payload.
    payload_given: Vec<bool>,
    done: Vec<ExportProfilesServiceRequest>,
}

impl Packer<'_> {
    fn walk(&mut self) {
        let source = self.source;
        for (r, resource) in source.resource_profiles.iter().enumerate() {
            if resource.scope_profiles.is_empty() {
                self.place(Unit {
                    resource: r,
                    scope: None,
                    entries: Vec::new(),
                });
            }
            for (s, scope) in resource.scope_profiles.iter().enumerate() {
                self.walk_scope(r, s, &scope.profiles);
            }
        }
    }

    fn walk_scope(&mut self, r: usize, s: usize, profiles: &[Profile]) {
        self.payload_given = vec![false; profiles.len()];
        let unit = |entries| Unit {
            resource: r,
            scope: Some(s),
            entries,
        };
        if profiles.is_empty() {
            self.place(unit(Vec::new()));
        }
        for (p, _) in profiles
            .iter()
            .enumerate()
            .filter(|(_, p)| p.samples.is_empty())
        {
            self.place(unit(vec![(p, None)]));
        }
        let length = |p: &usize| profiles.get(*p).map_or(0, |profile| profile.samples.len());
        if self.limits.whole_profiles {
            for p in (0..profiles.len()).filter(|p| length(p) > 0) {
                self.place(unit((0..length(&p)).map(|i| (p, Some(i))).collect()));
            }
            return;
        }
        let mut active: Vec<usize> = (0..profiles.len()).filter(|p| length(p) > 0).collect();
        let mut row = 0;
        while !active.is_empty() {
            self.place(unit(active.iter().map(|&p| (p, Some(row))).collect()));
            row += 1;
            active.retain(|p| length(p) > row);
        }
    }

    /// Adds `unit` to the piece, or to a new one when it does not fit; a
    /// unit too big for a piece of its own is placed entry by entry, and a
    /// single entry too big goes alone.
    fn place(&mut self, unit: Unit) {
        if self.try_add(&unit, false) {
            return;
        }
        let too_many = self
            .limits
            .samples
            .is_some_and(|max| unit.entries.len() > max);
        if self.piece.units > 0 && !too_many {
            self.finish_piece();
            if self.try_add(&unit, false) {
                return;
            }
        }
        if self.limits.whole_profiles {
            self.try_add(&unit, true);
            self.finish_piece();
        } else if unit.entries.len() > 1 {
            for entry in unit.entries {
                self.place(Unit {
                    resource: unit.resource,
                    scope: unit.scope,
                    entries: vec![entry],
                });
            }
        } else {
            self.try_add(&unit, true);
        }
    }

    /// Adds `unit` when the piece stays within the limits (or `force`);
    /// otherwise leaves the piece as it was.
    fn try_add(&mut self, unit: &Unit, force: bool) -> bool {
        let mark = self.pruner.mark();
        let staged = self.stage(unit);
        let samples = self.piece.samples + staged.samples.len();
        let bytes = FRAME_BOUND + self.pruner.bytes() + self.piece.bytes + staged.bytes;
        if force || !self.limits.exceeded_by(samples, bytes) {
            self.apply(unit, staged);
            true
        } else {
            self.pruner.rollback(mark);
            false
        }
    }

    fn stage(&mut self, unit: &Unit) -> Staged {
        let mut staged = Staged::default();
        let Some(resource) = self.source.resource_profiles.get(unit.resource) else {
            return staged;
        };
        let resource_opens = self.piece.open_resource != Some(unit.resource);
        if resource_opens {
            let mut header = ResourceProfiles {
                resource: resource.resource.clone(),
                scope_profiles: Vec::new(),
                schema_url: resource.schema_url.clone(),
            };
            if let Some(r) = &mut header.resource {
                self.pruner.key_values(&mut r.attributes);
            }
            staged.bytes += FRAME_BOUND + header.encoded_len();
            staged.resource = Some(header);
        }
        let Some((s, scope)) = unit
            .scope
            .and_then(|s| Some((s, resource.scope_profiles.get(s)?)))
        else {
            return staged;
        };
        let scope_opens = resource_opens || self.piece.open_scope != Some((unit.resource, s));
        if scope_opens {
            let mut header = ScopeProfiles {
                scope: scope.scope.clone(),
                profiles: Vec::new(),
                schema_url: scope.schema_url.clone(),
            };
            if let Some(instrumentation) = &mut header.scope {
                self.pruner.key_values(&mut instrumentation.attributes);
            }
            staged.bytes += FRAME_BOUND + header.encoded_len();
            staged.scope = Some(header);
        }
        for &(p, sample) in &unit.entries {
            let Some(profile) = scope.profiles.get(p) else {
                continue;
            };
            let open = (!scope_opens && self.piece.positions.get(p).is_some_and(Option::is_some))
                || staged.profiles.iter().any(|(staged, _)| *staged == p);
            if !open {
                let first = !self.payload_given.get(p).copied().unwrap_or(true);
                let mut header = header_of(profile, first);
                self.pruner.profile_header(&mut header);
                staged.bytes += FRAME_BOUND + header.encoded_len();
                staged.profiles.push((p, header));
            }
            if let Some(mut sample) = sample.and_then(|i| profile.samples.get(i)).cloned() {
                self.pruner.sample(&mut sample);
                staged.bytes += framed(sample.encoded_len());
                staged.samples.push((p, sample));
            }
        }
        staged
    }

    fn apply(&mut self, unit: &Unit, staged: Staged) {
        let piece = &mut self.piece;
        if let Some(header) = staged.resource {
            piece.close_scope();
            piece.resources.push(header);
            piece.open_resource = Some(unit.resource);
        }
        if let (Some(header), Some(s)) = (staged.scope, unit.scope) {
            piece.close_scope();
            if let Some(resource) = piece.resources.last_mut() {
                resource.scope_profiles.push(header);
            }
            piece.open_scope = Some((unit.resource, s));
            let profiles = self
                .source
                .resource_profiles
                .get(unit.resource)
                .and_then(|r| r.scope_profiles.get(s))
                .map_or(0, |scope| scope.profiles.len());
            piece.positions = vec![None; profiles];
        }
        for (p, header) in staged.profiles {
            if let Some(slot) = piece.positions.get_mut(p) {
                *slot = Some(piece.profiles.len());
            }
            if let Some(given) = self.payload_given.get_mut(p) {
                *given = true;
            }
            piece.profiles.push((p, header));
        }
        piece.samples += staged.samples.len();
        for (p, sample) in staged.samples {
            let position = piece.positions.get(p).copied().flatten();
            if let Some((_, profile)) = position.and_then(|i| piece.profiles.get_mut(i)) {
                profile.samples.push(sample);
            }
        }
        piece.bytes += staged.bytes;
        piece.units += 1;
    }

    fn finish_piece(&mut self) {
        let mut piece = std::mem::take(&mut self.piece);
        let dictionary = self.pruner.finish();
        if piece.units == 0 {
            return;
        }
        piece.close_scope();
        self.done.push(ExportProfilesServiceRequest {
            resource_profiles: piece.resources,
            dictionary: Some(dictionary),
        });
    }
}

impl Piece {
    /// Moves the open scope's profiles, in source order, into it.
    fn close_scope(&mut self) {
        let mut profiles = std::mem::take(&mut self.profiles);
        profiles.sort_by_key(|(p, _)| *p);
        if let Some(scope) = self
            .resources
            .last_mut()
            .and_then(|r| r.scope_profiles.last_mut())
        {
            scope.profiles.extend(profiles.into_iter().map(|(_, p)| p));
        }
        self.positions.clear();
        self.open_scope = None;
    }
}

/// `profile` without its samples, and without its original payload unless
/// `with_payload`.
fn header_of(profile: &Profile, with_payload: bool) -> Profile {
    let payload = |bytes: &Vec<u8>| {
        if with_payload {
            bytes.clone()
        } else {
            Vec::new()
        }
    };
    Profile {
        sample_type: profile.sample_type,
        samples: Vec::new(),
        time_unix_nano: profile.time_unix_nano,
        duration_nano: profile.duration_nano,
        period_type: profile.period_type,
        period: profile.period,
        profile_id: profile.profile_id.clone(),
        dropped_attributes_count: profile.dropped_attributes_count,
        original_payload_format: if with_payload {
            profile.original_payload_format.clone()
        } else {
            String::new()
        },
        original_payload: payload(&profile.original_payload),
        attribute_indices: profile.attribute_indices.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profbridge_translate::otlp::{
        key_value, string_value, Function, InstrumentationScope, Line, Location, Resource,
        ValueType,
    };
    use profbridge_translate::{validate_request, DictionaryBuilder};

    /// One resource and scope; profile `p` has `lengths[p]` samples, each
    /// with its own one-frame stack and value `100 * p + i`.
    fn request(lengths: &[usize]) -> ExportProfilesServiceRequest {
        let mut b = DictionaryBuilder::new();
        let profiles = lengths
            .iter()
            .enumerate()
            .map(|(p, &length)| {
                let kind = b.string(&format!("type{p}"));
                let samples = (0..length)
                    .map(|i| {
                        let name = b.string(&format!("f{i}"));
                        let function = b.function(Function {
                            name_strindex: name,
                            ..Function::default()
                        });
                        let location = b.location(Location {
                            lines: vec![Line {
                                function_index: function,
                                ..Line::default()
                            }],
                            ..Location::default()
                        });
                        Sample {
                            stack_index: b.stack(&[location]),
                            values: vec![i64::try_from(100 * p + i).unwrap()],
                            ..Sample::default()
                        }
                    })
                    .collect();
                Profile {
                    sample_type: Some(ValueType {
                        type_strindex: kind,
                        unit_strindex: kind,
                    }),
                    samples,
                    original_payload_format: "pprof".into(),
                    original_payload: vec![p as u8; 3],
                    ..Profile::default()
                }
            })
            .collect();
        ExportProfilesServiceRequest {
            resource_profiles: vec![ResourceProfiles {
                resource: Some(Resource {
                    attributes: vec![key_value("service.name", string_value("api"))],
                    ..Resource::default()
                }),
                scope_profiles: vec![ScopeProfiles {
                    scope: Some(InstrumentationScope {
                        name: "test".into(),
                        ..InstrumentationScope::default()
                    }),
                    profiles,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
            dictionary: Some(b.finish()),
        }
    }

    fn by_samples(max: usize) -> Limits {
        Limits {
            samples: Some(max),
            bytes: None,
            whole_profiles: false,
        }
    }

    /// Per piece, per profile: (values, original payload length).
    fn shape(pieces: &[ExportProfilesServiceRequest]) -> Vec<Vec<(Vec<i64>, usize)>> {
        pieces
            .iter()
            .map(|piece| {
                assert!(validate_request(piece).unwrap().invalid.is_empty());
                assert_eq!(piece.resource_profiles.len(), 1);
                let scopes = &piece.resource_profiles[0].scope_profiles;
                assert_eq!(scopes.len(), 1);
                scopes[0]
                    .profiles
                    .iter()
                    .map(|p| {
                        let values = p.samples.iter().map(|s| s.values[0]).collect();
                        (values, p.original_payload.len())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn rows_of_a_scope_stay_together() {
        let pieces = split(&request(&[3, 3]), by_samples(4));
        assert_eq!(
            shape(&pieces),
            [
                vec![(vec![0, 1], 3), (vec![100, 101], 3)],
                vec![(vec![2], 0), (vec![102], 0)],
            ]
        );
    }

    #[test]
    fn a_row_wider_than_the_limit_is_placed_sample_by_sample() {
        let pieces = split(&request(&[2, 2, 2]), by_samples(2));
        assert_eq!(
            shape(&pieces),
            [
                vec![(vec![0], 3), (vec![100], 3)],
                vec![(vec![1], 0), (vec![200], 3)],
                vec![(vec![101], 0), (vec![201], 0)],
            ]
        );
        let first_piece = &pieces[1].resource_profiles[0].scope_profiles[0];
        let types: Vec<_> = first_piece.profiles.iter().map(|p| p.sample_type).collect();
        assert_ne!(types[0], types[1], "profiles keep their own headers");
    }

    #[test]
    fn profiles_without_samples_keep_their_place() {
        let pieces = split(&request(&[2, 0, 1]), by_samples(2));
        assert_eq!(
            shape(&pieces),
            [
                vec![(vec![0], 3), (vec![], 3), (vec![200], 3)],
                vec![(vec![1], 0)],
            ]
        );
    }

    #[test]
    fn empty_resources_and_scopes_are_kept() {
        let mut r = request(&[1]);
        let mut empty_scope = r.resource_profiles[0].clone();
        empty_scope.scope_profiles[0].profiles.clear();
        let mut empty_resource = r.resource_profiles[0].clone();
        empty_resource.scope_profiles.clear();
        r.resource_profiles.push(empty_scope);
        r.resource_profiles.push(empty_resource);
        r.resource_profiles.push(r.resource_profiles[0].clone());
        let pieces = split(&r, by_samples(1));
        let layout: Vec<Vec<Vec<usize>>> = pieces
            .iter()
            .map(|piece| {
                piece
                    .resource_profiles
                    .iter()
                    .map(|rp| rp.scope_profiles.iter().map(|s| s.profiles.len()).collect())
                    .collect()
            })
            .collect();
        assert_eq!(layout, [vec![vec![1], vec![0], vec![]], vec![vec![1]]]);
    }

    #[test]
    fn pieces_hold_only_the_dictionary_entries_they_use() {
        let source = request(&[4]);
        let pieces = split(&source, by_samples(1));
        assert_eq!(pieces.len(), 4);
        for piece in &pieces {
            let d = piece.dictionary.as_ref().unwrap();
            assert_eq!(d.stack_table.len(), 2);
            assert_eq!(d.function_table.len(), 2);
            // "", the sample type and the function name.
            assert_eq!(d.string_table.len(), 3);
        }
    }

    #[test]
    fn byte_limits_hold_for_pieces_of_several_samples() {
        let source = request(&[40, 40]);
        for max in [60, 120, 300, 1000] {
            let limits = Limits {
                samples: None,
                bytes: Some(max),
                whole_profiles: false,
            };
            let pieces = split(&source, limits);
            let samples: usize = pieces
                .iter()
                .map(|piece| {
                    let count: usize = piece.resource_profiles[0].scope_profiles[0]
                        .profiles
                        .iter()
                        .map(|p| p.samples.len())
                        .sum();
                    assert!(
                        piece.encoded_len() <= max || count == 1,
                        "{} bytes, {count} samples, limit {max}",
                        piece.encoded_len()
                    );
                    count
                })
                .sum();
            assert_eq!(samples, 80);
        }
    }

    #[test]
    fn whole_profiles_are_never_spread_and_a_big_one_goes_alone() {
        let source = request(&[3, 30, 2, 2]);
        let one_small = split(
            &request(&[3]),
            Limits {
                samples: None,
                bytes: None,
                whole_profiles: true,
            },
        )[0]
        .encoded_len();
        let limits = Limits {
            samples: None,
            bytes: Some(one_small * 2),
            whole_profiles: true,
        };
        let pieces = split(&source, limits);
        let layout: Vec<Vec<usize>> = shape(&pieces)
            .iter()
            .map(|piece| piece.iter().map(|(values, _)| values.len()).collect())
            .collect();
        assert_eq!(layout, [vec![3], vec![30], vec![2, 2]]);
        assert!(pieces[1].encoded_len() > one_small * 2);
        assert!(pieces[2].encoded_len() <= one_small * 2);
        let values: Vec<i64> = shape(&pieces)
            .into_iter()
            .flatten()
            .flat_map(|(values, _)| values)
            .collect();
        let expected: Vec<i64> = [(0, 3), (1, 30), (2, 2), (3, 2)]
            .into_iter()
            .flat_map(|(p, n)| (0..n).map(move |i| 100 * p + i))
            .collect();
        assert_eq!(values, expected);
    }
}
