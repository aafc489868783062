//! The C image classifier (`examples/app-tflite`) built against the static library
//! `libhostrt.a`: it imports the int8 MobileNetV1 visual-wake-words model through
//! `hostrt_program_from_tflite_file` and prints the scores TensorFlow Lite Micro gives for
//! the same image (the model test's golden). Skips, with a message, where no C compiler is
//! installed.

// The library-building helper the shared library's tests use too.
#[path = "../../capi/shared/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn the_c_classifier_prints_tflite_micros_scores() {
    // The static library comes from `cargo build -p hostrt-c` (scripts/test.sh runs it), which
    // names it after its crate: apps link the same archive as `libhostrt.a`.
    let lib = common::built_library("libhostrt_c.a", "hostrt-c");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app-tflite");
    std::fs::create_dir_all(&dir).unwrap();
    let app = dir.join("classify");
    let built = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join("examples/app-tflite/main.c"))
        .arg(&lib)
        .args(["-ldl", "-lpthread", "-lm", "-o"])
        .arg(&app)
        .output();
    let Ok(built) = built else {
        eprintln!("skipped: no cc");
        return;
    };
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let models = root().join("import/tests/models");
    let name = "mobilenet_v1_vww_i8";
    let out = Command::new(&app)
        .arg(models.join(format!("{name}.tflite")))
        .arg(models.join(format!("{name}.input.npy")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let golden =
        hostrt_import::npy::read(&std::fs::read(models.join(format!("{name}.output.npy"))).unwrap()).unwrap();
    let scores: Vec<String> = golden.data.iter().map(|&b| (b as i8).to_string()).collect();
    let best =
        golden.data.iter().enumerate().max_by_key(|&(i, &b)| (b as i8, std::cmp::Reverse(i))).unwrap().0;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("scores: {}\nclass: {best}\n", scores.join(" "))
    );
    // A file that is not a model is refused with the reason.
    let bad = Command::new(&app)
        .arg(models.join(format!("{name}.input.npy")))
        .arg(models.join(format!("{name}.input.npy")))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a TensorFlow Lite model"));
}
