//! Compiles `programs/*.mlir` to BEF at build time (the firmware embeds the bytes, verified
//! here with hostrt-core's reader, so images may skip verifying them on the device) and puts
//! the memory map of the board chosen by the cargo config (`HOSTRT_BOARD`, set by
//! targets/<board>/cargo.toml) where cortex-m-rt's link.x finds it. The model images'
//! `.tflite` files (import/tests/models) are imported here too, with their test input and the
//! host's output as raw bytes.
use std::{env, fs, path::PathBuf};

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
    // defmt's section of interned format strings, for the image that prints through it.
    println!("cargo:rustc-link-arg-bin=hostrt-firmware-example=-Tdefmt.x");
    for p in PROGRAMS {
        let name = format!("programs/{p}.mlir");
        println!("cargo:rerun-if-changed={name}");
        let text = fs::read_to_string(&name).expect("read program");
        // One stream per call: depth-first execution keeps the arena small on a device
        // (TFRT's stream assignment would queue recursive calls' work as tasks).
        // The minimal image's program keeps no source locations: that image reports errors
        // as codes only (264 bytes less flash for fib).
        let locations = p != "fib_quiet";
        let options = hostrt_compiler::bef::WriteOptions { streams: false, locations };
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
        hostrt_import::build::embed_tflite(&model, &out, m)
            .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
        // The test input and the expected output (TensorFlow Lite Micro's, which the host run
        // equals bit for bit: import/tests/tflite_models.rs) as raw tensor bytes.
        for part in ["input", "output"] {
            let path = models.join(format!("{m}.{part}.npy"));
            println!("cargo:rerun-if-changed={}", path.display());
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let tensor =
                hostrt_import::npy::read(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            fs::write(out.join(format!("{m}.{part}.bin")), tensor.data).expect("write tensor bytes");
        }
    }
}
