//! What the symbolizer's test binaries share.

#![allow(dead_code)]

use std::path::Path;

use profbridge_translate::keys::BUILD_ID_GNU;
use profbridge_translate::otlp::{string_value, ExportProfilesServiceRequest, KeyValueAndUnit};
use profbridge_translate::{pprof_to_otlp, PprofInput, ToOtlpOptions};

/// The OTLP form of a gperftools CPU profile.
pub fn request_of(profile_bytes: &[u8]) -> ExportProfilesServiceRequest {
    let profile = profbridge_pprof::parse_legacy(profile_bytes).expect("a gperftools profile");
    let converted = pprof_to_otlp(
        &[PprofInput {
            profile: &profile,
            resource_attributes: &[],
            scope: None,
            original_payload: None,
        }],
        &ToOtlpOptions::default(),
    );
    assert!(converted.rejected.is_empty());
    converted.request
}

/// Gives `file`'s mappings the GNU build id `id`, as the eBPF profiler and
/// pprof's `Mapping.build_id` do.
pub fn add_build_id(request: &mut ExportProfilesServiceRequest, file: &Path, id: &str) {
    let dictionary = request.dictionary.as_mut().unwrap();
    let wanted = file.to_string_lossy().into_owned();
    let key = dictionary.string_table.len() as i32;
    dictionary.string_table.push(BUILD_ID_GNU.to_owned());
    let attribute = dictionary.attribute_table.len() as i32;
    dictionary.attribute_table.push(KeyValueAndUnit {
        key_strindex: key,
        value: Some(string_value(id)),
        unit_strindex: 0,
    });
    let strings = dictionary.string_table.clone();
    for mapping in &mut dictionary.mapping_table {
        if strings[mapping.filename_strindex as usize] == wanted {
            mapping.attribute_indices.push(attribute);
        }
    }
}
