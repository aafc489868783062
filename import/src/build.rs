//! For firmware build scripts: a `.tflite` or `.onnx` model imported at build time into a BEF file the
//! image embeds with `hostrt_core::include_bef!`, verified here by the reader the image links
//! (so it may load the bytes with `Program::load_preverified`), and a Rust file of constants
//! that size the image's static memory (docs/models.md, "Firmware").

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{ArenaNeeds, ImportError, ImportOptions, Report};

/// The system heap as an allocator for the reader's scratch, registered once per process
/// (a build script may embed several models).
fn verifier() -> Result<hostrt_core::Allocator, ImportError> {
    static ALLOC: OnceLock<Result<hostrt_core::Allocator, String>> = OnceLock::new();
    ALLOC
        .get_or_init(|| {
            let system: &'static hostrt_std::SystemAllocator =
                Box::leak(Box::new(hostrt_std::SystemAllocator::new()));
            hostrt_core::Allocator::register(system).map_err(|e| format!("{e:?}"))
        })
        .clone()
        .map_err(|e| ImportError::model(format!("an allocator for verification: {e}")))
}

/// What [`embed_tflite`] or [`embed_onnx`] wrote.
#[derive(Clone, Debug)]
pub struct Embedded {
    /// `OUT_DIR/<name>.bef`: the program, for `include_bef!`.
    pub bef: PathBuf,
    /// `OUT_DIR/<name>.rs`: `pub const FIXED_ARENA_BYTES: usize` (the `FixedArena` the
    /// target needs, the BEF's figure for its pointer size), `ARENA_BYTES` (the planned
    /// activation arena), `OUTPUT_BYTES` (the model's outputs, which `@main` returns as
    /// tensors), `WEIGHT_BYTES`, `INPUTS` and `KERNELS`, for `include!`.
    pub constants: PathBuf,
    pub report: Report,
    /// The arena the BEF records.
    pub arena: ArenaNeeds,
}

/// Imports `model` into `out_dir` as `<name>.bef` and `<name>.rs`, and asks cargo to rerun
/// the build script when the model changes. The BEF records the arena it needs
/// ([`Imported::to_bef_with_arena`](crate::Imported::to_bef_with_arena)); the target's pointer
/// size is cargo's `CARGO_CFG_TARGET_POINTER_WIDTH` (this machine's outside a build script).
/// Fails with the import error (naming the operator or tensor), an I/O error, a BEF the
/// reader refuses, or a target without an arena figure (pointers wider than this machine's).
///
/// In a firmware crate's `build.rs`:
///
/// ```no_run
/// let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
/// hostrt_import::build::embed_tflite("models/kws.tflite".as_ref(), &out, "kws").unwrap();
/// ```
///
/// and in the image: `static KWS: &[u8] = hostrt_core::include_bef!(concat!(env!("OUT_DIR"),
/// "/kws.bef"));` with `mod kws { include!(concat!(env!("OUT_DIR"), "/kws.rs")); }` for
/// `kws::ARENA_BYTES`.
pub fn embed_tflite(model: &Path, out_dir: &Path, name: &str) -> Result<Embedded, ImportError> {
    embed(model, import(model, false, &[], ImportOptions::default())?, out_dir, name)
}

/// [`embed_tflite`] for an ONNX model (docs/onnx.md): float or QDQ int8, with any external
/// data next to it and every symbolic dimension but a leading batch (taken as 1) bound by
/// `dims`.
///
/// ```no_run
/// let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
/// hostrt_import::build::embed_onnx("models/kws.onnx".as_ref(), &[], &out, "kws").unwrap();
/// ```
pub fn embed_onnx(
    model: &Path,
    dims: &[(String, usize)],
    out_dir: &Path,
    name: &str,
) -> Result<Embedded, ImportError> {
    embed(model, import(model, true, dims, ImportOptions::default())?, out_dir, name)
}

/// [`embed_tflite`], or [`embed_onnx`] for a file named `.onnx`, imported as `options` say:
/// with [`ImportOptions::dump_tensors`], an image whose `@main` also returns every layer's
/// output (`cargo xtask mcu --dump-tensors`, docs/profiling.md).
pub fn embed_with(
    model: &Path,
    dims: &[(String, usize)],
    options: ImportOptions,
    out_dir: &Path,
    name: &str,
) -> Result<Embedded, ImportError> {
    let onnx = model.extension().is_some_and(|e| e == "onnx");
    embed(model, import(model, onnx, dims, options)?, out_dir, name)
}

/// The model file at `model`, imported (ONNX or TensorFlow Lite); cargo reruns the build
/// script when it changes.
fn import(
    model: &Path,
    onnx: bool,
    dims: &[(String, usize)],
    options: ImportOptions,
) -> Result<crate::Imported, ImportError> {
    println!("cargo:rerun-if-changed={}", model.display());
    if onnx {
        return crate::onnx_file(model, dims, options);
    }
    let bytes = std::fs::read(model).map_err(|e| ImportError::model(format!("{}: {e}", model.display())))?;
    crate::tflite_with(&bytes, options)
}

/// Writes `imported` (from `model`) as `<name>.bef` and `<name>.rs` in `out_dir`.
fn embed(
    model: &Path,
    imported: crate::Imported,
    out_dir: &Path,
    name: &str,
) -> Result<Embedded, ImportError> {
    let io = |p: &Path, e: std::io::Error| ImportError::model(format!("{}: {e}", p.display()));
    let (bef, needs) = imported.to_bef_with_arena()?;
    let pointer_bytes = match std::env::var("CARGO_CFG_TARGET_POINTER_WIDTH") {
        Ok(bits) => {
            bits.parse::<usize>().map_err(|_| ImportError::model(format!("pointer width {bits}")))? / 8
        }
        Err(_) => size_of::<usize>(),
    };
    let fixed_arena = needs.for_pointer_bytes(pointer_bytes).ok_or_else(|| {
        ImportError::model(format!("no arena figure for {pointer_bytes}-byte pointers from this machine"))
    })?;
    // The verifier of the hostrt-core the image links.
    let aligned = hostrt_std::AlignedBytes::new(&bef);
    let file = hostrt_core::bef::BefFile::load_unresolved(aligned.as_bytes(), verifier()?)
        .map_err(|e| ImportError::model(format!("the imported BEF fails verification: {e}")))?;
    let mut kernels = (0..file.num_kernel_names() as u32)
        .map(|k| kernel_entry(file.kernel_name(k)))
        .collect::<Result<Vec<_>, _>>()?;
    kernels.sort();
    kernels.dedup();
    let inputs: Vec<String> =
        imported.inputs.iter().map(|(t, shape)| format!("(\"{t}\", &{shape:?})")).collect();
    let r = &imported.report;
    let constants = format!(
        "// Generated by hostrt_import::build from {}.\n\
         /// The `FixedArena` capacity that loads the program and makes one call, bytes,\n\
         /// for this target's pointer size (the BEF's ARENA or ARENA_ALT record). Counted\n\
         /// from the buffer's first 64-byte boundary: `static_buffer!(FIXED_ARENA_BYTES + 63)`.\n\
         pub const FIXED_ARENA_BYTES: usize = {};\n\
         /// The planned activation arena (`nn.arena`), bytes.\n\
         pub const ARENA_BYTES: usize = {};\n\
         /// The model's outputs, which `@main` returns as tensors, bytes.\n\
         pub const OUTPUT_BYTES: usize = {};\n\
         /// The weights, read in place from the embedded program, bytes.\n\
         pub const WEIGHT_BYTES: usize = {};\n\
         /// `@main`'s inputs: element type (`i8`, `f32`, ...) and shape.\n\
         pub const INPUTS: &[(&str, &[i64])] = &[{}];\n\
         /// The kernels the program calls, for a `hostrt_core::kernel::KernelTable` (the image\n\
         /// links only these).\n\
         pub const KERNELS: [hostrt_core::kernel::KernelEntry; {}] = [{}];\n",
        model.display(),
        fixed_arena,
        r.arena_bytes,
        r.output_bytes,
        r.weight_bytes,
        inputs.join(", "),
        kernels.len(),
        kernels.join(", "),
    );
    let (bef_path, rs_path) = (out_dir.join(format!("{name}.bef")), out_dir.join(format!("{name}.rs")));
    std::fs::write(&bef_path, &bef).map_err(|e| io(&bef_path, e))?;
    std::fs::write(&rs_path, constants).map_err(|e| io(&rs_path, e))?;
    Ok(Embedded { bef: bef_path, constants: rs_path, report: imported.report, arena: needs })
}

/// The path of kernel `name`'s `KernelEntry` constant: `hostrt_ops::entries::CONV_2D_I8` for
/// `nn.conv_2d.i8` (the naming rule of `hostrt_ops::entries`).
fn kernel_entry(name: &str) -> Result<String, ImportError> {
    match name.strip_prefix("nn.") {
        Some(k) => Ok(format!("hostrt_ops::entries::{}", k.to_uppercase().replace('.', "_"))),
        None if name == "tfrt.new.chain" => Ok("hostrt_core::basic_kernels::integer::NEW_CHAIN".into()),
        None => Err(ImportError::model(format!("kernel {name} has no KernelEntry constant for firmware"))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_becomes_a_verified_bef_and_its_constants() {
        let dir = std::env::temp_dir().join(format!("hostrt-embed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/ds_cnn_i8.tflite");
        let e = super::embed_tflite(&model, &dir, "kws").unwrap();
        let bef = std::fs::read(&e.bef).unwrap();
        assert!(bef.starts_with(&hostrt_core::bef::format::MAGIC));
        let constants = std::fs::read_to_string(&e.constants).unwrap();
        assert!(constants.contains(&format!("pub const ARENA_BYTES: usize = {};", e.report.arena_bytes)));
        // Outside a build script the target is this machine.
        let here = format!("pub const FIXED_ARENA_BYTES: usize = {};", e.arena.here);
        assert!(constants.contains(&here), "{constants}");
        // The BEF records the same figures, for each pointer size.
        let aligned = hostrt_std::AlignedBytes::new(&bef);
        let file = hostrt_core::bef::BefFile::load_unresolved(aligned.as_bytes(), super::verifier().unwrap())
            .unwrap();
        let need = |p| file.arena_need_for(0, p).map(|n| (n.bytes, n.measured));
        assert_eq!(need(size_of::<usize>() as u8), Some((e.arena.here, true)));
        assert_eq!(need(4), e.arena.bound_32.map(|b| (b, false)).or(need(size_of::<usize>() as u8)));
        assert!(e.arena.here > e.report.arena_bytes + e.report.output_bytes + 490, "inputs, arena, outputs");
        assert!(constants.contains("pub const OUTPUT_BYTES: usize = 12;"), "{constants}");
        assert!(constants.contains("pub const INPUTS: &[(&str, &[i64])] = &[(\"i8\", &[1, 49, 10, 1])];"));
        // The nine kernels DS-CNN calls: its five layer kinds, the arena, input, output, chain.
        for k in ["NEW_CHAIN", "entries::CONV_2D_I8", "entries::DEPTHWISE_CONV_2D_I8", "entries::SOFTMAX_I8"]
        {
            assert!(constants.contains(k), "{k}: {constants}");
        }
        assert!(constants.contains("KernelEntry; 9] = ["), "{constants}");
        // A model that does not import is the import's error, and writes nothing.
        let bad = dir.join("bad.tflite");
        std::fs::write(&bad, b"not a model").unwrap();
        assert!(
            super::embed_tflite(&bad, &dir, "bad")
                .unwrap_err()
                .to_string()
                .contains("not a TensorFlow Lite model")
        );
        assert!(!dir.join("bad.bef").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_qdq_onnx_model_embeds_with_int8_kernels_only() {
        let dir = std::env::temp_dir().join(format!("hostrt-embed-onnx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/onnx/cnn_small_qdq_s8.onnx");
        let e = super::embed_onnx(&model, &[], &dir, "cnn").unwrap();
        let constants = std::fs::read_to_string(&e.constants).unwrap();
        assert!(constants.contains("pub const INPUTS: &[(&str, &[i64])] = &[(\"f32\", &[1, 3, 16, 16])];"));
        for k in ["entries::CONV_2D_I8", "entries::DEPTHWISE_CONV_2D_I8", "entries::FULLY_CONNECTED_I8"] {
            assert!(constants.contains(k), "{k}: {constants}");
        }
        let bad = dir.join("bad.onnx");
        std::fs::write(&bad, b"not a model").unwrap();
        assert!(
            super::embed_onnx(&bad, &[], &dir, "bad").unwrap_err().to_string().contains("not an ONNX model")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_kernel_has_a_distinct_constant() {
        // hostrt_ops::entries' rule; the firmware build compiles the paths themselves.
        let mut paths: Vec<String> =
            hostrt_ops::KERNELS.iter().map(|k| super::kernel_entry(k.name).unwrap()).collect();
        assert_eq!(
            super::kernel_entry("nn.quantize.f32.i8").unwrap(),
            "hostrt_ops::entries::QUANTIZE_F32_I8"
        );
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), hostrt_ops::KERNELS.len());
        assert!(super::kernel_entry("tfrt.call").unwrap_err().to_string().contains("tfrt.call"));
    }
}
