//! The pprof field numbers the hand-written encoder and decoder use
//! (`wire::field`) are profile.proto's, field for field, as protox reads
//! the schema that prost generates the reference types from.

use profbridge_pprof::wire::field;
use profbridge_testkit::schema::pprof_schema;

/// `(message, [(constant, value)])` for every module of `wire::field`.
macro_rules! table {
    ($($message:literal => $module:ident [$($name:ident),* $(,)?]),* $(,)?) => {
        vec![$((
            $message,
            vec![$((stringify!($name).to_owned(), u32::from(field::$module::$name))),*],
        )),*]
    };
}

#[test]
fn every_message_has_the_schemas_field_numbers_and_no_other() {
    let schema = pprof_schema();
    let ours = table![
        "perftools.profiles.Profile" => profile [
            SAMPLE_TYPE, SAMPLE, MAPPING, LOCATION, FUNCTION, STRING_TABLE, DROP_FRAMES,
            KEEP_FRAMES, TIME_NANOS, DURATION_NANOS, PERIOD_TYPE, PERIOD, COMMENT,
            DEFAULT_SAMPLE_TYPE, DOC_URL,
        ],
        "perftools.profiles.Sample" => sample [LOCATION_ID, VALUE, LABEL],
        "perftools.profiles.Label" => label [KEY, STR, NUM, NUM_UNIT],
        "perftools.profiles.ValueType" => value_type [TYPE, UNIT],
        "perftools.profiles.Mapping" => mapping [
            ID, MEMORY_START, MEMORY_LIMIT, FILE_OFFSET, FILENAME, BUILD_ID, HAS_FUNCTIONS,
            HAS_FILENAMES, HAS_LINE_NUMBERS, HAS_INLINE_FRAMES,
        ],
        "perftools.profiles.Location" => location [ID, MAPPING_ID, ADDRESS, LINE, IS_FOLDED],
        "perftools.profiles.Line" => line [FUNCTION_ID, LINE, COLUMN],
        "perftools.profiles.Function" => function [ID, NAME, SYSTEM_NAME, FILENAME, START_LINE],
    ];
    for (message, fields) in ours {
        assert_eq!(
            fields
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
            schema.fields(message),
            "{message}: wire::field against the schema"
        );
    }
}
