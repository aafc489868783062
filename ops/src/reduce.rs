//! Sums over a set of axes (MEAN and SUM): `nn.sum.i8` and `nn.sum.f32`; and float32
//! maxima, minima and products (`nn.reduce_max.f32`, `nn.reduce_min.f32`,
//! `nn.reduce_prod.f32`: attributes `dims`, `input`, `output`, `reduce`).
//!
//! Attributes, in name order: `dims` (the input's 6 dims, leading 1s for lower ranks), then
//! `divisor` (float32: `[n]`, what each sum is divided by: the count for MEAN, 1 for SUM),
//! `input` and `output` (`[offset]`), then `quant` (int8: `[input zero point, output zero
//! point, multiplier, shift]`: TFLite Micro's `QuantizedMeanOrSum`, whose 1/count the
//! importer has folded into the multiplier), and `reduce` (6 flags, 1 for a summed axis).
//! The output holds the kept axes in order. Each output element sums its inputs in
//! row-major order, as TFLite's reference does.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_dsp::multiply_by_quantized_multiplier;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};

const RANK: usize = 6;

/// The reduction's shape: kept and summed axes as `(count, input stride)`, outermost first.
struct Reduction {
    kept: [(usize, usize); RANK],
    summed: [(usize, usize); RANK],
    inputs: usize,
    outputs: usize,
    /// Inputs per output.
    count: usize,
}

impl Reduction {
    fn read(a: &Attrs<'_>, dims_at: usize, reduce_at: usize) -> Result<Reduction, Diagnostic> {
        let dims = a.ints(dims_at, "dims", Some(RANK))?;
        let flags = a.ints(reduce_at, "reduce", Some(RANK))?;
        let overflow = || invalid(a.kernel, format_args!("dims {:?} overflow", dims));
        let mut r =
            Reduction { kept: [(1, 0); RANK], summed: [(1, 0); RANK], inputs: 1, outputs: 1, count: 1 };
        let mut stride = 1usize;
        for k in (0..RANK).rev() {
            let d = usize::try_from(dims[k]).map_err(|_| overflow())?;
            match flags[k] {
                0 => {
                    r.kept[k] = (d, stride);
                    r.outputs = r.outputs.checked_mul(d).ok_or_else(overflow)?;
                }
                1 => {
                    r.summed[k] = (d, stride);
                    r.count = r.count.checked_mul(d).ok_or_else(overflow)?;
                }
                f => return Err(invalid(a.kernel, format_args!("'reduce' flag {} is not 0 or 1", f))),
            }
            stride = stride.checked_mul(d).ok_or_else(overflow)?;
        }
        r.inputs = stride;
        Ok(r)
    }

    /// Folds each output's inputs of `x` into one value, from `init` by `step`, in
    /// row-major order of the summed axes, and hands it to `emit(output index, value)`.
    ///
    /// Outputs go in blocks of up to [`BLOCK`] along a kept innermost axis: each summed index
    /// then steps a whole block, contiguous in `x`, so the loop over the block is a vector
    /// loop, and every output still folds its inputs in the same order as alone.
    fn fold<T: Copy, A: Copy>(
        &self,
        x: &[T],
        init: A,
        step: impl Fn(A, T) -> A,
        mut emit: impl FnMut(usize, A),
    ) {
        let inner = self.kept[RANK - 1].0;
        let mut outer = self.kept;
        outer[RANK - 1] = (1, 0);
        let (count, stride) = self.summed[RANK - 1];
        let mut rest = self.summed;
        rest[RANK - 1] = (1, 0);
        if count == 0 {
            // Nothing summed: every output is `init` (an empty sum).
            (0..self.outputs).for_each(|o| emit(o, init));
            return;
        }
        let mut o = 0;
        odometer(&outer, |base| {
            for c0 in (0..inner).step_by(BLOCK) {
                let m = (inner - c0).min(BLOCK);
                let mut acc = [init; BLOCK];
                odometer(&rest, |off| {
                    let at = base + off + c0;
                    if m == 1 {
                        let a = &mut acc[0];
                        for &v in x[at..].iter().step_by(stride.max(1)).take(count) {
                            *a = step(*a, v);
                        }
                        return;
                    }
                    for k in 0..count {
                        for (a, &v) in acc[..m].iter_mut().zip(&x[at + k * stride..][..m]) {
                            *a = step(*a, v);
                        }
                    }
                });
                for (j, &a) in acc[..m].iter().enumerate() {
                    emit(o + c0 + j, a);
                }
            }
            o += inner;
        });
    }
}

/// Outputs folded side by side along a kept innermost axis.
const BLOCK: usize = 64;

/// Calls `f` with the offset of every index of `axes` (`(count, stride)`), row-major.
fn odometer(axes: &[(usize, usize); RANK], mut f: impl FnMut(usize)) {
    if axes.iter().any(|a| a.0 == 0) {
        return;
    }
    let mut idx = [0usize; RANK];
    loop {
        f(idx.iter().zip(axes).map(|(i, a)| i * a.1).sum());
        let mut k = RANK;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < axes[k].0 {
                break;
            }
            idx[k] = 0;
        }
    }
}

fn offset(a: &Attrs<'_>, i: usize, name: &str) -> Result<usize, Diagnostic> {
    let v = a.ints(i, name, Some(1))?[0];
    usize::try_from(v).map_err(|_| invalid(a.kernel, format_args!("'{}' is negative", name)))
}

/// `nn.sum.i8`.
pub(crate) fn sum_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.sum.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let r = Reduction::read(&a, 0, 4)?;
        let (input, output) = (offset(&a, 1, "input")?, offset(&a, 2, "output")?);
        let q = a.ints(3, "quant", Some(4))?;
        if !(-31..=30).contains(&q[3]) {
            return Err(invalid(K, format_args!("shift {} out of range", q[3])));
        }
        let (inputs, out) = split(K, arena, output, r.outputs)?;
        let x = inputs.i8s(input, r.inputs)?;
        let out = i8s_mut(out);
        // At most 2^31 inputs of at most 2^8: the sum wraps as TFLite's int32 does.
        r.fold(
            x,
            0i32,
            |s, v| s.wrapping_add(i32::from(v)),
            |o, sum| {
                // The count is below 2^31 (inputs fit the arena's i32 offsets); wrapping as TFLite's.
                let shifted = sum.wrapping_sub(q[0].wrapping_mul(r.count as i32));
                let v = multiply_by_quantized_multiplier(shifted, q[2], q[3]).saturating_add(q[1]);
                out[o] = v.clamp(-128, 127) as i8;
            },
        );
        Ok(())
    })
}

/// `nn.sum.f32`.
pub(crate) fn sum_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.sum.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let r = Reduction::read(&a, 0, 4)?;
        let divisor = a.floats(1, "divisor", 1)?[0];
        let (input, output) = (offset(&a, 2, "input")?, offset(&a, 3, "output")?);
        let (inputs, out) = split(K, arena, output, r.outputs.saturating_mul(4))?;
        let x = inputs.f32s(input, r.inputs)?;
        let out = f32s_mut(K, out)?;
        r.fold(x, 0.0f32, |s, v| s + v, |o, sum| out[o] = sum / divisor);
        Ok(())
    })
}

/// A float32 fold of every reduced set from `init` with `op`.
fn fold_f32(frame: &KernelFrame<'_>, kernel: &'static str, init: f32, op: impl Fn(f32, f32) -> f32) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let r = Reduction::read(&a, 0, 3)?;
        let (input, output) = (offset(&a, 1, "input")?, offset(&a, 2, "output")?);
        let (inputs, out) = split(kernel, arena, output, r.outputs.saturating_mul(4))?;
        let x = inputs.f32s(input, r.inputs)?;
        let out = f32s_mut(kernel, out)?;
        r.fold(x, init, &op, |o, v| out[o] = v);
        Ok(())
    })
}

/// `nn.reduce_max.f32` (NaN propagates).
pub(crate) fn reduce_max_f32(frame: &KernelFrame<'_>) {
    fold_f32(frame, "nn.reduce_max.f32", f32::NEG_INFINITY, |s, v| if v > s || v.is_nan() { v } else { s })
}

/// `nn.reduce_min.f32` (NaN propagates).
pub(crate) fn reduce_min_f32(frame: &KernelFrame<'_>) {
    fold_f32(frame, "nn.reduce_min.f32", f32::INFINITY, |s, v| if v < s || v.is_nan() { v } else { s })
}

/// `nn.reduce_prod.f32`.
pub(crate) fn reduce_prod_f32(frame: &KernelFrame<'_>) {
    fold_f32(frame, "nn.reduce_prod.f32", 1.0, |s, v| s * v)
}
