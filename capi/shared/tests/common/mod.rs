//! What the integration tests that link hostrt's libraries share (these of
//! `capi/shared`, and `tools/tests/app_*.rs`, which include this file).

use std::path::PathBuf;
use std::process::Command;

/// The library `file` (`libhostrt_c.a`, ...) of `package` for this test build: the one in its
/// target directory (from `cargo build -p PACKAGE`, which scripts/test.sh runs first), else
/// built here into `target/test-libs` (`cargo test` builds rlibs only; a separate target
/// directory, as the running `cargo test` may hold the lock of its own).
pub fn built_library(file: &str, package: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let profile = deps.parent().unwrap().to_path_buf();
    let release = profile.file_name().is_some_and(|n| n == "release");
    let own = profile.parent().unwrap().join("test-libs");
    let built = own.join(if release { "release" } else { "debug" }).join(file);
    if let Some(found) = [deps.join(file), profile.join(file), built.clone()].into_iter().find(|p| p.exists())
    {
        return found;
    }
    eprintln!("building {file}: cargo build -p {package} --target-dir {}", own.display());
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.args(["build", "-q", "-p", package, "--target-dir"]).arg(&own);
    if release {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("run cargo");
    assert!(status.success(), "cargo build -p {package} failed");
    assert!(built.exists(), "cargo build -p {package} made no {}", built.display());
    built
}
