//! The programs whole-program tests run: the project's own, TFRT's conformance suites (when
//! `shared/conformance` is present) and the firmware example's.

use std::path::{Path, PathBuf};

/// The `.mlir` files of `dir`, sorted.
pub fn mlir_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    files.sort();
    files
}

/// `tests/programs` and `tests/programs/executor`.
pub fn project_programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let mut files = mlir_files(&dir);
    files.extend(mlir_files(&dir.join("executor")));
    files
}

/// TFRT's basic conformance programs, or `None` (with a message) without the suite.
pub fn conformance_programs() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/tfrt");
    if !dir.is_dir() {
        println!("skipped: no conformance suite at {}", dir.display());
        return None;
    }
    Some(mlir_files(&dir))
}

/// TFRT's tensor programs as (path, text) with their data files' paths made absolute (tests
/// share one working directory), or `None` (with a message) without the suite. Left out:
/// matmul.mlir, whose benchmark runs a 512x512x512 product up to a thousand times, and
/// kernel_errors.mlir, a verifier test that does not compile.
pub fn tensor_programs() -> Option<Vec<(PathBuf, String)>> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/tfrt-tensor");
    if !suite.is_dir() {
        println!("skipped: no tensor conformance suite at {}", suite.display());
        return None;
    }
    let suite = suite.canonicalize().unwrap();
    let mut programs = Vec::new();
    for dir in ["mlir_tests/tensor", "backends/cpu/mlir_tests/mnist", "backends/cpu/mlir_tests/resnet"] {
        for path in mlir_files(&suite.join(dir)) {
            if path.ends_with("matmul.mlir") || path.ends_with("kernel_errors.mlir") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace("\"backends/", &format!("\"{}/backends/", suite.display()));
            programs.push((path, text));
        }
    }
    Some(programs)
}

/// A Vulkan program: a 2x2 product on the device, brought back and printed
/// (`values = [7.000000e+00, 1.000000e+01, 1.500000e+01, 2.200000e+01]`).
#[allow(dead_code)] // devices.rs and profile.rs use it, the other suites not
pub const VK_MATMUL: &str = r#"func.func @vk() {
  %ch0 = tfrt.new.chain
  %a = "tfrt_dht.const_dense_tensor"() { value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> } : () -> !tfrt_tensor.tensor
  %da = "vk.to_device"(%a) : (!tfrt_tensor.tensor) -> !vk.tensor
  %dp = "vk.matmul.f32"(%da, %da) : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %p = "vk.to_host"(%dp) : (!vk.tensor) -> !tfrt_tensor.tensor
  %ch1 = tfrt_dht.print_tensor %p, %ch0
  tfrt.return
}
"#;
