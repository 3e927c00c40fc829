//! The request and what wraps the profiles: resources, scopes, their
//! attributes.

use opentelemetry_proto::tonic::common::v1::EntityRef;
use serde_json::Value;

use super::any_value::{key_value_at, key_value_to_json};
use super::path::Path;
use super::read::{key, Fields, Key};
use super::scalar::{describe, string_from_json};
use super::write::Object;
use super::{profile, tables, JsonError};
use crate::otlp::{
    ExportProfilesServiceRequest, InstrumentationScope, Resource, ResourceProfiles, ScopeProfiles,
};

const RESOURCE_PROFILES: Key = key("resourceProfiles", "resource_profiles");
const DICTIONARY: Key = key("dictionary", "dictionary");
const RESOURCE: Key = key("resource", "resource");
const SCOPE_PROFILES: Key = key("scopeProfiles", "scope_profiles");
const SCHEMA_URL: Key = key("schemaUrl", "schema_url");
const ATTRIBUTES: Key = key("attributes", "attributes");
const DROPPED_ATTRIBUTES_COUNT: Key = key("droppedAttributesCount", "dropped_attributes_count");
const ENTITY_REFS: Key = key("entityRefs", "entity_refs");
const TYPE: Key = key("type", "type");
const ID_KEYS: Key = key("idKeys", "id_keys");
const DESCRIPTION_KEYS: Key = key("descriptionKeys", "description_keys");
const SCOPE: Key = key("scope", "scope");
const PROFILES: Key = key("profiles", "profiles");
const NAME: Key = key("name", "name");
const VERSION: Key = key("version", "version");

pub(crate) fn request_to_json(request: &ExportProfilesServiceRequest) -> Value {
    Object::new()
        .list(
            RESOURCE_PROFILES,
            &request.resource_profiles,
            resource_profiles_to_json,
        )
        .message(
            DICTIONARY,
            request.dictionary.as_ref(),
            tables::dictionary_to_json,
        )
        .finish()
}

pub(crate) fn request_from_json(
    value: &Value,
    root: Path<'_>,
) -> Result<ExportProfilesServiceRequest, JsonError> {
    let Value::Object(_) = value else {
        let problem = format!("the request must be a JSON object, not {}", describe(value));
        return Err(root.error(problem));
    };
    let fields = Fields::of(value, &root)?;
    Ok(ExportProfilesServiceRequest {
        resource_profiles: fields.list(RESOURCE_PROFILES, resource_profiles_from_json)?,
        dictionary: fields.message(DICTIONARY, tables::dictionary_from_json)?,
    })
}

fn resource_profiles_to_json(r: &ResourceProfiles) -> Value {
    Object::new()
        .message(RESOURCE, r.resource.as_ref(), resource_to_json)
        .list(SCOPE_PROFILES, &r.scope_profiles, scope_profiles_to_json)
        .string(SCHEMA_URL, &r.schema_url)
        .finish()
}

fn resource_profiles_from_json(value: &Value, at: Path<'_>) -> Result<ResourceProfiles, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(ResourceProfiles {
        resource: fields.message(RESOURCE, resource_from_json)?,
        scope_profiles: fields.list(SCOPE_PROFILES, scope_profiles_from_json)?,
        schema_url: fields.string(SCHEMA_URL)?,
    })
}

fn resource_to_json(r: &Resource) -> Value {
    Object::new()
        .list(ATTRIBUTES, &r.attributes, key_value_to_json)
        .number(DROPPED_ATTRIBUTES_COUNT, r.dropped_attributes_count)
        .list(ENTITY_REFS, &r.entity_refs, entity_ref_to_json)
        .finish()
}

fn resource_from_json(value: &Value, at: Path<'_>) -> Result<Resource, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(Resource {
        attributes: fields.list(ATTRIBUTES, key_value_at)?,
        dropped_attributes_count: fields.u32(DROPPED_ATTRIBUTES_COUNT)?,
        entity_refs: fields.list(ENTITY_REFS, entity_ref_from_json)?,
    })
}

fn entity_ref_to_json(e: &EntityRef) -> Value {
    Object::new()
        .string(SCHEMA_URL, &e.schema_url)
        .string(TYPE, &e.r#type)
        .list(ID_KEYS, &e.id_keys, |k| Value::String(k.clone()))
        .list(DESCRIPTION_KEYS, &e.description_keys, |k| {
            Value::String(k.clone())
        })
        .finish()
}

fn entity_ref_from_json(value: &Value, at: Path<'_>) -> Result<EntityRef, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(EntityRef {
        schema_url: fields.string(SCHEMA_URL)?,
        r#type: fields.string(TYPE)?,
        id_keys: fields.scalars(ID_KEYS, string_from_json)?,
        description_keys: fields.scalars(DESCRIPTION_KEYS, string_from_json)?,
    })
}

fn scope_profiles_to_json(s: &ScopeProfiles) -> Value {
    Object::new()
        .message(SCOPE, s.scope.as_ref(), scope_to_json)
        .list(PROFILES, &s.profiles, profile::profile_to_json)
        .string(SCHEMA_URL, &s.schema_url)
        .finish()
}

fn scope_profiles_from_json(value: &Value, at: Path<'_>) -> Result<ScopeProfiles, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(ScopeProfiles {
        scope: fields.message(SCOPE, scope_from_json)?,
        profiles: fields.list(PROFILES, profile::profile_from_json)?,
        schema_url: fields.string(SCHEMA_URL)?,
    })
}

fn scope_to_json(s: &InstrumentationScope) -> Value {
    Object::new()
        .string(NAME, &s.name)
        .string(VERSION, &s.version)
        .list(ATTRIBUTES, &s.attributes, key_value_to_json)
        .number(DROPPED_ATTRIBUTES_COUNT, s.dropped_attributes_count)
        .finish()
}

fn scope_from_json(value: &Value, at: Path<'_>) -> Result<InstrumentationScope, JsonError> {
    let fields = Fields::of(value, &at)?;
    Ok(InstrumentationScope {
        name: fields.string(NAME)?,
        version: fields.string(VERSION)?,
        attributes: fields.list(ATTRIBUTES, key_value_at)?,
        dropped_attributes_count: fields.u32(DROPPED_ATTRIBUTES_COUNT)?,
    })
}
