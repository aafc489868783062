//! `hostrt run` has the device kernels: a `vk.*` program runs on the Vulkan device (or, with
//! none, fails at its first device kernel with the device's error), and the int8 `dsp.*`
//! kernels run the quantized digits model.

use std::process::Command;

#[allow(dead_code)] // only the Vulkan program is used here
mod suites;

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().expect("run hostrt");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_vulkan_program_runs_on_the_device() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("devices");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vk.mlir");
    std::fs::write(&path, suites::VK_MATMUL).unwrap();
    let (_, out, err) = run(&["run", path.to_str().unwrap()]);
    let product = "values = [7.000000e+00, 1.000000e+01, 1.500000e+01, 2.200000e+01]";
    if out.contains(product) {
        return;
    }
    let required = std::env::var("HOSTRT_REQUIRE_VULKAN").is_ok_and(|v| v == "1");
    assert!(!required && err.contains("no Vulkan"), "stdout:\n{out}\nstderr:\n{err}");
    eprintln!("SKIP: no Vulkan device ({err})");
}

#[test]
fn the_quantized_digits_model_runs_on_the_dsp_kernels() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/firmware/programs/digits_q8.mlir");
    let text = std::fs::read_to_string(path).unwrap();
    let reference =
        text.lines().find_map(|l| l.strip_prefix("// reference classes: ")).unwrap().replace(' ', ", ");
    let (ok, out, err) = run(&["run", "--functions", "digits", path]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("shape = [360], values = [{reference}]")), "{out}");
}
