//! `nn.batch_matmul.i8` and `nn.batch_matmul.f32`: `out[b, i, j] = Σ_k lhs[b, i, k] ·
//! rhs[b, k, j]` over up to three broadcast batch dims, as TFLite Micro's BATCH_MATMUL.
//!
//! Attributes, in name order: `dims` (`[B0, B1, B2, M, N, K]`: batch dims, output rows,
//! output columns, depth), `lhs` (`[offset, stride b0, b1, b2, stride i, stride k]`, element
//! strides, 0 along a broadcast batch dim; a transposed operand is a matter of strides),
//! `output` (`[offset]`, row-major `[B0, B1, B2, M, N]`), then for int8 `quant` (`[lhs zero
//! point, rhs zero point, output zero point, multiplier, shift, min, max]`), then `rhs`
//! (`[offset, stride b0, b1, b2, stride k, stride j]`).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::gemm::sgemm_strided;
use hostrt_core::work_queue::{RowSplit, for_row_runs};
use hostrt_dsp::multiply_by_quantized_multiplier;

use crate::activation_arena::{Inputs, f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::float_x86::FloatConv;

/// An operand: its offset, its element strides along `[b0, b1, b2, row, col]`, and how many
/// elements its strides reach.
struct Operand {
    offset: usize,
    strides: [usize; 5],
    len: usize,
}

/// The shape of the product and its two operands.
struct MatMul {
    dims: [usize; 6],
    lhs: Operand,
    rhs: Operand,
    output: usize,
    outputs: usize,
}

fn operand(a: &Attrs<'_>, i: usize, name: &str, reach: [usize; 5]) -> Result<Operand, Diagnostic> {
    let v = a.ints(i, name, Some(6))?;
    let bad = || invalid(a.kernel, format_args!("'{}' has a negative value or overflows: {:?}", name, v));
    let offset = usize::try_from(v[0]).map_err(|_| bad())?;
    let mut strides = [0usize; 5];
    let mut last = 0usize;
    for (k, s) in strides.iter_mut().enumerate() {
        *s = usize::try_from(v[k + 1]).map_err(|_| bad())?;
        last =
            reach[k].saturating_sub(1).checked_mul(*s).and_then(|r| r.checked_add(last)).ok_or_else(bad)?;
    }
    Ok(Operand { offset, strides, len: if reach.contains(&0) { 0 } else { last + 1 } })
}

impl MatMul {
    fn read(a: &Attrs<'_>, rhs_at: usize) -> Result<MatMul, Diagnostic> {
        let d = a.ints(0, "dims", Some(6))?;
        let mut dims = [0usize; 6];
        for (o, &v) in dims.iter_mut().zip(d) {
            *o =
                usize::try_from(v).map_err(|_| invalid(a.kernel, format_args!("negative dim in {:?}", d)))?;
        }
        let [b0, b1, b2, m, n, k] = dims;
        let outputs = [b0, b1, b2, m, n]
            .iter()
            .try_fold(1usize, |p, &x| p.checked_mul(x))
            .ok_or_else(|| invalid(a.kernel, format_args!("dims {:?} overflow", d)))?;
        let lhs = operand(a, 1, "lhs", [b0, b1, b2, m, k])?;
        let rhs = operand(a, rhs_at, "rhs", [b0, b1, b2, k, n])?;
        let output = a.ints(2, "output", Some(1))?[0];
        let output =
            usize::try_from(output).map_err(|_| invalid(a.kernel, format_args!("negative output")))?;
        Ok(MatMul { dims, lhs, rhs, output, outputs })
    }

    /// Calls `f(output index, lhs index of k = 0, rhs index of k = 0)` for every output
    /// element in order; the depth strides are `lhs.strides[4]` and `rhs.strides[3]`.
    fn each(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [b0, b1, b2, m, n, _] = self.dims;
        let (l, r) = (&self.lhs.strides, &self.rhs.strides);
        let mut o = 0;
        for x0 in 0..b0 {
            for x1 in 0..b1 {
                for x2 in 0..b2 {
                    let lb = x0 * l[0] + x1 * l[1] + x2 * l[2];
                    let rb = x0 * r[0] + x1 * r[1] + x2 * r[2];
                    for i in 0..m {
                        for j in 0..n {
                            f(o, lb + i * l[3], rb + j * r[4]);
                            o += 1;
                        }
                    }
                }
            }
        }
    }
}

fn operands<'b, T: bytemuck::Pod>(
    inputs: &Inputs<'b>,
    mm: &MatMul,
    read: impl Fn(&Inputs<'b>, usize, usize) -> Result<&'b [T], Diagnostic>,
) -> Result<(&'b [T], &'b [T]), Diagnostic> {
    Ok((read(inputs, mm.lhs.offset, mm.lhs.len)?, read(inputs, mm.rhs.offset, mm.rhs.len)?))
}

/// `nn.batch_matmul.i8`.
pub(crate) fn batch_matmul_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.batch_matmul.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let mm = MatMul::read(&a, 4)?;
        let q = a.ints(3, "quant", Some(7))?;
        let range = a.int8_range(q[5], q[6])?;
        if !(-31..=30).contains(&q[4]) {
            return Err(invalid(K, format_args!("shift {} out of range", q[4])));
        }
        let (inputs, out) = split(K, arena, mm.output, mm.outputs)?;
        let (x, y) = operands(&inputs, &mm, |i, o, n| i.i8s(o, n))?;
        let out = i8s_mut(out);
        let (sk, tk, depth) = (mm.lhs.strides[4], mm.rhs.strides[3], mm.dims[5]);
        mm.each(|o, l, r| {
            let mut acc = 0i32;
            for k in 0..depth {
                let xv = i32::from(x[l + k * sk]) - q[0];
                let yv = i32::from(y[r + k * tk]) - q[1];
                acc = acc.wrapping_add(xv * yv);
            }
            let v = multiply_by_quantized_multiplier(acc, q[3], q[4]).saturating_add(q[2]);
            out[o] = v.clamp(range.min, range.max) as i8;
        });
        Ok(())
    })
}

/// The bias of a product run as a convolution: none, for up to 4096 columns.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
static NO_BIAS: [f32; 4096] = [0.0; 4096];

/// `nn.batch_matmul.f32`.
pub(crate) fn batch_matmul_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.batch_matmul.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let mm = MatMul::read(&a, 3)?;
        let (inputs, out) = split(K, arena, mm.output, mm.outputs.saturating_mul(4))?;
        let (x, y) = operands(&inputs, &mm, |i, o, n| i.f32s(o, n))?;
        let out = f32s_mut(K, out)?;
        // One product per batch, each through the GEMM at the operands' strides. The strides
        // were checked to stay inside the operands (MatMul::read).
        let [b0, b1, b2, m, n, k] = mm.dims;
        if m == 0 || n == 0 || k == 0 {
            out.fill(0.0);
            return Ok(());
        }
        let (l, r) = (&mm.lhs.strides, &mm.rhs.strides);
        // One product of whole rows: the float convolution's tiles, as a 1x1 convolution of
        // `m` pixels of `k` channels by a `[k, n]` filter with no bias.
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if b0 * b1 * b2 == 1 && (l[3], l[4], r[3], r[4]) == (k, 1, n, 1) && n <= NO_BIAS.len() {
            use hostrt_dsp::{Hw, Padding, Window};
            let one = Hw::square(1);
            if let Ok(window) = Window::new(Hw::new(m, 1), one, one, one, Padding::Valid) {
                let (lo, hi) = (f32::NEG_INFINITY, f32::INFINITY);
                let (input, filter, bias) = (&x[..m * k], &y[..k * n], &NO_BIAS[..n]);
                let p = FloatConv {
                    input,
                    dims: [1, m, 1, k],
                    filter,
                    bias,
                    out_channels: n,
                    window,
                    lo,
                    hi,
                    packed: None,
                };
                if crate::float_x86::conv(&p, out, crate::conv::split_rows(frame, k * n)) {
                    return Ok(());
                }
            }
        }
        let host = frame.exec_ctx().host();
        let (queue, alloc) = (host.work_queue(), host.allocator());
        let batches = b0 * b1 * b2;
        // Runs of whole products over the host's workers; one product alone, runs of its
        // rows. Each run is at least 2^17 multiply-adds.
        let (row_len, per_row) = if batches > 1 { (m * n, m * n * k) } else { (n, n * k) };
        let min_rows = crate::split_rows_min(per_row);
        for_row_runs(
            queue,
            alloc,
            out,
            RowSplit { per_thread: if batches > 1 { 4 } else { 1 }, ..RowSplit::new(row_len, min_rows) },
            &|first, c: &mut [f32]| {
                if batches == 1 {
                    // Rows first.. of the one product: A's rows start `first` rows further.
                    let rows = c.len() / n;
                    let a = &x[first * l[3]..];
                    sgemm_strided(rows, k, n, a, (l[3], l[4]), y, (r[3], r[4]), c);
                    return;
                }
                for (j, c) in c.chunks_exact_mut(m * n).enumerate() {
                    let i = first + j;
                    let (x0, x1, x2) = (i / (b1 * b2), i / b2 % b1, i % b2);
                    let lb = x0 * l[0] + x1 * l[1] + x2 * l[2];
                    let rb = x0 * r[0] + x1 * r[1] + x2 * r[2];
                    sgemm_strided(m, k, n, &x[lb..], (l[3], l[4]), &y[rb..], (r[3], r[4]), c);
                }
            },
        );
        Ok(())
    })
}
