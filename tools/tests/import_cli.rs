//! `hostrt import` and `hostrt infer` on a test model of hostrt-import: the BEF carries the
//! measured call arena, inference writes the golden output (TFLite Micro's, bit-exact), and
//! `--dump-tensors` writes every layer's output.

use std::path::{Path, PathBuf};
use std::process::Command;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/models")
}

fn hostrt(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn import_then_infer_gives_the_golden_and_every_layer() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("import-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (model, bef) = (models().join("ds_cnn_i8.tflite"), dir.join("kws.bef"));
    let printed = hostrt(&["import".as_ref(), model.as_os_str(), "-o".as_ref(), bef.as_os_str()]);
    assert!(printed.contains("DEPTHWISE_CONV_2D                3  nn.depthwise_conv_2d.i8"), "{printed}");
    assert!(printed.contains("activation arena: 8000 bytes planned"), "{printed}");
    let bits = usize::BITS;
    assert!(
        printed
            .contains(&format!("bytes on {bits}-bit targets, measured on zero inputs (recorded in the BEF)"))
    );
    assert_eq!(printed.contains("on 32-bit targets: at most"), bits == 64, "{printed}");

    let input = models().join("ds_cnn_i8.input.npy");
    let (out, layers) = (dir.join("out"), dir.join("layers"));
    let args = [
        "infer".as_ref(),
        bef.as_os_str(),
        "--input".as_ref(),
        input.as_os_str(),
        "--output-dir".as_ref(),
        out.as_os_str(),
    ];
    hostrt(&args);
    let golden = std::fs::read(models().join("ds_cnn_i8.output.npy")).unwrap();
    let got = std::fs::read(out.join("out0.npy")).unwrap();
    let data = |npy: &[u8]| hostrt_import::npy::read(npy).unwrap().data;
    assert_eq!(data(&got), data(&golden));

    // Layer by layer, from the model itself: one file per operator output but the last.
    hostrt(&[
        "infer".as_ref(),
        model.as_os_str(),
        "--input".as_ref(),
        input.as_os_str(),
        "--dump-tensors".as_ref(),
        layers.as_os_str(),
    ]);
    let files = std::fs::read_dir(&layers).unwrap().count();
    assert_eq!(files, 12, "one .npy per operator output, and layers.txt");
    // Listed in execution order: the first convolution first, the output (result 0) last.
    let list = std::fs::read_to_string(layers.join("layers.txt")).unwrap();
    let rows: Vec<Vec<&str>> = list.lines().skip(1).map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 11, "{list}");
    assert_eq!((rows[0][0], rows[0][3]), ("1", "op#0 CONV_2D"), "{list}");
    assert_eq!((rows[10][0], rows[10][4]), ("0", "-"), "{list}");
    assert!(rows[10][3].ends_with("SOFTMAX"), "{list}");
    let last = std::fs::read(layers.join(rows[10][1])).unwrap();
    assert_eq!(data(&last), data(&golden), "the dumped output is the output");
}

#[test]
fn onnx_models_import_and_infer_with_bound_dimensions() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("import-cli-onnx");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = models().join("onnx/cnn_small.onnx");
    let bef = dir.join("cnn.bef");
    let printed = hostrt(&["import".as_ref(), model.as_os_str(), "-o".as_ref(), bef.as_os_str()]);
    assert!(printed.contains("Conv                             4  nn.copy, nn.conv_2d.f32"), "{printed}");
    // The symbolic batch dimension bound to 3: the program takes three images.
    let mlir = dir.join("cnn3.mlir");
    let args = ["import", "--dim", "batch=3"].map(std::ffi::OsStr::new);
    hostrt(&[&args[..], &[model.as_os_str(), "-o".as_ref(), mlir.as_os_str()]].concat());
    let text = std::fs::read_to_string(&mlir).unwrap();
    assert!(text.contains("shape = [3 : i32, 3 : i32, 16 : i32, 16 : i32]"), "{text}");

    let (input, out) = (models().join("onnx/cnn_small.input.npy"), dir.join("out"));
    let args = [
        "infer".as_ref(),
        model.as_os_str(),
        "--input".as_ref(),
        input.as_os_str(),
        "--output-dir".as_ref(),
        out.as_os_str(),
    ];
    hostrt(&args);
    let f32s = |p: &Path| {
        let t = hostrt_import::npy::read(&std::fs::read(p).unwrap()).unwrap();
        t.data.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect::<Vec<_>>()
    };
    let (got, want) = (f32s(&out.join("out0.npy")), f32s(&models().join("onnx/cnn_small.output.npy")));
    assert!(
        got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs().max(1.0)),
        "{got:?} vs {want:?}"
    );
}
