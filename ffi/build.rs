//! Generates the C header from the crate's source with cbindgen, into
//! `OUT_DIR/leasehold.h`. The committed `include/leasehold.h` must be the
//! same (checked by `tests/header.rs`); with `LEASEHOLD_WRITE_HEADER=1` the
//! build writes it there too.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("leasehold.h");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=LEASEHOLD_WRITE_HEADER");
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml reads");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    bindings.write_to_file(&out);
    if std::env::var_os("LEASEHOLD_WRITE_HEADER").is_some_and(|v| v == "1") {
        bindings.write_to_file(crate_dir.join("include").join("leasehold.h"));
    }
}
