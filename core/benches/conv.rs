//! f32 convolution: im2col + GEMM (scratch for the whole image, and for blocks of 128
//! and 512 output pixels) against direct convolution (a GEMM per output row and filter tap, no
//! scratch), with a naive seven-deep loop as the floor, at shapes of small CNNs (batch 1,
//! 3×3 filters, "same"). Throughput is in FLOP (2·outputs·KH·KW·C), so criterion's
//! `Gelem/s` reads as GFLOP/s.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hostrt_core::tensor::conv::{Conv2dParams, conv2d_direct, conv2d_im2col};

fn naive(p: &Conv2dParams, x: &[f32], f: &[f32], out: &mut [f32]) {
    let [_, h, w, c] = p.input.map(|d| d as usize);
    let [kh, kw, _, co] = p.filter.map(|d| d as usize);
    let [n, oh, ow, _] = p.output.map(|d| d as usize);
    let ([sh, sw], [top, _, left, _]) = (p.strides.map(|d| d as usize), p.padding.map(|d| d as usize));
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                let o = &mut out[((b * oh + oy) * ow + ox) * co..][..co];
                o.fill(0.0);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let (iy, ix) = ((oy * sh + ky).wrapping_sub(top), (ox * sw + kx).wrapping_sub(left));
                        if iy >= h || ix >= w {
                            continue;
                        }
                        for i in 0..c {
                            let v = x[((b * h + iy) * w + ix) * c + i];
                            let tap = &f[((ky * kw + kx) * c + i) * co..][..co];
                            for (o, t) in o.iter_mut().zip(tap) {
                                *o += v * t;
                            }
                        }
                    }
                }
            }
        }
    }
}

fn bench(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("conv2d");
    g.sample_size(20);
    for (input, filter, strides) in [
        ([1, 28, 28, 1], [3, 3, 1, 32], [1, 1]),
        ([1, 28, 28, 32], [3, 3, 32, 32], [2, 2]),
        ([1, 14, 14, 32], [3, 3, 32, 64], [1, 1]),
        ([1, 56, 56, 64], [3, 3, 64, 64], [1, 1]),
        ([1, 56, 56, 64], [3, 3, 64, 128], [2, 2]),
    ] {
        let p = Conv2dParams::new(input, filter, "same", strides).unwrap();
        let len = |d: [i64; 4]| d.iter().product::<i64>() as usize;
        let x: Vec<f32> = (0..len(input)).map(|i| (i % 17) as f32 / 17.0).collect();
        let f: Vec<f32> = (0..len(filter)).map(|i| (i % 13) as f32 / 13.0 - 0.5).collect();
        let mut out = vec![0.0f32; len(p.output)];
        let mut whole = vec![0.0f32; p.scratch_len(usize::MAX)];
        let (mut b128, mut b512) = (vec![0.0f32; p.scratch_len(128)], vec![0.0f32; p.scratch_len(512)]);
        let shape = format!(
            "{}x{}x{}-{}x{}x{}-s{}",
            input[1], input[2], input[3], filter[0], filter[1], filter[3], strides[0]
        );
        g.throughput(Throughput::Elements(
            (2 * len(p.output) * len([filter[0], filter[1], filter[2], 1])) as u64,
        ));
        g.bench_function(BenchmarkId::new("im2col-whole", &shape), |b| {
            b.iter(|| conv2d_im2col(&p, &x, &f, &mut out, &mut whole, &mut |_| {}))
        });
        g.bench_function(BenchmarkId::new("im2col-128px", &shape), |b| {
            b.iter(|| conv2d_im2col(&p, &x, &f, &mut out, &mut b128, &mut |_| {}))
        });
        g.bench_function(BenchmarkId::new("im2col-512px", &shape), |b| {
            b.iter(|| conv2d_im2col(&p, &x, &f, &mut out, &mut b512, &mut |_| {}))
        });
        g.bench_function(BenchmarkId::new("direct", &shape), |b| {
            b.iter(|| conv2d_direct(&p, &x, &f, &mut out, &mut |_| {}))
        });
        g.bench_function(BenchmarkId::new("naive", &shape), |b| b.iter(|| naive(&p, &x, &f, &mut out)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
