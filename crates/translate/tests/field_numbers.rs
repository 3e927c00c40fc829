//! The OTLP field numbers the hand-written decoder uses (`otlp_field`) are
//! the schema's, field for field, as protox reads the `.proto` files that
//! the opentelemetry-proto crate (the reference decoder's types) ships.

use std::collections::BTreeMap;

use profbridge_testkit::schema::otlp_profiles_schema;
use profbridge_translate::otlp_field as field;

/// `(message, [(constant, value)])` for every module of `otlp_field`.
macro_rules! table {
    ($($message:literal => $module:ident [$($name:ident),* $(,)?]),* $(,)?) => {
        vec![$((
            $message,
            vec![$((stringify!($name).to_owned(), field::$module::$name)),*],
        )),*]
    };
}

const PROFILES: &str = "opentelemetry.proto.profiles.v1development";
const COMMON: &str = "opentelemetry.proto.common.v1";

#[test]
fn every_message_has_the_schemas_field_numbers_and_no_other() {
    let schema = otlp_profiles_schema();
    let ours = table![
        "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest" =>
            export_request [RESOURCE_PROFILES, DICTIONARY],
        "ResourceProfiles" => resource_profiles [RESOURCE, SCOPE_PROFILES, SCHEMA_URL],
        "opentelemetry.proto.resource.v1.Resource" =>
            resource [ATTRIBUTES, DROPPED_ATTRIBUTES_COUNT, ENTITY_REFS],
        "common:EntityRef" => entity_ref [SCHEMA_URL, TYPE, ID_KEYS, DESCRIPTION_KEYS],
        "ScopeProfiles" => scope_profiles [SCOPE, PROFILES, SCHEMA_URL],
        "common:InstrumentationScope" =>
            scope [NAME, VERSION, ATTRIBUTES, DROPPED_ATTRIBUTES_COUNT],
        "Profile" => profile [
            SAMPLE_TYPE, SAMPLES, TIME_UNIX_NANO, DURATION_NANO, PERIOD_TYPE, PERIOD,
            PROFILE_ID, DROPPED_ATTRIBUTES_COUNT, ORIGINAL_PAYLOAD_FORMAT, ORIGINAL_PAYLOAD,
            ATTRIBUTE_INDICES,
        ],
        "ValueType" => value_type [TYPE_STRINDEX, UNIT_STRINDEX],
        "Sample" => sample [
            STACK_INDEX, ATTRIBUTE_INDICES, LINK_INDEX, VALUES, TIMESTAMPS_UNIX_NANO,
        ],
        "ProfilesDictionary" => dictionary [
            MAPPING_TABLE, LOCATION_TABLE, FUNCTION_TABLE, LINK_TABLE, STRING_TABLE,
            ATTRIBUTE_TABLE, STACK_TABLE,
        ],
        "Mapping" => mapping [
            MEMORY_START, MEMORY_LIMIT, FILE_OFFSET, FILENAME_STRINDEX, ATTRIBUTE_INDICES,
        ],
        "Location" => location [MAPPING_INDEX, ADDRESS, LINES, ATTRIBUTE_INDICES],
        "Line" => line [FUNCTION_INDEX, LINE, COLUMN],
        "Function" => function [
            NAME_STRINDEX, SYSTEM_NAME_STRINDEX, FILENAME_STRINDEX, START_LINE,
        ],
        "Link" => link [TRACE_ID, SPAN_ID],
        "KeyValueAndUnit" => attribute [KEY_STRINDEX, VALUE, UNIT_STRINDEX],
        "Stack" => stack [LOCATION_INDICES],
        "common:AnyValue" => any_value [
            STRING_VALUE, BOOL_VALUE, INT_VALUE, DOUBLE_VALUE, ARRAY_VALUE, KVLIST_VALUE,
            BYTES_VALUE, STRING_VALUE_STRINDEX,
        ],
        "common:ArrayValue" => list [VALUES],
        "common:KeyValueList" => list [VALUES],
        "common:KeyValue" => key_value [KEY, VALUE, KEY_STRINDEX],
    ];
    for (message, fields) in ours {
        let full_name = match message.split_once(':') {
            Some(("common", name)) => format!("{COMMON}.{name}"),
            _ if message.contains('.') => message.to_owned(),
            _ => format!("{PROFILES}.{message}"),
        };
        assert_eq!(
            fields.into_iter().collect::<BTreeMap<_, _>>(),
            schema.fields(&full_name),
            "{full_name}: otlp_field against the schema"
        );
    }
}
