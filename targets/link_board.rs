//! Links the memory map of the board the cargo config chose (`HOSTRT_BOARD`, set by
//! targets/<board>/cargo.toml). Included with `#[path]` by the build scripts of the images
//! in `examples/` and `qemu-tests/`, which keep no copy of their own.

use std::{env, fs, path::PathBuf};

/// Put targets/$HOSTRT_BOARD/memory.x where the linker finds it and pass `scripts` (the
/// runtime crate's linker scripts, in order) to the image's binaries.
pub fn link_board(scripts: &[&str]) {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-env-changed=HOSTRT_BOARD");
    let board = env::var("HOSTRT_BOARD").expect(
        "HOSTRT_BOARD is unset: build through .cargo/config.toml, which includes targets/<board>/cargo.toml",
    );
    let map = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets").join(&board).join("memory.x");
    fs::copy(&map, out.join("memory.x")).unwrap_or_else(|e| panic!("{}: {e}", map.display()));
    // cortex-m-rt's `device` feature includes device.x, where a device crate names its
    // interrupt handlers; these images use none (targets/interrupts.rs).
    fs::write(out.join("device.x"), "/* no device crate: every interrupt is DefaultHandler */\n")
        .unwrap_or_else(|e| panic!("device.x: {e}"));
    println!("cargo:rerun-if-env-changed=HOSTRT_BOARD_IRQS");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={}", map.display());
    for script in scripts {
        println!("cargo:rustc-link-arg-bins=-T{script}");
    }
}
