//! f32 GEMM throughput: the `gemm` crate the tensor kernels use on hosts, `matrixmultiply`
//! (the crate it was chosen over), the portable loop firmware uses, and a naive triple loop
//! as the floor, and the core's FMA peak (x86-64 with AVX2/FMA) as the ceiling, at the MNIST layer's
//! shape (100×784 · 784×512) and at 512³. Criterion reports elements as FLOP (2·m·k·n), so
//! its throughput line reads in GFLOP/s (`Gelem/s`).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hostrt_core::tensor::gemm;

fn naive(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for p in 0..k {
                s += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = s;
        }
    }
}

fn matrixmultiply_sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let (rk, rn) = (k as isize, n as isize);
    // SAFETY: the assert above proves the row-major [m, k], [k, n] and [m, n] matrices the
    // strides describe lie inside the slices; `c` is a unique borrow.
    unsafe {
        matrixmultiply::sgemm(m, k, n, 1.0, a.as_ptr(), rk, 1, b.as_ptr(), rn, 1, 0.0, c.as_mut_ptr(), rn, 1)
    }
}

/// The core's peak: twelve independent chains of 8-lane f32 FMAs (two FMA pipes of
/// AVX2 width, four cycles latency, so twelve chains keep both busy). 192 FLOP per
/// iteration.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn fma_chains(iters: usize, a: [f32; 8], b: [f32; 8]) -> f32 {
    let mut acc = [[0.0f32; 8]; 12];
    for _ in 0..iters {
        for r in acc.iter_mut() {
            for l in 0..8 {
                r[l] = r[l].mul_add(a[l], b[l]);
            }
        }
    }
    acc.iter().flatten().sum()
}

fn bench(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("sgemm");
    g.sample_size(20);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        let iters = 100_000;
        g.throughput(Throughput::Elements(192 * iters as u64));
        g.bench_function("fma-peak", |bn| {
            // SAFETY: the CPU has AVX2 and FMA (checked above), the features the function
            // is compiled for.
            bn.iter(|| unsafe { fma_chains(black_box(iters), black_box([0.999; 8]), black_box([0.001; 8])) })
        });
    }
    for (m, k, n) in [(100, 784, 512), (512, 512, 512)] {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 17) as f32 / 17.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 13) as f32 / 13.0).collect();
        let mut c = vec![0.0f32; m * n];
        let shape = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        g.bench_function(BenchmarkId::new("gemm", &shape), |bn| {
            bn.iter(|| gemm::sgemm(m, k, n, 1.0, &a, &b, 0.0, &mut c))
        });
        g.bench_function(BenchmarkId::new("matrixmultiply", &shape), |bn| {
            bn.iter(|| matrixmultiply_sgemm(m, k, n, &a, &b, &mut c))
        });
        g.bench_function(BenchmarkId::new("portable", &shape), |bn| {
            bn.iter(|| gemm::sgemm_portable(m, k, n, 1.0, &a, k, &b, 0.0, &mut c))
        });
        g.bench_function(BenchmarkId::new("naive", &shape), |bn| bn.iter(|| naive(m, k, n, &a, &b, &mut c)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
