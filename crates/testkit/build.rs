//! Passes the target triple to the tests' code: `cargo metadata` must be
//! limited to the platform being built, whose dependencies are the only
//! ones a fresh machine has downloaded.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=PROFBRIDGE_BUILD_TARGET={target}");
    }
}
