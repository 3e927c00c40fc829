//! Field numbers as a `.proto` schema declares them, compiled with protox:
//! the reference the field-number tables of the hand-written codecs are
//! checked against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiled `.proto` files.
pub struct Schema(prost_reflect::DescriptorPool);

impl Schema {
    /// Compiles `files`, resolving imports under `includes`.
    pub fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Self {
        let mut compiler = protox::Compiler::new(includes).expect("the include folders exist");
        compiler.include_imports(true);
        compiler.open_files(files).expect("the schema compiles");
        Self(compiler.descriptor_pool())
    }

    /// Every field of `message` (its full name), keyed by its name in
    /// upper case, as the tables name their constants.
    pub fn fields(&self, message: &str) -> BTreeMap<String, u32> {
        let descriptor = self
            .0
            .get_message_by_name(message)
            .unwrap_or_else(|| panic!("the schema has no message {message}"));
        descriptor
            .fields()
            .map(|field| (field.name().to_uppercase(), field.number()))
            .collect()
    }
}

/// profbridge's own copy of google/pprof's profile.proto.
pub fn pprof_schema() -> Schema {
    let folder = crate::workspace_root().join("proto/pprof");
    Schema::compile(&[folder.join("profile.proto")], &[folder])
}

/// The OTLP profiles schema as the opentelemetry-proto crate the workspace
/// builds with ships it (the crate's own `.proto` files, found through
/// `cargo metadata` limited to the platform the tests are built for: without
/// `--filter-platform`, cargo asks for every platform's dependencies, which
/// only a machine that happened to download them has).
pub fn otlp_profiles_schema() -> Schema {
    let root = opentelemetry_proto_folder().join("src/proto/opentelemetry-proto");
    let service = "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto";
    Schema::compile(&[root.join(service)], &[root])
}

fn opentelemetry_proto_folder() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            env!("PROFBRIDGE_BUILD_TARGET"),
            "--manifest-path",
        ])
        .arg(crate::workspace_root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("a list of packages");
    let manifest = packages
        .iter()
        .find(|package| package["name"] == "opentelemetry-proto")
        .and_then(|package| package["manifest_path"].as_str())
        .expect("the workspace depends on opentelemetry-proto");
    Path::new(manifest)
        .parent()
        .expect("a manifest is in its package's folder")
        .to_path_buf()
}
