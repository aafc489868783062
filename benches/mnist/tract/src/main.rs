//! Times the MNIST-shaped MLP (`mnist.onnx` written by `benches/mnist/gen.py`) in tract,
//! for `scripts/bench_mnist.sh`: input fact [100, 784] f32, `into_optimized`,
//! `into_runnable`; checks the output against `expected.bin`, then 20 warm-up runs and
//! RUNS timed runs, and prints the median wall time per run the way hostrt's benchmark
//! kernel does (`BM:tract:Time 50%(ns): N`).
//!
//! One thread: tract runs a plan on the calling thread, and its matrix products only
//! spread over a thread pool when tract-linalg's `multithread-mm` feature is on and a
//! multithread executor is installed; the feature is off in this build and the default
//! executor is `SingleThread`. The thread count and CPU utilization printed confirm it.
//!
//! Usage: `mnist-tract OUT_DIR [RUNS]`

use std::path::{Path, PathBuf};
use std::time::Instant;

use tract_onnx::prelude::*;

const BATCH: usize = 100;
const IN: usize = 784;
const OUT: usize = 10;
const WARMUP: usize = 20;
const REL_TOL: f64 = 1e-3;

fn read_f32(path: &Path) -> TractResult<Vec<f32>> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// CPU time of the whole process (all threads), in nanoseconds.
fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The `Threads:` line of /proc/self/status (Linux), or "?".
fn thread_count() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_string())))
        .unwrap_or_else(|| "?".into())
}

fn main() -> TractResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), runs) = (args.get(1).map(PathBuf::from), args.get(2)) else {
        anyhow::bail!("usage: mnist-tract OUT_DIR [RUNS]")
    };
    let runs: usize = runs.map_or(Ok(1000), |r| r.parse())?;

    let model = tract_onnx::onnx()
        .model_for_path(dir.join("mnist.onnx"))?
        .with_input_fact(0, f32::fact([BATCH, IN]).into())?
        .into_optimized()?
        .into_runnable()?;
    let input: TValue = Tensor::from_shape(&[BATCH, IN], &read_f32(&dir.join("x.bin"))?)?.into_tvalue();

    let expected = read_f32(&dir.join("expected.bin"))?;
    let outputs = model.run(tvec!(input.clone()))?;
    let y: Vec<f32> = outputs[0].to_plain_array_view::<f32>()?.iter().copied().collect();
    anyhow::ensure!(y.len() == BATCH * OUT, "tract: output has {} values, not {}", y.len(), BATCH * OUT);
    let err = y.iter().zip(&expected).map(|(a, b)| (*a as f64 - *b as f64).abs()).fold(0.0, f64::max);
    let bound = REL_TOL * expected.iter().map(|v| v.abs() as f64).fold(0.0, f64::max);
    anyhow::ensure!(
        err <= bound,
        "tract: output differs from expected.bin: max abs error {err:.3e} > {bound:.3e}"
    );
    println!("tract: output matches expected.bin (max abs error {err:.3e}, bound {bound:.3e})");

    for _ in 0..WARMUP {
        model.run(tvec!(input.clone()))?;
    }
    let mut times = Vec::with_capacity(runs);
    let (cpu0, wall0) = (process_cpu_ns(), Instant::now());
    for _ in 0..runs {
        let feed = tvec!(input.clone());
        let start = Instant::now();
        let out = model.run(feed)?;
        times.push(start.elapsed().as_nanos() as u64);
        drop(out);
    }
    let (cpu, wall) = (process_cpu_ns() - cpu0, wall0.elapsed().as_nanos() as u64);
    times.sort_unstable();
    // The same percentile indices as hostrt's benchmark kernel: floor(n * p).
    let at = |p: f64| times[(runs as f64 * p) as usize];
    println!("BM:tract:Count: {runs}");
    println!("BM:tract:Time Min(ns): {}", at(0.0));
    println!("BM:tract:Time 50%(ns): {}", at(0.5));
    println!("BM:tract:Time 95%(ns): {}", at(0.95));
    println!("BM:tract:CPU utilization(percent): {:.1}", 100.0 * cpu as f64 / wall as f64);
    println!("BM:tract:Threads: {}", thread_count());
    Ok(())
}
