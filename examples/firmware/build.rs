//! Compiles `programs/*.mlir` to BEF at build time (the firmware embeds the bytes, verified
//! here with hostrt-core's reader, so images may skip verifying them on the device) and puts
//! the memory map of the board chosen by the cargo config (`HOSTRT_BOARD`, set by
//! targets/<board>/cargo.toml) where cortex-m-rt's link.x finds it. The model images'
//! `.tflite` files (import/tests/models; for the `mcu` image, `HOSTRT_MCU_MODEL` and
//! `HOSTRT_MCU_INPUTS`) are imported here too, with their test inputs and expected output as
//! raw bytes.
use std::{
    env, fs,
    path::{Path, PathBuf},
};

#[path = "../../targets/link_board.rs"]
mod link_board;

const PROGRAMS: [&str; 7] = ["fib", "errors", "loops", "fib_quiet", "digits", "digits_q8", "native"];

/// The int8 models of the model images (`src/bin/<model>.rs`), shaped as the tiny-ML
/// benchmark suite's networks.
const MODELS: [&str; 5] =
    ["ds_cnn_i8", "mobilenet_v1_vww_i8", "resnet8_i8", "autoencoder_i8", "mobilenet_v1_person_i8"];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    // cortex-m-rt's linker script (it includes memory.x).
    link_board::link_board(&["link.x"]);
    let (_, scratch) = hostrt_std::leaked_arena(1 << 20).expect("a verification arena");
    // defmt's section of interned format strings, for the images that print through it.
    for bin in [
        "hostrt-firmware-example",
        "ds_cnn",
        "mobilenet_vww",
        "resnet8",
        "autoencoder",
        "mobilenet_person",
        "mcu",
    ] {
        println!("cargo:rustc-link-arg-bin={bin}=-Tdefmt.x");
    }
    for p in PROGRAMS {
        let name = format!("programs/{p}.mlir");
        println!("cargo:rerun-if-changed={name}");
        let text = fs::read_to_string(&name).expect("read program");
        // One stream per call: depth-first execution keeps the arena small on a device
        // (TFRT's stream assignment would queue recursive calls' work as tasks).
        // The minimal image's program keeps no source locations: that image reports errors
        // as codes only (264 bytes less flash for fib).
        let locations = p != "fib_quiet";
        let options = hostrt_compiler::bef::WriteOptions { streams: false, locations, ..Default::default() };
        let bef = hostrt_compiler::compile(&name, &text, options).unwrap_or_else(|e| panic!("{e}"));
        // The verifier of the hostrt-core the images link: what lets them load these bytes
        // with Program::load_preverified (the checksum ties the flash copy to them).
        let aligned = hostrt_std::AlignedBytes::new(&bef);
        hostrt_core::bef::BefFile::load_unresolved(aligned.as_bytes(), scratch)
            .unwrap_or_else(|e| panic!("{name}: the compiled BEF fails verification: {e}"));
        fs::write(out.join(format!("{p}.bef")), bef).expect("write BEF");
    }
    let models = PathBuf::from("../../import/tests/models");
    for m in MODELS {
        let model = models.join(format!("{m}.tflite"));
        let inputs = [models.join(format!("{m}.input.npy"))];
        embed_model(&out, m, &model, &inputs, Some(&models.join(format!("{m}.output.npy"))));
    }
    // The `mcu` image (`cargo xtask mcu`): a user's model and inputs, named by the environment;
    // without them, DS-CNN, so the image always builds.
    println!("cargo:rerun-if-env-changed=HOSTRT_MCU_MODEL");
    println!("cargo:rerun-if-env-changed=HOSTRT_MCU_INPUTS");
    println!("cargo:rerun-if-env-changed=HOSTRT_MCU_DUMP");
    // With HOSTRT_MCU_DUMP=1 (`--dump-tensors`), @main also returns every layer's output.
    let options = hostrt_import::ImportOptions {
        dump_tensors: env::var_os("HOSTRT_MCU_DUMP").is_some_and(|v| v == "1"),
        ..Default::default()
    };
    let (model, inputs) = match (env::var_os("HOSTRT_MCU_MODEL"), env::var_os("HOSTRT_MCU_INPUTS")) {
        (Some(model), Some(inputs)) => (PathBuf::from(model), env::split_paths(&inputs).collect()),
        _ => (models.join("ds_cnn_i8.tflite"), vec![models.join("ds_cnn_i8.input.npy")]),
    };
    hostrt_import::build::embed_with(&model, &[], options, &out, "mcu")
        .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    embed_data(&out, "mcu", &inputs, None);
}

/// Imports `model` as `OUT_DIR/<name>.{bef,rs}` (`embed_with`: a `.tflite` file, or an
/// `.onnx` one) and writes its test data ([`embed_data`]); `expected` is TensorFlow Lite
/// Micro's output, which the host run equals bit for bit (import/tests/tflite_models.rs).
fn embed_model(out: &Path, name: &str, model: &Path, inputs: &[PathBuf], expected: Option<&Path>) {
    hostrt_import::build::embed_with(model, &[], Default::default(), out, name)
        .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    embed_data(out, name, inputs, expected);
}

/// Writes the test data of the model image `name`: each input's bytes
/// (`<name>.input<i>.bin`), `<name>.data.rs` listing them as `INPUT_DATA`, and `EXPECTED`,
/// the bytes of `expected` or `None`.
fn embed_data(out: &Path, name: &str, inputs: &[PathBuf], expected: Option<&Path>) {
    let tensor = |path: &Path| {
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        hostrt_import::npy::read(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display())).data
    };
    let mut data = String::from("pub const INPUT_DATA: &[&[u8]] = &[");
    for (i, path) in inputs.iter().enumerate() {
        let bin = out.join(format!("{name}.input{i}.bin"));
        fs::write(&bin, tensor(path)).expect("write tensor bytes");
        data += &format!("include_bytes!({:?}), ", bin.display().to_string());
    }
    data += "];\n";
    match expected {
        Some(path) => {
            let bin = out.join(format!("{name}.output.bin"));
            fs::write(&bin, tensor(path)).expect("write tensor bytes");
            data += &format!(
                "pub const EXPECTED: Option<&[u8]> = Some(include_bytes!({:?}));\n",
                bin.display().to_string()
            );
        }
        None => data += "pub const EXPECTED: Option<&[u8]> = None;\n",
    }
    fs::write(out.join(format!("{name}.data.rs")), data).expect("write data list");
}
