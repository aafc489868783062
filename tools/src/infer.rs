//! `hostrt import` and `hostrt infer`: TensorFlow Lite and ONNX models to programs, and running a
//! model's `@main` on `.npy` inputs (docs/models.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use hostrt_core::executor::Program;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::work_queue::ConcurrentWorkQueue;
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy;
use hostrt_std::{AlignedBytes, MultiThreadedWorkQueue, SystemAllocator};

/// The model in `bytes` imported, if it is one: a TensorFlow Lite model (by its
/// identifier) or an ONNX model (by the `.onnx` extension; external data is read next to
/// it, symbolic dimensions bound by `dims`). `Ok(None)` for other files.
pub fn import_model(
    path: &Path,
    bytes: &[u8],
    options: hostrt_import::ImportOptions,
    dims: &[(String, usize)],
) -> Result<Option<hostrt_import::Imported>, String> {
    let at = |e: hostrt_import::ImportError| format!("{}: {e}", crate::display_name(path));
    if hostrt_import::is_tflite(bytes) {
        return hostrt_import::tflite_with(bytes, options).map(Some).map_err(at);
    }
    if path.extension().is_some_and(|e| e == "onnx") {
        let read = hostrt_import::onnx::model::ReadOptions { dir: path.parent(), dims, bound: &[] };
        let options = hostrt_import::ImportOptions { prepack: false, ..options };
        return hostrt_import::onnx_with(bytes, &read, options).map(Some).map_err(at);
    }
    Ok(None)
}

/// `hostrt import MODEL.(tflite|onnx) -o OUT.(bef|mlir) [--prepack] [--dim N=V]`: writes the
/// program and prints the operator table, the weight bytes and the planned arena.
pub fn import(model: &Path, output: &Path, prepack: bool, dims: &[(String, usize)]) -> Result<(), String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let options = hostrt_import::ImportOptions { prepack, ..Default::default() };
    let imported = import_model(model, &bytes, options, dims)?.ok_or_else(|| {
        format!("{}: not a TensorFlow Lite model (no TFL3 identifier) or an .onnx file", model.display())
    })?;
    let (bef, needs) = imported.to_bef_with_arena().map_err(|e| e.to_string())?;
    let mlir = output.extension().is_some_and(|e| e == "mlir");
    let out = if mlir { imported.to_mlir().into_bytes() } else { bef };
    std::fs::write(output, &out).map_err(|e| format!("{}: {e}", output.display()))?;
    let r = &imported.report;
    say!("{:<28} {:>5}  kernel", "operator", "count");
    for (op, (count, kernels)) in &r.ops {
        say!("{op:<28} {count:>5}  {kernels}");
    }
    say!("weights: {} bytes, read in place from the program", r.weight_bytes);
    say!(
        "activation arena: {} bytes planned (32- and 64-bit targets), {} bytes without reuse",
        r.arena_bytes,
        r.unplanned_bytes
    );
    let recorded = if mlir { "" } else { " (recorded in the BEF)" };
    say!(
        "a FixedArena for loading and one call: {} bytes on {}-bit targets, measured on zero inputs{recorded}",
        needs.here,
        usize::BITS,
    );
    if let Some(bound) = needs.bound_32 {
        say!("  on 32-bit targets: at most {bound} bytes, derived from the same run{recorded}");
    }
    say!("wrote {} ({} bytes, {} kernels)", output.display(), out.len(), r.kernels);
    Ok(())
}

/// Options of `hostrt infer`.
pub struct InferOptions {
    pub inputs: Vec<PathBuf>,
    pub output_dir: Option<PathBuf>,
    pub benchmark: usize,
    pub threads: usize,
    /// `--dump-tensors DIR`.
    pub dump_tensors: Option<PathBuf>,
    /// `--dim NAME=N`: symbolic ONNX input dimensions.
    pub dims: Vec<(String, usize)>,
}

/// A file name for tensor `index` named `name`: `0012_conv1_Relu.npy`.
fn dump_file_name(index: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .take(96)
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .collect();
    format!("{index:04}_{clean}.npy")
}

/// `(tensor index, tensor name)` of the tensors a program returns after the model's outputs.
type Dumped = Vec<(usize, String)>;

/// The program to run and, with `--dump-tensors`, what it returns after the outputs.
fn program_for(model: &Path, opts: &InferOptions) -> Result<(Vec<u8>, Dumped), String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let options = hostrt_import::ImportOptions {
        dump_tensors: opts.dump_tensors.is_some(),
        ..hostrt_import::ImportOptions::for_this_cpu()
    };
    match import_model(model, &bytes, options, &opts.dims)? {
        Some(imported) => Ok((imported.to_bef().map_err(|e| e.to_string())?, imported.dumped)),
        None if opts.dump_tensors.is_some() => {
            Err(format!("{}: --dump-tensors needs a .tflite or .onnx model", model.display()))
        }
        None => Ok((crate::bef_of(model, bytes)?, Vec::new())),
    }
}

/// `hostrt infer MODEL --input x.npy ... [--output-dir DIR] [--benchmark N] [--threads T]`.
pub fn infer(model: &Path, opts: &InferOptions) -> Result<(), String> {
    let (bef, dumped) = program_for(model, opts)?;
    let bef = AlignedBytes::new(&bef);
    let registry = crate::run::kernels(&crate::run::RunOptions::default())?;
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let alloc = Allocator::register(system).map_err(|e| format!("{e:?}"))?;
    let single = SingleThreadedWorkQueue::new();
    let multi;
    // T threads: this one, which runs the model's kernels, and T - 1 workers that share
    // each kernel's rows with it (parallel_for).
    let queue: &dyn ConcurrentWorkQueue = if opts.threads > 1 {
        multi = MultiThreadedWorkQueue::new(opts.threads - 1, 1);
        &multi
    } else {
        &single
    };
    let host = HostContext::new(alloc, queue);
    let program =
        Program::load(bef.as_bytes(), &*registry, &host).map_err(|e| format!("{}: {e}", model.display()))?;
    let mut args = Vec::new();
    for path in &opts.inputs {
        let t = npy::read(&std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        args.push(host.make_available(npy::to_tensor(alloc, &t)?).map_err(|e| e.to_string())?.into_rc());
    }
    let call = || program.call(&host, "main", &args).map_err(|e| format!("calling @main: {e:?}"));
    let results = call()?;
    let mut outputs = Vec::new();
    for i in 0..results.len() {
        let t = results.get::<DenseHostTensor>(i).map_err(|e| format!("output {i}: {e}"))?;
        outputs.push(npy::from_tensor(t)?);
    }
    drop(results);
    let dumps = outputs.split_off(outputs.len() - dumped.len());
    if let Some(dir) = &opts.dump_tensors {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for ((index, name), t) in dumped.iter().zip(&dumps) {
            let path = dir.join(dump_file_name(*index, name));
            std::fs::write(&path, npy::write(t)?).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        say!("{} intermediate tensors -> {}", dumps.len(), dir.display());
    }
    for (i, t) in outputs.iter().enumerate() {
        match &opts.output_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let path = dir.join(format!("out{i}.npy"));
                std::fs::write(&path, npy::write(t)?).map_err(|e| format!("{}: {e}", path.display()))?;
                say!("out{i}: {} {:?} -> {}", t.dtype, t.shape, path.display());
            }
            None => say!("out{i}: {} {:?}", t.dtype, t.shape),
        }
    }
    if opts.benchmark > 0 {
        let mut times = Vec::with_capacity(opts.benchmark);
        for _ in 0..opts.benchmark {
            let start = Instant::now();
            drop(call()?);
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        say!(
            "{} runs after a warm-up: median {median:.1} us, min {:.1} us, max {:.1} us",
            times.len(),
            times[0],
            times[times.len() - 1]
        );
    }
    Ok(())
}
