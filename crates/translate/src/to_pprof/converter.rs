//! OTLP → pprof for callers that convert one request after another and
//! write the pprofs: a [`PprofConverter`] keeps the memory conversions and
//! encodings work in, and takes back the pprofs it gave once they are
//! written.

use super::group::{pprof_of_group, GroupBuffers, SchemaUrls};
use super::samples::SampleFields;
use super::{
    group_profiles, resolve_key_values, OtlpToPprof, PprofOutput, ToPprofOptions, UnassembledPprof,
};
use crate::otlp::{ExportProfilesServiceRequest, InstrumentationScope, KeyValue, Profile};
use crate::validate::{validate_request, OtlpError, ProfileRef, Validated};

/// Converts requests to pprofs that are only encoded, reusing its memory
/// from one request to the next: give each result back with
/// [`PprofConverter::recycle`] once its pprofs are written. The pprofs and
/// their bytes are those of [`super::otlp_to_unassembled_pprof`].
#[derive(Default)]
pub struct PprofConverter {
    options: ToPprofOptions,
    groups: GroupBuffers,
    fields: SampleFields,
}

impl std::fmt::Debug for PprofConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PprofConverter")
            .field("options", &self.options)
            .field("capacity_bytes", &self.capacity_bytes())
            .finish_non_exhaustive()
    }
}

impl PprofConverter {
    pub fn new(options: ToPprofOptions) -> Self {
        Self {
            options,
            ..Self::default()
        }
    }

    /// Validates `request`, then converts it as
    /// [`PprofConverter::convert_validated`] does.
    pub fn convert(
        &mut self,
        request: &ExportProfilesServiceRequest,
    ) -> Result<OtlpToPprof<UnassembledPprof>, OtlpError> {
        let validated = validate_request(request)?;
        Ok(self.convert_validated(request, &validated))
    }

    /// Converts a request that [`validate_request`] has checked, skipping
    /// the validation: `validated` must be what it returned for `request`
    /// as it is now. Profiles it found invalid are left out and reported
    /// in `rejected`.
    pub fn convert_validated(
        &mut self,
        request: &ExportProfilesServiceRequest,
        validated: &Validated,
    ) -> OtlpToPprof<UnassembledPprof> {
        let mut out = OtlpToPprof {
            profiles: Vec::new(),
            rejected: validated.invalid.clone(),
        };
        let Some(dictionary) = request.dictionary.as_ref() else {
            return out;
        };
        for (r, resource) in request.resource_profiles.iter().enumerate() {
            let resource_attributes = resolve_key_values(
                resource
                    .resource
                    .as_ref()
                    .map_or(&[][..], |res| &res.attributes[..]),
                dictionary,
            );
            for (s, scope) in resource.scope_profiles.iter().enumerate() {
                let instrumentation_scope = scope.scope.as_ref().map(|sc| InstrumentationScope {
                    attributes: resolve_key_values(&sc.attributes, dictionary),
                    ..sc.clone()
                });
                let valid: Vec<&Profile> = scope
                    .profiles
                    .iter()
                    .enumerate()
                    .filter(|(p, _)| {
                        validated.is_valid(ProfileRef {
                            resource: r,
                            scope: s,
                            profile: *p,
                        })
                    })
                    .map(|(_, profile)| profile)
                    .collect();
                let scope_attributes = instrumentation_scope
                    .as_ref()
                    .map_or(&[][..], |sc| &sc.attributes[..]);
                let mut copied: Vec<&KeyValue> = Vec::new();
                if self.options.resource_labels {
                    copied.extend(&resource_attributes);
                }
                if self.options.scope_labels {
                    copied.extend(scope_attributes);
                }
                for group in group_profiles(&valid, dictionary) {
                    let profile = pprof_of_group(
                        &group,
                        dictionary,
                        scope_attributes,
                        &copied,
                        SchemaUrls {
                            resource: &resource.schema_url,
                            scope: &scope.schema_url,
                        },
                        &self.options,
                        &mut self.groups,
                    );
                    out.profiles.push(PprofOutput {
                        profile,
                        resource: r,
                        scope: s,
                        resource_attributes: resource_attributes.clone(),
                        instrumentation_scope: instrumentation_scope.clone(),
                        resource_schema_url: resource.schema_url.clone(),
                        scope_schema_url: scope.schema_url.clone(),
                    });
                }
            }
        }
        out
    }

    /// [`UnassembledPprof::encode_into`], in this converter's memory.
    pub fn encode_into(&mut self, pprof: &UnassembledPprof, out: &mut Vec<u8>) {
        pprof.encode_with(out, &mut self.fields);
    }

    /// Takes back the memory of a conversion's pprofs, once written, for
    /// the next conversions.
    pub fn recycle(&mut self, converted: OtlpToPprof<UnassembledPprof>) {
        for output in converted.profiles {
            self.groups.recycle(output.profile);
        }
    }

    /// About how many bytes the converter holds allocated between
    /// conversions: callers that keep converters may want to drop one that
    /// an unusually large request grew.
    pub fn capacity_bytes(&self) -> usize {
        self.groups.capacity_bytes() + self.fields.capacity_bytes()
    }
}
