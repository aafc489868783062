//! `hostrt import` and `hostrt infer`: TensorFlow Lite and ONNX models to programs, and running a
//! model's `@main` on `.npy` inputs (docs/models.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use hostrt_core::executor::Program;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::work_queue::ConcurrentWorkQueue;
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::{DumpedTensor, npy};
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
#[derive(clap::Args, Debug)]
pub struct InferOptions {
    /// An input tensor, in the model's input order (repeatable).
    #[arg(long = "input", value_name = "X.npy")]
    pub inputs: Vec<PathBuf>,
    /// Where to write `out0.npy`, `out1.npy`, ... (without it, only their shapes print).
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// After the first run, time N more and print the median, min and max latency.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub benchmark: usize,
    /// Threads that run the model: this one and T - 1 workers that share each kernel's
    /// rows (1: the single-threaded queue, no workers).
    #[arg(long, value_name = "T", default_value_t = 1)]
    pub threads: usize,
    /// Also write every operator's output of a `.tflite` model to DIR, one `.npy` per
    /// tensor named `<tensor index>_<tensor name>.npy`, to compare layer by layer.
    #[arg(long, value_name = "DIR")]
    pub dump_tensors: Option<PathBuf>,
    /// The size of a symbolic input dimension of an ONNX model (`--dim batch=4`,
    /// repeatable); an unbound leading one is 1.
    #[arg(long = "dim", value_name = "NAME=N", value_parser = crate::parse_dim)]
    pub dims: Vec<(String, usize)>,
    /// After the runs, print a table per kernel (the model's layer, its kernel, calls,
    /// time, share, allocations), most time first; `--profile=csv` for scripts
    /// (docs/profiling.md).
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = "table", value_parser = crate::run::profile_format_arg)]
    pub profile: Option<bool>,
    /// Write a trace of the runs to FILE (Chrome's trace event format: open it in
    /// ui.perfetto.dev or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// Prints `recorder`'s profile through `out` (as CSV when `profile` is `Some(true)`) and
/// writes its trace to `trace`, as `--profile` and `--trace` ask.
pub fn report_recording(
    recorder: &hostrt_std::Recorder,
    profile: Option<bool>,
    trace: Option<&str>,
    out: &dyn Fn(&str),
) -> Result<(), String> {
    if let Some(csv) = profile {
        let table = recorder.table();
        out(&if csv { table.csv() } else { table.text() });
    }
    if let Some(path) = trace {
        let mut json = Vec::new();
        recorder.write_trace(&mut json).map_err(|e| e.to_string())?;
        std::fs::write(path, &json).map_err(|e| format!("{path}: {e}"))?;
        if profile != Some(true) {
            out(&format!("trace: {} bytes -> {path} (open it in ui.perfetto.dev)\n", json.len()));
        }
    }
    Ok(())
}

/// The program to run; for a model, how many outputs it has, and with `--dump-tensors`,
/// the operator outputs the program returns (after those).
type ToRun = (Vec<u8>, Option<usize>, Vec<DumpedTensor>);

/// The program to run, as [`ToRun`] says.
fn program_for(model: &Path, opts: &InferOptions) -> Result<ToRun, String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let options = hostrt_import::ImportOptions {
        dump_tensors: opts.dump_tensors.is_some(),
        ..hostrt_import::ImportOptions::for_this_cpu()
    };
    match import_model(model, &bytes, options, &opts.dims)? {
        Some(imported) => {
            Ok((imported.to_bef().map_err(|e| e.to_string())?, Some(imported.outputs.len()), imported.dumped))
        }
        None if opts.dump_tensors.is_some() => {
            Err(format!("{}: --dump-tensors needs a .tflite or .onnx model", model.display()))
        }
        None => Ok((crate::bef_of(model, bytes)?, None, Vec::new())),
    }
}

/// `hostrt infer MODEL --input x.npy ... [--output-dir DIR] [--benchmark N] [--threads T]`.
pub fn infer(model: &Path, opts: &InferOptions) -> Result<(), String> {
    let (bef, model_outputs, dumped) = program_for(model, opts)?;
    let bef = AlignedBytes::new(&bef);
    let registry = crate::run::kernels(&crate::run::RunOptions::default())?;
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let alloc = Allocator::register(system).map_err(|e| format!("{e:?}"))?;
    let recorder = (opts.profile.is_some() || opts.trace.is_some())
        .then(|| std::sync::Arc::new(hostrt_std::Recorder::new(opts.trace.is_some())));
    let single = SingleThreadedWorkQueue::new();
    let multi;
    // T threads: this one, which runs the model's kernels, and T - 1 workers that share
    // each kernel's rows with it (parallel_for).
    let queue: &dyn ConcurrentWorkQueue = if opts.threads > 1 {
        multi = MultiThreadedWorkQueue::new(opts.threads - 1, 1);
        if let Some(r) = &recorder {
            multi.set_task_observer(r.clone());
        }
        &multi
    } else {
        &single
    };
    let mut host = HostContext::new(alloc, queue);
    if let Some(r) = &recorder {
        host = host.with_observer(&**r);
    }
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
    if let Some(dir) = &opts.dump_tensors {
        hostrt_import::dump::write(dir, &dumped, &outputs)?;
        say!("{} operator outputs -> {} (listed in layers.txt)", dumped.len(), dir.display());
    }
    // The model's outputs: the results before those returned only for the dump.
    outputs.truncate(model_outputs.unwrap_or(outputs.len()));
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
    if let Some(r) = &recorder {
        let trace = opts.trace.as_ref().map(|p| p.display().to_string());
        report_recording(r, opts.profile, trace.as_deref(), &|t| say!("{}", t.trim_end()))?;
    }
    Ok(())
}
