//! Generates the pprof types from proto/pprof/profile.proto with prost-build,
//! parsing the schema with protox so that no system `protoc` is needed.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto/pprof");
    let proto_file = proto_root.join("profile.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());

    let descriptors = protox::compile([&proto_file], [&proto_root])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
