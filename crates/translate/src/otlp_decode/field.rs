//! The field numbers of the OTLP profiles schema
//! (opentelemetry/proto/profiles/v1development/profiles.proto and the
//! common and resource messages it uses), one module per message: the
//! only place in profbridge that writes them.

pub mod export_request {
    pub const RESOURCE_PROFILES: u32 = 1;
    pub const DICTIONARY: u32 = 2;
}

pub mod resource_profiles {
    pub const RESOURCE: u32 = 1;
    pub const SCOPE_PROFILES: u32 = 2;
    pub const SCHEMA_URL: u32 = 3;
}

pub mod resource {
    pub const ATTRIBUTES: u32 = 1;
    pub const DROPPED_ATTRIBUTES_COUNT: u32 = 2;
    pub const ENTITY_REFS: u32 = 3;
}

pub mod entity_ref {
    pub const SCHEMA_URL: u32 = 1;
    pub const TYPE: u32 = 2;
    pub const ID_KEYS: u32 = 3;
    pub const DESCRIPTION_KEYS: u32 = 4;
}

pub mod scope_profiles {
    pub const SCOPE: u32 = 1;
    pub const PROFILES: u32 = 2;
    pub const SCHEMA_URL: u32 = 3;
}

pub mod scope {
    pub const NAME: u32 = 1;
    pub const VERSION: u32 = 2;
    pub const ATTRIBUTES: u32 = 3;
    pub const DROPPED_ATTRIBUTES_COUNT: u32 = 4;
}

pub mod profile {
    pub const SAMPLE_TYPE: u32 = 1;
    pub const SAMPLES: u32 = 2;
    pub const TIME_UNIX_NANO: u32 = 3;
    pub const DURATION_NANO: u32 = 4;
    pub const PERIOD_TYPE: u32 = 5;
    pub const PERIOD: u32 = 6;
    pub const PROFILE_ID: u32 = 7;
    pub const DROPPED_ATTRIBUTES_COUNT: u32 = 8;
    pub const ORIGINAL_PAYLOAD_FORMAT: u32 = 9;
    pub const ORIGINAL_PAYLOAD: u32 = 10;
    pub const ATTRIBUTE_INDICES: u32 = 11;
}

pub mod value_type {
    pub const TYPE_STRINDEX: u32 = 1;
    pub const UNIT_STRINDEX: u32 = 2;
}

pub mod sample {
    pub const STACK_INDEX: u32 = 1;
    pub const ATTRIBUTE_INDICES: u32 = 2;
    pub const LINK_INDEX: u32 = 3;
    pub const VALUES: u32 = 4;
    pub const TIMESTAMPS_UNIX_NANO: u32 = 5;
}

pub mod dictionary {
    pub const MAPPING_TABLE: u32 = 1;
    pub const LOCATION_TABLE: u32 = 2;
    pub const FUNCTION_TABLE: u32 = 3;
    pub const LINK_TABLE: u32 = 4;
    pub const STRING_TABLE: u32 = 5;
    pub const ATTRIBUTE_TABLE: u32 = 6;
    pub const STACK_TABLE: u32 = 7;
}

pub mod mapping {
    pub const MEMORY_START: u32 = 1;
    pub const MEMORY_LIMIT: u32 = 2;
    pub const FILE_OFFSET: u32 = 3;
    pub const FILENAME_STRINDEX: u32 = 4;
    pub const ATTRIBUTE_INDICES: u32 = 5;
}

pub mod location {
    pub const MAPPING_INDEX: u32 = 1;
    pub const ADDRESS: u32 = 2;
    pub const LINES: u32 = 3;
    pub const ATTRIBUTE_INDICES: u32 = 4;
}

pub mod line {
    pub const FUNCTION_INDEX: u32 = 1;
    pub const LINE: u32 = 2;
    pub const COLUMN: u32 = 3;
}

pub mod function {
    pub const NAME_STRINDEX: u32 = 1;
    pub const SYSTEM_NAME_STRINDEX: u32 = 2;
    pub const FILENAME_STRINDEX: u32 = 3;
    pub const START_LINE: u32 = 4;
}

pub mod link {
    pub const TRACE_ID: u32 = 1;
    pub const SPAN_ID: u32 = 2;
}

/// `KeyValueAndUnit`, the dictionary's attribute table.
pub mod attribute {
    pub const KEY_STRINDEX: u32 = 1;
    pub const VALUE: u32 = 2;
    pub const UNIT_STRINDEX: u32 = 3;
}

pub mod stack {
    pub const LOCATION_INDICES: u32 = 1;
}

pub mod any_value {
    pub const STRING_VALUE: u32 = 1;
    pub const BOOL_VALUE: u32 = 2;
    pub const INT_VALUE: u32 = 3;
    pub const DOUBLE_VALUE: u32 = 4;
    pub const ARRAY_VALUE: u32 = 5;
    pub const KVLIST_VALUE: u32 = 6;
    pub const BYTES_VALUE: u32 = 7;
    pub const STRING_VALUE_STRINDEX: u32 = 8;
}

/// `ArrayValue.values` and `KeyValueList.values`.
pub mod list {
    pub const VALUES: u32 = 1;
}

pub mod key_value {
    pub const KEY: u32 = 1;
    pub const VALUE: u32 = 2;
    pub const KEY_STRINDEX: u32 = 3;
}
