//! f32 GEMM throughput: the `matrixmultiply` path the tensor kernels use on hosts, the
//! portable loop firmware uses, and a naive triple loop as the floor, at the MNIST layer's
//! shape (100×784 · 784×512) and at 512³. Criterion reports elements as FLOP (2·m·k·n), so
//! its throughput line reads in GFLOP/s (`Gelem/s`).

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

fn bench(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("sgemm");
    g.sample_size(20);
    for (m, k, n) in [(100, 784, 512), (512, 512, 512)] {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 17) as f32 / 17.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 13) as f32 / 13.0).collect();
        let mut c = vec![0.0f32; m * n];
        let shape = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        g.bench_function(BenchmarkId::new("matrixmultiply", &shape), |bn| {
            bn.iter(|| gemm::sgemm(m, k, n, 1.0, &a, &b, 0.0, &mut c))
        });
        g.bench_function(BenchmarkId::new("portable", &shape), |bn| {
            bn.iter(|| gemm::sgemm_portable(m, k, n, 1.0, &a, &b, 0.0, &mut c))
        });
        g.bench_function(BenchmarkId::new("naive", &shape), |bn| bn.iter(|| naive(m, k, n, &a, &b, &mut c)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
