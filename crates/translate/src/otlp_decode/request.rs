//! The envelope: the request, its resources and scopes.

use opentelemetry_proto::tonic::common::v1::EntityRef;

use super::common::key_value;
use super::dictionary::dictionary;
use super::profile::profile;
use super::set_once;
use super::wire::{field_counts, fields, uint32};
use super::Fast;
use crate::otlp::{
    ExportProfilesServiceRequest, InstrumentationScope, Resource, ResourceProfiles, ScopeProfiles,
};

pub(super) fn request(message: &[u8]) -> Fast<ExportProfilesServiceRequest> {
    let [_, resource_profiles] = field_counts(message)?;
    let mut request = ExportProfilesServiceRequest {
        resource_profiles: Vec::with_capacity(resource_profiles),
        dictionary: None,
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => request
                .resource_profiles
                .push(resource_profile(field.bytes()?)?),
            2 => set_once(&mut request.dictionary, dictionary(field.bytes()?)?)?,
            _ => {}
        }
    }
    Ok(request)
}

fn resource_profile(message: &[u8]) -> Fast<ResourceProfiles> {
    let [_, _, scope_profiles] = field_counts(message)?;
    let mut resource_profile = ResourceProfiles {
        scope_profiles: Vec::with_capacity(scope_profiles),
        ..ResourceProfiles::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => set_once(&mut resource_profile.resource, resource(field.bytes()?)?)?,
            2 => resource_profile
                .scope_profiles
                .push(scope_profile(field.bytes()?)?),
            3 => resource_profile.schema_url = field.string()?,
            _ => {}
        }
    }
    Ok(resource_profile)
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
            1 => resource.attributes.push(key_value(field.bytes()?, 0)?),
            2 => resource.dropped_attributes_count = uint32(field.varint()?),
            3 => resource.entity_refs.push(entity_ref(field.bytes()?)?),
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
            1 => entity_ref.schema_url = field.string()?,
            2 => entity_ref.r#type = field.string()?,
            3 => entity_ref.id_keys.push(field.string()?),
            4 => entity_ref.description_keys.push(field.string()?),
            _ => {}
        }
    }
    Ok(entity_ref)
}

fn scope_profile(message: &[u8]) -> Fast<ScopeProfiles> {
    let [_, _, profiles] = field_counts(message)?;
    let mut scope_profile = ScopeProfiles {
        profiles: Vec::with_capacity(profiles),
        ..ScopeProfiles::default()
    };
    for field in fields(message) {
        let field = field?;
        match field.number {
            1 => set_once(&mut scope_profile.scope, scope(field.bytes()?)?)?,
            2 => scope_profile.profiles.push(profile(field.bytes()?)?),
            3 => scope_profile.schema_url = field.string()?,
            _ => {}
        }
    }
    Ok(scope_profile)
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
            1 => scope.name = field.string()?,
            2 => scope.version = field.string()?,
            3 => scope.attributes.push(key_value(field.bytes()?, 0)?),
            4 => scope.dropped_attributes_count = uint32(field.varint()?),
            _ => {}
        }
    }
    Ok(scope)
}
