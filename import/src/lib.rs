//! Model importers: a TensorFlow Lite (`.tflite`) or ONNX (`.onnx`) model becomes a hostrt
//! program, the same AST and BEF as hand-written programs, run by the `nn.*` kernels of
//! `hostrt-ops` over one activation arena planned here (docs/models.md, docs/onnx.md).
//!
//! Failure contract: a malformed or unsupported model is an [`ImportError`] naming the
//! operator (`op #12 CONV_2D: ...`) or tensor at fault; importing never panics and never
//! reads outside the model bytes.
//!
//! ```no_run
//! let model = std::fs::read("model.tflite")?;
//! let imported = hostrt_import::tflite(&model)?;
//! println!("arena: {} bytes", imported.report.arena_bytes);
//! let bef: Vec<u8> = imported.to_bef()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod arena_needs;
pub mod assemble;
pub mod build;
pub mod dump;
pub mod error;
mod model;
pub mod npy;
pub mod onnx;
pub mod plan;
pub mod tflite;

pub use arena_needs::ArenaNeeds;
pub use assemble::{PlannedStep, PlannedTensor, Report};
pub use dump::DumpedTensor;
pub use error::ImportError;
pub use model::Program;

use hostrt_compiler::ast::Module;
use hostrt_compiler::bef::WriteOptions;

/// An imported model: the program and what the import did.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The program: `@main` takes the model's inputs and returns its outputs (then the
    /// dumped tensors).
    pub module: Module,
    pub report: Report,
    /// With [`ImportOptions::dump_tensors`]: every operator output `@main` returns, in
    /// execution order: the model's outputs where an operator computes them, and the
    /// intermediate tensors returned after them.
    pub dumped: Vec<DumpedTensor>,
    /// The element type (`f32`, `i8`, ...) and shape of each of `@main`'s arguments.
    pub inputs: Vec<(&'static str, Vec<usize>)>,
    /// The same of each of the model's outputs, `@main`'s first results.
    pub outputs: Vec<(&'static str, Vec<usize>)>,
    /// Imported with [`ImportOptions::prepack`] or [`ImportOptions::prepack_avx2`]: the BEF
    /// then puts weights on 64-byte boundaries, for the wide loads of the loops that read the
    /// layouts.
    pub prepacked: bool,
}

/// How to import.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportOptions {
    /// Also return every operator's output from `@main`, for layer-by-layer comparison
    /// with another runtime (`hostrt infer --dump-tensors`). Every tensor then keeps its
    /// own arena slot.
    pub dump_tensors: bool,
    /// Also lay int8 convolution and fully connected weights out for the AVX-512 VNNI loops of
    /// x86-64 (`hostrt_dsp::prepack`; TensorFlow Lite models), and float32 convolution filters
    /// over 32 KiB in blocks for its 512-bit tiles (`hostrt_ops::panels`), as XNNPACK and
    /// onnxruntime do when a model loads, so that no call lays them out again. The program
    /// still runs on every x86-64 CPU (those without VNNI or AVX-512 read the filters as
    /// usual) and gives the same results; it holds those layers' weights twice; other
    /// targets refuse it (firmware imports without it). Worth it where the program runs on
    /// such a CPU: [`ImportOptions::for_this_cpu`].
    pub prepack: bool,
    /// Lay out what CPUs with AVX2 and FMA but no AVX-512 VNNI read: float32 convolution
    /// filters as `prepack` does (their 256-bit tiles read the same blocks), int8 fully
    /// connected weights in `prepack`'s layout (their AVX2 loop reads it too: channels across
    /// the lanes, nothing summed across them), and the filters of int8 convolutions that
    /// take the AVX2 blocked loop (pointwise and gathered patches) widened to int16 pairs
    /// (`hostrt_dsp::prepack::pack_conv_pairs`), twice their bytes, which that loop
    /// otherwise lays out per call. Ignored where `prepack` is set.
    pub prepack_avx2: bool,
}

impl ImportOptions {
    /// The options for a program that runs where it is imported: `prepack` where this CPU has
    /// AVX-512 VNNI, else `prepack_avx2` where it has AVX2 and FMA.
    pub fn for_this_cpu() -> ImportOptions {
        #[cfg(target_arch = "x86_64")]
        let (prepack, prepack_avx2) = (hostrt_dsp::has_vnni(), hostrt_dsp::has_avx2_fma());
        #[cfg(not(target_arch = "x86_64"))]
        let (prepack, prepack_avx2) = (false, false);
        ImportOptions { prepack, prepack_avx2: prepack_avx2 && !prepack, ..ImportOptions::default() }
    }
}

impl Imported {
    /// The program as BEF: with weights 64-byte aligned in the file when they were laid out
    /// for x86-64's 512-bit loops ([`Imported::prepacked`]), else 16-byte aligned.
    pub fn to_bef(&self) -> Result<Vec<u8>, ImportError> {
        let dense_align = if self.prepacked { 64 } else { WriteOptions::default().dense_align };
        hostrt_compiler::bef::write_with(
            &self.module,
            None,
            WriteOptions { dense_align, ..Default::default() },
        )
        .map_err(|e| ImportError::model(format!("writing BEF: {e}")))
    }

    /// How many results `@main` returns: the model's outputs, then the tensors dumped after
    /// them ([`ImportOptions::dump_tensors`]).
    pub fn results(&self) -> usize {
        self.outputs.len() + self.dumped.iter().filter(|d| d.result >= self.outputs.len()).count()
    }

    /// The program as MLIR text.
    pub fn to_mlir(&self) -> String {
        hostrt_compiler::text::print(&self.module, &Default::default())
    }
}

/// Imports a TensorFlow Lite model from its bytes.
pub fn tflite(bytes: &[u8]) -> Result<Imported, ImportError> {
    tflite_with(bytes, ImportOptions::default())
}

/// Imports a TensorFlow Lite model from its bytes, as `options` say.
pub fn tflite_with(bytes: &[u8], options: ImportOptions) -> Result<Imported, ImportError> {
    lowered(&tflite::model::Graph::read(bytes)?, options, true)
}

/// The program of an importer's operator graph (read from `.tflite`, or translated from
/// ONNX): lowered, planned and assembled; int8 weights laid out only with `int8_prepack`.
fn lowered(
    graph: &tflite::model::Graph<'_>,
    options: ImportOptions,
    int8_prepack: bool,
) -> Result<Imported, ImportError> {
    let lowered = tflite::lower::lower_with(graph, options, int8_prepack)?;
    let (module, report) = assemble::build(graph, &lowered)?;
    let typed = |ts: &[usize]| {
        ts.iter().map(|&t| (graph.tensors[t].elem.name(), graph.tensors[t].shape.clone())).collect()
    };
    Ok(Imported {
        module,
        report,
        dumped: lowered.dumped,
        inputs: typed(&graph.inputs),
        outputs: typed(&graph.outputs),
        prepacked: options.prepack || options.prepack_avx2,
    })
}

/// Imports an ONNX model from its bytes, as `options` say; `read` gives the model's
/// directory (for external data) and the values of symbolic input dimensions.
pub fn onnx_with(
    bytes: &[u8],
    read: &onnx::model::ReadOptions<'_>,
    options: ImportOptions,
) -> Result<Imported, ImportError> {
    let converted = onnx::convert::convert(&onnx::model::Model::read(bytes, read)?)?;
    // Float32 filters laid out with `prepack`; int8 ones not (the QDQ graphs' int8 layers
    // read theirs as they are).
    lowered(&converted.graph(), options, false)
}

/// Imports the ONNX model file at `path` (external data files are read next to it).
pub fn onnx_file(
    path: &std::path::Path,
    dims: &[(String, usize)],
    options: ImportOptions,
) -> Result<Imported, ImportError> {
    let bytes = std::fs::read(path).map_err(|e| ImportError::model(format!("{}: {e}", path.display())))?;
    let read = onnx::model::ReadOptions { dir: path.parent(), dims, bound: &[] };
    onnx_with(&bytes, &read, options)
}

/// Whether `bytes` look like a TensorFlow Lite model (the `TFL3` file identifier).
pub fn is_tflite(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"TFL3")
}
