//! Compiles `programs/*.mlir` to BEF at build time (the firmware embeds the bytes) and puts
//! the memory map of the board chosen by the cargo config (`HOSTRT_BOARD`, set by
//! targets/<board>/cargo.toml) where cortex-m-rt's link.x finds it.
use std::{env, fs, path::PathBuf};

const PROGRAMS: [&str; 6] = ["fib", "errors", "loops", "fib_quiet", "digits", "digits_q8"];

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
    for p in PROGRAMS {
        let name = format!("programs/{p}.mlir");
        println!("cargo:rerun-if-changed={name}");
        let text = fs::read_to_string(&name).expect("read program");
        // One stream per call: depth-first execution keeps the arena small on a device
        // (TFRT's stream assignment would queue recursive calls' work as tasks).
        let options = hostrt_compiler::bef::WriteOptions { streams: false };
        let bef = hostrt_compiler::compile(&name, &text, options).unwrap_or_else(|e| panic!("{e}"));
        fs::write(out.join(format!("{p}.bef")), bef).expect("write BEF");
    }
}
