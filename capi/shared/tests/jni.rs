//! The Android binding's Java classes (`examples/android`) on the host's JDK, over this
//! package's `libhostrt.so` (built with the JNI functions): `ProgramTest` calls scalar and
//! tensor functions, checks errors, imports a TensorFlow Lite model (`Program.fromTflite`)
//! and an ONNX model (`Program.fromOnnx`) and compares their outputs with the goldens, and
//! classifies the digits, which must equal what the C API returns for the same program, with
//! the call traced (`Program.traceBegin/traceEnd`). Skips, with a message, without `javac`
//! and `java`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hostrt_c::embed::*;

const CALLS: &str = r#"func.func @divmod(%a: i32, %b: i32) -> (i32, i32) {
  %q, %r = tfrt.div.i32 %a, %b
  tfrt.return %q, %r : i32, i32
}

func.func @same(%x: !t.tensor) -> !t.tensor {
  tfrt.return %x : !t.tensor
}
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn compile(name: &str, text: &str, out: &Path) {
    let bef = hostrt_compiler::compile(name, text, Default::default()).unwrap();
    std::fs::write(out, bef).unwrap();
}

/// The digits' classes through the C API, printed as `hostrt run` prints tensors.
fn classes_through_the_c_api(bef: &Path) -> String {
    let path = std::ffi::CString::new(bef.to_str().unwrap()).unwrap();
    // SAFETY: handles from the API, used and destroyed in order; outputs are locals.
    unsafe {
        let s = hostrt_status_new();
        let host = hostrt_host_new(std::ptr::null(), s);
        let p = hostrt_program_load_file(host, path.as_ptr(), s);
        let mut r = std::ptr::null_mut();
        assert_eq!(hostrt_call(p, c"test_images".as_ptr(), std::ptr::null(), 0, &mut r, s), HOSTRT_OK);
        let mut x = std::mem::zeroed();
        assert_eq!(hostrt_results_get(r, 0, &mut x, s), HOSTRT_OK);
        hostrt_results_destroy(r, s);
        assert_eq!(hostrt_call(p, c"classify".as_ptr(), &x, 1, &mut r, s), HOSTRT_OK);
        let mut c: hostrt_value = std::mem::zeroed();
        assert_eq!(hostrt_results_get(r, 0, &mut c, s), HOSTRT_OK);
        let n = *hostrt_tensor_dims(c.tensor) as usize;
        let values = std::slice::from_raw_parts(hostrt_tensor_data(c.tensor).cast::<i32>(), n);
        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let line = format!("DenseHostTensor dtype = i32, shape = [{n}], values = [{}]\n", list.join(", "));
        for t in [x.tensor, c.tensor] {
            hostrt_tensor_destroy(t, s);
        }
        hostrt_results_destroy(r, s);
        hostrt_program_destroy(p, s);
        assert_eq!(hostrt_host_destroy(host, s), HOSTRT_OK);
        hostrt_status_destroy(s);
        line
    }
}

#[test]
fn the_java_classes_run_programs_through_jni() {
    let have = |tool: &str| Command::new(tool).arg("-version").output().is_ok_and(|o| o.status.success());
    if !have("javac") || !have("java") {
        eprintln!("skipped: needs javac and java (a JDK)");
        return;
    }
    let lib = common::built_library("libhostrt.so", "hostrt-c-shared");
    let lib_dir = lib.parent().unwrap().to_path_buf();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jni");
    let classes = dir.join("classes");
    std::fs::create_dir_all(&classes).unwrap();
    let android = root().join("examples/android");
    let sources: Vec<PathBuf> = ["Program", "Tensor", "HostrtException"]
        .iter()
        .map(|c| android.join(format!("java/ai/hostrt/{c}.java")))
        .chain([android.join("test/ai/hostrt/ProgramTest.java")])
        .collect();
    let built = Command::new("javac").arg("-Werror").arg("-d").arg(&classes).args(&sources).output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let (calls, digits, trace) = (dir.join("calls.bef"), dir.join("digits.bef"), dir.join("trace.json"));
    let _ = std::fs::remove_file(&trace);
    compile("calls.mlir", CALLS, &calls);
    let digits_text = std::fs::read_to_string(root().join("examples/app-c/digits.mlir")).unwrap();
    compile("digits.mlir", &digits_text, &digits);
    let out = Command::new("java")
        .arg(format!("-Djava.library.path={}", lib_dir.display()))
        .arg("-cp")
        .arg(&classes)
        .arg("ai.hostrt.ProgramTest")
        .arg(&calls)
        .arg(&digits)
        .args(
            ["fc_relu_f32.tflite", "fc_relu_f32.input.npy", "fc_relu_f32.output.npy"]
                .map(|f| root().join("import/tests/models").join(f)),
        )
        .args(
            ["cnn_small.onnx", "cnn_small.input.npy", "cnn_small.output.npy"]
                .map(|f| root().join("import/tests/models/onnx").join(f)),
        )
        .arg(&trace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, classes_through_the_c_api(&digits));
    // Program.traceEnd's JSON: the one traced call, its kernels, begins matched by ends.
    let json = std::fs::read_to_string(&trace).unwrap();
    assert!(json.starts_with("{\"traceEvents\":["), "{json}");
    assert_eq!(json.matches("\"name\":\"call @classify\",\"ph\":\"B\"").count(), 1, "{json}");
    assert!(json.contains("\"name\":\"digits.mlir:"), "kernel spans located in the program: {json}");
    assert_eq!(json.matches("\"ph\":\"B\"").count(), json.matches("\"ph\":\"E\"").count(), "{json}");
}
