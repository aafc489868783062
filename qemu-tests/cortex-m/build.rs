//! Puts the memory map of the board chosen by the cargo config (`HOSTRT_BOARD`, set by
//! targets/<board>/cargo.toml) where the linker script finds it (`INCLUDE memory.x`).
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-env-changed=HOSTRT_BOARD");
    let board = env::var("HOSTRT_BOARD").expect(
        "HOSTRT_BOARD is unset: build through .cargo/config.toml, which includes targets/<board>/cargo.toml",
    );
    let map = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets").join(&board).join("memory.x");
    fs::copy(&map, out.join("memory.x")).unwrap_or_else(|e| panic!("{}: {e}", map.display()));
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={}", map.display());
    // cortex-m-rt's linker script (it includes memory.x).
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
}
