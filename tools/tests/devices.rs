//! `hostrt run` has the device kernels: a `vk.*` program runs on the Vulkan device (or, with
//! none, fails at its first device kernel with the device's error), and the int8 `dsp.*`
//! kernels run the quantized digits model.

use std::process::Command;

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
    std::fs::write(
        &path,
        r#"func.func @vk() {
  %ch0 = tfrt.new.chain
  %a = "tfrt_dht.const_dense_tensor"() { value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> } : () -> !tfrt_tensor.tensor
  %da = "vk.to_device"(%a) : (!tfrt_tensor.tensor) -> !vk.tensor
  %dp = "vk.matmul.f32"(%da, %da) : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %p = "vk.to_host"(%dp) : (!vk.tensor) -> !tfrt_tensor.tensor
  %ch1 = tfrt_dht.print_tensor %p, %ch0
  tfrt.return
}
"#,
    )
    .unwrap();
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
