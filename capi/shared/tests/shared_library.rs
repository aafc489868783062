//! The shared library `libhostrt.so` (this package's cdylib) exports every function the
//! headers declare, and a C program linked against it can use the API and load a plugin
//! whose `TF_*` symbols the library resolves. Linux only (the test reads ELF symbols with
//! `nm` and links with `cc`); skips, with a message, where the tools are missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `libhostrt.so` as Cargo built it for this test run (next to the test binary).
fn shared_library() -> PathBuf {
    common::built_library("libhostrt.so", "hostrt-c-shared")
}

fn run(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    assert!(
        out.status.success(),
        "{cmd:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_shared_library_exports_the_declared_functions() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the check reads ELF dynamic symbols");
        return;
    }
    let lib = shared_library();
    let Some(symbols) = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib)) else {
        eprintln!("skipped: no nm");
        return;
    };
    let mut exported: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("TF_"))
        .collect();
    exported.sort();
    let mut declared: Vec<&str> = hostrt_c::tf::plugins::EXPORTS.iter().map(|e| e.0).collect();
    declared.sort();
    assert_eq!(exported, declared, "TF_* functions exported by {} vs declared", lib.display());
    // And every function of the embedding API's header.
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/hostrt/hostrt.h");
    let header = std::fs::read_to_string(header).unwrap();
    let embedding: Vec<&str> = header
        .split('(')
        .filter_map(|before| before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next())
        .filter(|w| w.starts_with("hostrt_"))
        .collect();
    assert!(embedding.len() > 30, "{embedding:?}");
    for f in embedding {
        assert!(symbols.lines().any(|l| l.split_whitespace().nth(2) == Some(f)), "{f} is not exported");
    }
}

#[test]
fn a_c_program_linked_with_it_loads_a_plugin() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: builds ELF shared objects");
        return;
    }
    let lib = shared_library();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let include = root.join("include");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shared-library");
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("libscale_by.so");
    let built = run(Command::new("cc")
        .args(["-shared", "-fPIC", "-std=c11", "-I"])
        .arg(&include)
        .arg(root.join("../examples/plugins/c/scale_by.c"))
        .arg("-o")
        .arg(&plugin));
    if built.is_none() {
        eprintln!("skipped: no cc");
        return;
    }
    let program = dir.join("uses_libhostrt");
    run(Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&include)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/shared_library.c"))
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .arg("-ldl")
        .arg("-o")
        .arg(&program))
    .unwrap();
    let out = run(Command::new(&program).arg(&plugin).arg("ScaleBy")).unwrap();
    assert!(!out.contains("FAILED"), "{out}");
    assert!(out.contains("ok: the plugin's op is in the library's registry"), "{out}");
    assert!(out.contains("ScaleBy"), "the refusal names the op: {out}");
}
