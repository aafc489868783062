//! The C example app (`examples/app-c`) built against the static library `libhostrt.a`
//! and run on the digits model: its classes equal what `hostrt run` prints for the same
//! program. (Under qemu-user for aarch64: `scripts/qemu.sh app`.) Skips, with a message,
//! where no C compiler is installed.

// The library-building helper the shared library's tests use too.
#[path = "../../capi/shared/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn ok(cmd: &mut Command) -> Option<String> {
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
fn the_c_app_prints_what_hostrt_run_prints() {
    // `cargo test` builds rlibs only: the static library comes from `cargo build -p
    // hostrt-c`, which scripts/test.sh runs first, and which names it after its crate (apps
    // link the same archive as `libhostrt.a`).
    let lib = common::built_library("libhostrt_c.a", "hostrt-c");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app-c");
    std::fs::create_dir_all(&dir).unwrap();
    let (app, bef) = (dir.join("app"), dir.join("digits.bef"));
    let program = root().join("examples/app-c/digits.mlir");
    let built = ok(Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join("examples/app-c/main.c"))
        .arg(&lib)
        .args(["-ldl", "-lpthread", "-lm", "-o"])
        .arg(&app));
    if built.is_none() {
        eprintln!("skipped: no cc");
        return;
    }
    let hostrt = env!("CARGO_BIN_EXE_hostrt");
    ok(Command::new(hostrt).arg("compile").arg(&program).arg("-o").arg(&bef)).unwrap();
    let expected: String = ok(Command::new(hostrt).arg("run").arg(&program))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("DenseHostTensor"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(expected.contains("shape = [360]"), "{expected}");
    let printed = ok(Command::new(&app).arg(&bef)).unwrap();
    assert_eq!(printed, expected);
}
