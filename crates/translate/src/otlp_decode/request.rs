//! The envelope: the request, its resources and scopes.

use opentelemetry_proto::tonic::common::v1::EntityRef;

use super::common::key_value;
use super::dictionary::dictionary;
use super::field;
use super::profile::profile;
use super::wire::{field_counts, fields, uint32};
use super::{set_once, Fast, Refill, Unsupported};
use crate::otlp::{
    ExportProfilesServiceRequest, InstrumentationScope, Resource, ResourceProfiles, ScopeProfiles,
};

/// The request in `spare`'s memory.
pub(super) fn request(
    message: &[u8],
    mut spare: ExportProfilesServiceRequest,
) -> Fast<ExportProfilesServiceRequest> {
    let [_, resource_profiles] = field_counts(message)?;
    let mut spare_dictionary = spare.dictionary.take();
    let mut request = ExportProfilesServiceRequest {
        resource_profiles: spare.resource_profiles,
        dictionary: None,
    };
    let mut resources = Refill::new(&mut request.resource_profiles, resource_profiles);
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::export_request::RESOURCE_PROFILES => {
                resource_profile(field.bytes()?, resources.next()?)?
            }
            field::export_request::DICTIONARY => {
                // prost merges a second dictionary into the first.
                if request.dictionary.is_some() {
                    return Err(Unsupported);
                }
                let mut decoded = spare_dictionary.take().unwrap_or_default();
                dictionary(field.bytes()?, &mut decoded)?;
                request.dictionary = Some(decoded);
            }
            _ => {}
        }
    }
    drop(resources);
    Ok(request)
}

fn resource_profile(message: &[u8], resource_profile: &mut ResourceProfiles) -> Fast<()> {
    let [_, _, scope_profiles] = field_counts(message)?;
    *resource_profile = ResourceProfiles {
        scope_profiles: std::mem::take(&mut resource_profile.scope_profiles),
        ..ResourceProfiles::default()
    };
    let mut scopes = Refill::new(&mut resource_profile.scope_profiles, scope_profiles);
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::resource_profiles::RESOURCE => {
                set_once(&mut resource_profile.resource, resource(field.bytes()?)?)?
            }
            field::resource_profiles::SCOPE_PROFILES => {
                scope_profile(field.bytes()?, scopes.next()?)?
            }
            field::resource_profiles::SCHEMA_URL => resource_profile.schema_url = field.string()?,
            _ => {}
        }
    }
    Ok(())
}

fn resource(message: &[u8]) -> Fast<Resource> {
    let [_, attributes, _, entity_refs] = field_counts(message)?;
    let mut resource = Resource {
        attributes: Vec::with_capacity(attributes),
        dropped_attributes_count: 0,
        entity_refs: Vec::with_capacity(entity_refs),
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::resource::ATTRIBUTES => resource.attributes.push(key_value(field.bytes()?, 0)?),
            field::resource::DROPPED_ATTRIBUTES_COUNT => {
                resource.dropped_attributes_count = uint32(field.varint()?)
            }
            field::resource::ENTITY_REFS => resource.entity_refs.push(entity_ref(field.bytes()?)?),
            _ => {}
        }
    }
    Ok(resource)
}

fn entity_ref(message: &[u8]) -> Fast<EntityRef> {
    let [_, _, _, id_keys, description_keys] = field_counts(message)?;
    let mut entity_ref = EntityRef {
        id_keys: Vec::with_capacity(id_keys),
        description_keys: Vec::with_capacity(description_keys),
        ..EntityRef::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::entity_ref::SCHEMA_URL => entity_ref.schema_url = field.string()?,
            field::entity_ref::TYPE => entity_ref.r#type = field.string()?,
            field::entity_ref::ID_KEYS => entity_ref.id_keys.push(field.string()?),
            field::entity_ref::DESCRIPTION_KEYS => {
                entity_ref.description_keys.push(field.string()?)
            }
            _ => {}
        }
    }
    Ok(entity_ref)
}

fn scope_profile(message: &[u8], scope_profile: &mut ScopeProfiles) -> Fast<()> {
    let [_, _, profiles] = field_counts(message)?;
    *scope_profile = ScopeProfiles {
        profiles: std::mem::take(&mut scope_profile.profiles),
        ..ScopeProfiles::default()
    };
    let mut kept_profiles = Refill::new(&mut scope_profile.profiles, profiles);
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::scope_profiles::SCOPE => {
                set_once(&mut scope_profile.scope, scope(field.bytes()?)?)?
            }
            field::scope_profiles::PROFILES => profile(field.bytes()?, kept_profiles.next()?)?,
            field::scope_profiles::SCHEMA_URL => scope_profile.schema_url = field.string()?,
            _ => {}
        }
    }
    Ok(())
}

fn scope(message: &[u8]) -> Fast<InstrumentationScope> {
    let [_, _, _, attributes] = field_counts(message)?;
    let mut scope = InstrumentationScope {
        attributes: Vec::with_capacity(attributes),
        ..InstrumentationScope::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            field::scope::NAME => scope.name = field.string()?,
            field::scope::VERSION => scope.version = field.string()?,
            field::scope::ATTRIBUTES => scope.attributes.push(key_value(field.bytes()?, 0)?),
            field::scope::DROPPED_ATTRIBUTES_COUNT => {
                scope.dropped_attributes_count = uint32(field.varint()?)
            }
            _ => {}
        }
    }
    Ok(scope)
}
