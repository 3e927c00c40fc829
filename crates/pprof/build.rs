//! Generates the pprof types from proto/pprof/profile.proto with prost-build,
//! parsing the schema with protox so that no system `protoc` is needed.
//!
//! Besides the schema's messages it generates `ProfileSampleBytes`: the
//! schema's `Profile` with its field 2 (`sample`) read as `bytes`, so that
//! prost decodes every table but leaves each sample's message where it
//! is, in the buffer the profile was read from (codec/packed).

use std::path::PathBuf;

use protox::prost_reflect::prost_types::{field_descriptor_proto::Type, FileDescriptorSet};

const SAMPLE_FIELD: i32 = 2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto/pprof");
    let proto_file = proto_root.join("profile.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());

    let mut descriptors = protox::compile([&proto_file], [&proto_root])?;
    add_profile_with_sample_bytes(&mut descriptors)?;
    prost_build::Config::new()
        .bytes([".perftools.profiles.ProfileSampleBytes.sample"])
        // The schema's comments are Profile's; the copy has no place in it.
        .disable_comments([".perftools.profiles.ProfileSampleBytes"])
        .compile_fds(descriptors)?;
    Ok(())
}

fn add_profile_with_sample_bytes(
    descriptors: &mut FileDescriptorSet,
) -> Result<(), Box<dyn std::error::Error>> {
    let file = descriptors
        .file
        .iter_mut()
        .find(|file| file.message_type.iter().any(|m| m.name() == "Profile"))
        .ok_or("profile.proto has no message Profile")?;
    let mut packed = file
        .message_type
        .iter()
        .find(|m| m.name() == "Profile")
        .cloned()
        .ok_or("profile.proto has no message Profile")?;
    packed.name = Some("ProfileSampleBytes".to_owned());
    let sample = packed
        .field
        .iter_mut()
        .find(|field| field.number() == SAMPLE_FIELD && field.name() == "sample")
        .ok_or("Profile's field 2 is not `sample`")?;
    sample.set_type(Type::Bytes);
    sample.type_name = None;
    file.message_type.push(packed);
    Ok(())
}
