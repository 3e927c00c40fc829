//! One input file as one OTLP request.

use anyhow::{anyhow, bail, Result};

use profbridge_translate::otlp::{key_value, string_value, ExportProfilesServiceRequest, KeyValue};
use profbridge_translate::{
    jfr_to_otlp, pprof_to_otlp, validate_request, PprofInput, ToOtlpOptions,
};

use super::args::SendArgs;
use crate::input::{folded_sample_type, load, warn_replaced_strings, Input, Loaded};

/// Reads the input in any format profbridge reads: profiles become one
/// request with the given resource attributes; an OTLP request gets them
/// added (replacing attributes with the same key) and must be valid.
pub fn request_for(input: &Input, args: &SendArgs) -> Result<ExportProfilesServiceRequest> {
    let folded_type = folded_sample_type(args.sample_type.as_deref());
    let name = &input.name;
    let loaded = load(input, args.from, &folded_type).map_err(|e| anyhow!("{name}: {e:#}"))?;
    let resource: Vec<KeyValue> = args
        .resource_attrs
        .iter()
        .map(|(key, value)| key_value(key.clone(), string_value(value.clone())))
        .collect();
    match loaded {
        Loaded::Pprof(profile, raw) => {
            warn_replaced_strings(name, &raw);
            let options = ToOtlpOptions {
                scope_name: args.scope_name.clone(),
                ..ToOtlpOptions::default()
            };
            let converted = pprof_to_otlp(
                &[PprofInput {
                    profile: &profile,
                    resource_attributes: &resource,
                    scope: None,
                    original_payload: None,
                }],
                &options,
            );
            if let Some((_, error)) = converted.rejected.first() {
                bail!("{name}: {error}");
            }
            Ok(converted.request)
        }
        Loaded::Jfr(converted) => {
            let options = ToOtlpOptions {
                scope_name: args.scope_name.clone(),
                ..ToOtlpOptions::default()
            };
            let converted = jfr_to_otlp(&converted, &resource, None, &options);
            if let Some((_, error)) = converted.rejected.first() {
                bail!("{name}: {error}");
            }
            Ok(converted.request)
        }
        Loaded::Otlp(mut request) => {
            let validated = validate_request(&request).map_err(|e| anyhow!("{name}: {e}"))?;
            if let Some((_, error)) = validated.invalid.first() {
                bail!("{name}: {error}");
            }
            set_resource_attributes(&mut request, &resource);
            Ok(request)
        }
    }
}

fn set_resource_attributes(request: &mut ExportProfilesServiceRequest, attributes: &[KeyValue]) {
    if attributes.is_empty() {
        return;
    }
    for resource_profiles in &mut request.resource_profiles {
        let existing = &mut resource_profiles
            .resource
            .get_or_insert_with(Default::default)
            .attributes;
        for attribute in attributes {
            existing.retain(|kv| kv.key != attribute.key);
            existing.push(attribute.clone());
        }
    }
}
