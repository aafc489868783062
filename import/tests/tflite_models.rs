//! Every model of tests/models (made by make_models.py with TensorFlow's converter) imported,
//! run by the `nn.*` kernels, and compared with its golden: int8 bit-exact with TensorFlow
//! Lite Micro, layer by layer (every operator's output, imported with `dump_tensors`, has
//! the CRC-32 TFLite Micro's has in models.json; LiteRT's reference kernels' where TFLite
//! Micro runs the model wrongly or not at all, as models.json's `golden` says), float32 within
//! 1e-5 of LiteRT, layer by layer too (every float32 operator output's largest magnitude and
//! up to 64 of its values, models.json's `tensor_samples` from LiteRT's builtin kernels, within
//! 1e-5 of that magnitude: a wrong early layer shows even where later ones shrink it away),
//! dynamic-range ("hybrid", `*_hybrid`) models within 1e-4 of LiteRT's builtin kernels, on
//! their output. Each model's planned arena, its size without reuse and its weight bytes are
//! printed (`--nocapture`); TFLite Micro's arena use is in tests/models/models.json.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelEntry;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{Allocator, HostAllocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_import::npy::{self, NpyTensor};
use hostrt_std::{AlignedBytes, SystemAllocator};

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models")
}

fn allocator() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| {
        Allocator::register(Box::leak(Box::new(SystemAllocator::new()))).expect("allocator slot")
    })
}

/// The basic and `nn.*` kernels; `prepared: false` registers the `nn.*` ones without their
/// prepare functions, so that every use decodes its attributes per call (docs/execution.md,
/// "Prepared state").
fn registry(prepared: bool) -> Result<KernelRegistry<512>, String> {
    let mut registry: KernelRegistry<512> = KernelRegistry::new();
    register_basic_kernels(&mut registry).map_err(|e| format!("{e:?}"))?;
    for e in hostrt_ops::KERNELS {
        let e = if prepared { *e } else { KernelEntry::strict(e.name, e.func()) };
        registry.add_entries(&[e]).map_err(|e| format!("{e:?}"))?;
    }
    Ok(registry)
}

/// Runs `@main` of `bef` on `inputs` twice on one host; returns the outputs, which must be
/// the same both times: the second call reuses the host's kept activation arena, which
/// debug builds fill with 0xA5 first, so no layer may read what it did not write. A third
/// call, of the program loaded without prepared state, must give the same outputs again.
fn run(bef: &[u8], inputs: &[NpyTensor]) -> Result<Vec<NpyTensor>, String> {
    let alloc = allocator();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let bytes = AlignedBytes::new(bef);
    let mut args = Vec::new();
    for t in inputs {
        args.push(host.make_available(npy::to_tensor(alloc, t)?).map_err(|e| e.to_string())?.into_rc());
    }
    let call = |program: &Program<'_>| -> Result<Vec<NpyTensor>, String> {
        let results = program.call(&host, "main", &args).map_err(|e| format!("{e:?}"))?;
        let mut out = Vec::new();
        for i in 0..results.len() {
            out.push(npy::from_tensor(results.get::<DenseHostTensor>(i).map_err(|e| e.to_string())?)?);
        }
        Ok(out)
    };
    let same = |a: &[NpyTensor], b: &[NpyTensor]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(a, b)| (&a.dtype, &a.shape, &a.data) == (&b.dtype, &b.shape, &b.data))
    };
    let load = |prepared| -> Result<Program<'_>, String> {
        Program::load(bytes.as_bytes(), &registry(prepared)?, &host).map_err(|e| e.to_string())
    };
    let program = load(true)?;
    // Every model reads its inputs with `nn.input`, which has a prepare function.
    if !(0..).map_while(|k| program.is_prepared("main", k)).any(|p| p) {
        return Err("no kernel use of the program has prepared state".into());
    }
    let (first, again) = (call(&program)?, call(&program)?);
    if !same(&first, &again) {
        return Err("a second call on the same host (its arena reused) gave other outputs".into());
    }
    if !same(&first, &call(&load(false)?)?) {
        return Err("the program loaded without prepared state gave other outputs".into());
    }
    Ok(first)
}

fn load(name: &str, suffix: &str) -> NpyTensor {
    let path = models_dir().join(format!("{name}.{suffix}.npy"));
    npy::read(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("npy")
}

fn f32s(t: &NpyTensor) -> Vec<f32> {
    t.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The int8 model's every operator output against TFLite Micro's CRC-32 of it; the error
/// names the first layer that differs. Returns how many tensors were compared.
fn check_layers(model: &[u8], input: &NpyTensor, crcs: &serde_json::Value) -> Result<usize, String> {
    let crcs = crcs.as_object().ok_or("tensor_crc32 is not an object")?;
    // Weights laid out for x86-64's VNNI loops, then for its AVX2 loops: every layer is
    // compared on the path `hostrt infer` takes, on either CPU (where the CPU has neither,
    // the layouts are checked and unused).
    let mut compared = 0;
    for (layout, options) in [
        ("VNNI", hostrt_import::ImportOptions { dump_tensors: true, prepack: true, ..Default::default() }),
        (
            "AVX2",
            hostrt_import::ImportOptions { dump_tensors: true, prepack_avx2: true, ..Default::default() },
        ),
    ] {
        let imported = hostrt_import::tflite_with(model, options).map_err(|e| e.to_string())?;
        let got = run(&imported.to_bef().map_err(|e| e.to_string())?, std::slice::from_ref(input))?;
        compared = 0;
        for d in &imported.dumped {
            let (t, name) = (d.tensor, &d.name);
            let tensor =
                got.get(d.result).ok_or_else(|| format!("no result {} for tensor #{t}", d.result))?;
            let want = crcs.get(&t.to_string()).and_then(|v| v.as_u64());
            let want = want.ok_or_else(|| format!("tensor #{t} '{name}' has no TFLite Micro CRC"))?;
            if u64::from(crc32fast::hash(&tensor.data)) != want {
                return Err(format!("{layout} layouts: first differing layer: tensor #{t} '{name}'"));
            }
            compared += 1;
        }
    }
    Ok(compared)
}

/// How far a float32 layer may be from LiteRT's, relative to the largest magnitude of
/// LiteRT's tensor: as for the outputs, sums taken in another order.
const FLOAT_LAYER_TOLERANCE: f64 = 1e-5;

/// The float32 model's every float32 operator output against LiteRT's builtin kernels': its
/// largest magnitude, and of its n values the k = min(n, 64) at positions (i * n) / k, which
/// `tensor_samples` holds. The error names the first layer that differs. Returns how many
/// tensors were compared and the largest difference seen, relative to each one's magnitude.
fn check_float_layers(
    model: &[u8],
    input: &NpyTensor,
    golden: &serde_json::Value,
) -> Result<(usize, f64), String> {
    let golden = golden.as_object().ok_or("tensor_samples is not an object")?;
    let options = hostrt_import::ImportOptions { dump_tensors: true, prepack: true, ..Default::default() };
    let imported = hostrt_import::tflite_with(model, options).map_err(|e| e.to_string())?;
    let got = run(&imported.to_bef().map_err(|e| e.to_string())?, std::slice::from_ref(input))?;
    let (mut compared, mut worst) = (0, 0.0f64);
    for d in &imported.dumped {
        let (t, name) = (d.tensor, &d.name);
        let tensor = got.get(d.result).ok_or_else(|| format!("no result {} for tensor #{t}", d.result))?;
        // LiteRT's are recorded for float32 tensors only (not a comparison's booleans).
        if tensor.dtype != "f32" {
            continue;
        }
        let want = golden
            .get(&t.to_string())
            .ok_or_else(|| format!("tensor #{t} '{name}' has no LiteRT samples"))?;
        let max_abs = want["max_abs"].as_f64().ok_or_else(|| format!("tensor #{t}: no max_abs"))? as f32;
        let samples = want["samples"].as_array().ok_or_else(|| format!("tensor #{t}: no samples"))?;
        let values = f32s(tensor);
        let (n, k) = (values.len(), values.len().min(64));
        if samples.len() != k {
            return Err(format!("tensor #{t} '{name}': {n} values, {} samples of LiteRT's", samples.len()));
        }
        // Each sample the shortest decimal of a float32: read as f64, then rounded to it.
        let mut pairs = vec![(values.iter().fold(0.0f32, |m, v| m.max(v.abs())), max_abs)];
        for (i, s) in samples.iter().enumerate() {
            let s = s.as_f64().ok_or_else(|| format!("tensor #{t}: sample {i} is not a number"))? as f32;
            pairs.push((values[i * n / k], s));
        }
        let scale = f64::from(max_abs.max(f32::MIN_POSITIVE));
        let diff = pairs.iter().map(|&(a, b)| f64::from((a - b).abs()) / scale).fold(0.0f64, f64::max);
        if diff.is_nan() || diff > FLOAT_LAYER_TOLERANCE {
            return Err(format!(
                "first differing layer: tensor #{t} '{name}', {:e} of its magnitude > {FLOAT_LAYER_TOLERANCE:e}",
                diff as f32
            ));
        }
        (compared, worst) = (compared + 1, worst.max(diff));
    }
    Ok((compared, worst))
}

fn check(name: &str, meta: &serde_json::Value) -> Result<String, String> {
    let model = std::fs::read(models_dir().join(format!("{name}.tflite"))).map_err(|e| e.to_string())?;
    let imported = hostrt_import::tflite(&model).map_err(|e| e.to_string())?;
    let bef = imported.to_bef().map_err(|e| e.to_string())?;
    let (input, golden) = (load(name, "input"), load(name, "output"));
    let got = run(&bef, std::slice::from_ref(&input))?;
    let got = got.first().ok_or("no output")?;
    if got.shape != golden.shape || got.dtype != golden.dtype {
        return Err(format!(
            "output {} {:?}, golden {} {:?}",
            got.dtype, got.shape, golden.dtype, golden.shape
        ));
    }
    let mut error = String::new();
    if golden.dtype == "f32" {
        let (a, b) = (f32s(got), f32s(&golden));
        // Relative to the output's largest magnitude: LiteRT (XNNPACK) sums in another
        // order, so values near zero differ by more than 1e-5 of themselves. Hybrid layers
        // quantize their input on the fly: one rounding step apart is a larger difference.
        let tolerance = if name.ends_with("_hybrid") { 1e-4 } else { 1e-5 };
        let scale = b.iter().fold(0.0f32, |m, y| m.max(y.abs())).max(f32::MIN_POSITIVE);
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs() / scale).fold(0.0f32, f32::max);
        if worst.is_nan() || worst > tolerance {
            return Err(format!("largest difference {worst:e} of the output's magnitude > {tolerance:e}"));
        }
        error = format!(", largest difference {worst:e}");
    } else if got.data != golden.data {
        let diff = got.data.iter().zip(&golden.data).filter(|(a, b)| a != b).count();
        return Err(format!("{diff} of {} int8 values differ from the golden", golden.data.len()));
    }
    let layers = match (meta.get("tensor_crc32"), meta.get("tensor_samples")) {
        (Some(crcs), _) => format!(", {} layers equal", check_layers(&model, &input, crcs)?),
        (None, Some(samples)) => {
            let (n, worst) = check_float_layers(&model, &input, samples)?;
            format!(
                ", {n} float layers within {FLOAT_LAYER_TOLERANCE:e} (largest difference {:e})",
                worst as f32
            )
        }
        (None, None) if golden.dtype == "i8" => return Err("no layer CRCs in models.json".into()),
        // Hybrid models are compared on their output alone: their layers quantize on the fly.
        (None, None) if !name.ends_with("_hybrid") => {
            return Err("no float layer samples in models.json".into());
        }
        (None, None) => String::new(),
    };
    Ok(format!(
        "{name}: ok, arena {} bytes (unplanned {}), weights {} bytes{layers}{error}",
        imported.report.arena_bytes, imported.report.unplanned_bytes, imported.report.weight_bytes
    ))
}

#[test]
fn every_model_matches_its_golden() {
    let mut names: Vec<String> = std::fs::read_dir(models_dir())
        .expect("models")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".tflite").map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "expected the committed models, found {names:?}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(models_dir().join("models.json")).expect("models.json"))
            .expect("models.json parses");
    let mut failed = Vec::new();
    for name in &names {
        match check(name, &meta[name.as_str()]) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                println!("{name}: FAILED: {e}");
                failed.push(name.clone());
            }
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

#[test]
fn weights_start_16_byte_aligned_in_the_program() {
    let model = std::fs::read(models_dir().join("mobilenet_v1_vww_i8.tflite")).unwrap();
    // 16-byte boundaries; 64-byte ones (cache lines) with the weights laid out for x86-64's
    // 512-bit loops.
    for (prepack, align) in [(false, 16), (true, 64)] {
        let options = hostrt_import::ImportOptions { prepack, ..Default::default() };
        let bef = hostrt_import::tflite_with(&model, options).unwrap().to_bef().unwrap();
        let bytes = AlignedBytes::new(&bef);
        let file = hostrt_core::bef::BefFile::load_unresolved(bytes.as_bytes(), allocator()).unwrap();
        let mut weights = 0;
        for i in 0..file.num_attrs() as u32 {
            if let Some(d) = file.attr_ref(i).and_then(|a| a.get_dense())
                && d.data.len() >= 16
            {
                // Those shorter than `align` on 16-byte boundaries still.
                let align = if d.data.len() >= align { align } else { 16 };
                let at = d.data.as_ptr().addr() % align;
                assert_eq!(at, 0, "dense attribute {i} of {} bytes, {align}-byte boundaries", d.data.len());
                weights += 1;
            }
        }
        assert!(weights > 20, "found {weights} weight tensors");
    }
}

/// `prepack` lays out int8 convolution and fully connected weights for the VNNI loops;
/// `prepack_avx2` (for AVX2 CPUs) the fully connected layer's, and the filters of the
/// convolutions its blocked loop takes (the 13 pointwise ones, not the first layer's 3x3,
/// which the direct loop takes) as int16 pairs.
#[test]
fn prepack_avx2_lays_out_fully_connected_weights_and_blocked_filters() {
    let model = std::fs::read(models_dir().join("mobilenet_v1_vww_i8.tflite")).unwrap();
    let laid_out = |options| {
        let imported = hostrt_import::tflite_with(&model, options).unwrap();
        let ops = &imported.module.funcs[0].body.as_ref().unwrap().ops;
        ops.iter().filter(|op| op.attrs.iter().any(|a| a.name == "packed")).count()
    };
    let prepack = hostrt_import::ImportOptions { prepack: true, ..Default::default() };
    let prepack_avx2 = hostrt_import::ImportOptions { prepack_avx2: true, ..Default::default() };
    assert!(laid_out(prepack) > 10, "the pointwise convolutions and the fully connected layer");
    assert_eq!(laid_out(prepack_avx2), 14, "the pointwise convolutions and the fully connected layer");
}

/// What one call allocates besides the planned arena and the outputs (the executor's values
/// and frames, allocator block headers and padding), at most, on this 64-bit host; the
/// figure docs/models.md gives for sizing a static buffer.
const CALL_ALLOWANCE: usize = 4096;

#[test]
fn a_call_needs_the_planned_arena_and_outputs_plus_a_fixed_allowance() {
    let (arena, alloc) = hostrt_std::leaked_arena(8 << 20).expect("arena");
    let mut registry: KernelRegistry<512> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    registry.add_entries(hostrt_ops::KERNELS).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let mut names: Vec<String> = std::fs::read_dir(models_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".tflite").map(String::from))
        .collect();
    names.sort();
    let mut worst = (0usize, String::new());
    for name in &names {
        let model = std::fs::read(models_dir().join(format!("{name}.tflite"))).unwrap();
        let imported = hostrt_import::tflite(&model).unwrap();
        let bef = AlignedBytes::new(&imported.to_bef().unwrap());
        let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
        let input = npy::to_tensor(alloc, &load(name, "input")).unwrap();
        let arg = host.make_available(input).unwrap().into_rc();
        let before = arena.stats().unwrap().in_use;
        arena.reset_peak();
        let results = program.call(&host, "main", std::slice::from_ref(&arg)).unwrap();
        let peak = arena.stats().unwrap().peak - before;
        drop(results);
        let r = &imported.report;
        let extra = peak.saturating_sub(r.arena_bytes + r.output_bytes);
        assert!(
            extra <= CALL_ALLOWANCE,
            "{name}: a call peaked at {peak} bytes, {extra} over the arena ({}) and outputs ({})",
            r.arena_bytes,
            r.output_bytes
        );
        if extra > worst.0 {
            worst = (extra, name.clone());
        }
    }
    println!("largest allowance used: {} bytes ({})", worst.0, worst.1);
}

/// Every model's recorded arena (`to_bef_with_arena`, measured on zero inputs) is enough for
/// its test input: in a `FixedArena` of exactly that capacity the program loads, passes
/// `check_arena`, and the call, its input tensor made in the arena as firmware makes it,
/// completes without an error.
#[test]
fn the_recorded_arena_runs_each_model_on_its_input() {
    use hostrt_core::allocator::{ARENA_ALIGN, FixedArena};
    let mut registry: KernelRegistry<512> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    registry.add_entries(hostrt_ops::KERNELS).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(models_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".tflite").map(String::from))
        .collect();
    names.sort();
    for name in &names {
        let model = std::fs::read(models_dir().join(format!("{name}.tflite"))).unwrap();
        let (bef, needs) = hostrt_import::tflite(&model).unwrap().to_bef_with_arena().unwrap();
        let bef = AlignedBytes::new(&bef);
        // Exactly `needs.here` usable bytes: the buffer cut at the arena alignment.
        let buffer: &'static mut [u8] = vec![0u8; needs.here + ARENA_ALIGN].leak();
        let skip = (buffer.as_ptr() as usize).wrapping_neg() % ARENA_ALIGN;
        let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        arena.init(&mut buffer[skip..skip + needs.here]).unwrap();
        let alloc = Allocator::register(arena).unwrap();
        {
            let queue = SingleThreadedWorkQueue::new();
            let host = HostContext::new(alloc, &queue);
            let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
            assert_eq!(program.arena_need("main").map(|n| (n.bytes, n.measured)), Some((needs.here, true)));
            program.check_arena(alloc, "main").unwrap();
            let input = npy::to_tensor(alloc, &load(name, "input")).unwrap();
            let arg = host.make_available(input).unwrap().into_rc();
            let results = program.call(&host, "main", std::slice::from_ref(&arg)).unwrap();
            for i in 0..results.len() {
                let out = results.get::<DenseHostTensor>(i);
                assert!(out.is_ok(), "{name}: output {i} in {} bytes: {:?}", needs.here, out.err());
            }
        }
        let s = arena.stats().unwrap();
        assert_eq!((s.in_use, s.failed), (0, 0), "{name}");
        alloc.unregister().expect("nothing left in the slot");
    }
}

/// Weights laid out for the VNNI loops (`prepack`) that do not fit their layer, as a
/// hand-edited program may have them, are the kernel's error naming them, on every x86-64 CPU
/// (other targets do not read them).
#[cfg(target_arch = "x86_64")]
#[test]
fn packed_weights_of_the_wrong_size_are_an_error() {
    let model = std::fs::read(models_dir().join("mobilenet_v1_vww_i8.tflite")).unwrap();
    // The VNNI layout ([blocks, rows, 64] bytes) and the AVX2 pairs ([n, 16] int16), each
    // one row too long; both are checked on every x86-64 CPU.
    let vnni = hostrt_import::ImportOptions { prepack: true, ..Default::default() };
    let avx2 = hostrt_import::ImportOptions { prepack_avx2: true, ..Default::default() };
    for (options, pairs) in [(vnni, false), (avx2, true)] {
        let mut imported = hostrt_import::tflite_with(&model, options).unwrap();
        let ops = &mut imported.module.funcs[0].body.as_mut().unwrap().ops;
        let mut packed = ops.iter_mut().flat_map(|op| &mut op.attrs).filter(|a| a.name == "packed");
        let first = packed.next().expect("a packed attribute");
        assert!(packed.count() > 10, "the pointwise convolutions and the fully connected layer carry one");
        let hostrt_compiler::ast::Attr::Dense(d) = &mut first.value else { panic!("packed is dense") };
        d.dims[0] += 1;
        let row_bytes = if pairs { 16 * 2 } else { d.dims[1] as usize * 64 };
        d.data.extend(std::iter::repeat_n(0, row_bytes));
        let e = run(&imported.to_bef().unwrap(), &[load("mobilenet_v1_vww_i8", "input")]).unwrap_err();
        assert!(e.contains("nn.conv_2d.i8") && e.contains("packed"), "{e}");
    }
}
