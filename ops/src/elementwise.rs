//! Element-wise binary ops with broadcasting: `nn.add.*`, `nn.sub.f32`, `nn.mul.*`.
//!
//! Operands and output are 4-D regions `[offset, d0, d1, d2, d3]` (the importer pads lower
//! ranks with leading 1s); an operand dim of 1 is broadcast along the output's. Attributes,
//! in name order: `lhs`, `output`, then `quant` (int8) or `range` (float32, the fused
//! activation `[min, max]`), then `rhs`.
//! - `nn.add.i8` `quant`: `[lhs offset, lhs multiplier, lhs shift, rhs offset, rhs multiplier,
//!   rhs shift, output zero point, output multiplier, output shift, left shift, activation min,
//!   activation max]`: TFLite Micro's int8 `Add` (both inputs rescaled to a common scale
//!   after a left shift, summed, rescaled to the output).
//! - `nn.mul.i8` `quant`: `[lhs offset, rhs offset, output zero point, output multiplier,
//!   output shift, activation min, activation max]`: TFLite Micro's int8 `Mul`.

use hostrt_core::kernel::KernelFrame;
use hostrt_core::{Diagnostic, diag_fmt};
use hostrt_dsp::{ActivationRange, multiply_by_quantized_multiplier};

use crate::arena::{Inputs, f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};

/// Strides of `operand` within `output`'s index space (0 along broadcast dims).
fn strides(kernel: &str, operand: &Region<4>, output: &Region<4>) -> Result<[usize; 4], Diagnostic> {
    let mut s = [0usize; 4];
    let mut step = 1usize;
    for i in (0..4).rev() {
        let d = operand.dims[i];
        if d == output.dims[i] && d != 1 {
            s[i] = step;
        } else if d != 1 {
            return Err(invalid(
                kernel,
                format_args!("operand {:?} does not broadcast to {:?}", operand.dims, output.dims),
            ));
        }
        step = step.checked_mul(d).ok_or_else(|| invalid(kernel, format_args!("size overflows")))?;
    }
    Ok(s)
}

/// Calls `f(out_index, lhs_index, rhs_index)` for every output element, row-major.
fn broadcast(out: &[usize; 4], ls: &[usize; 4], rs: &[usize; 4], mut f: impl FnMut(usize, usize, usize)) {
    let mut k = 0;
    for a in 0..out[0] {
        for b in 0..out[1] {
            for c in 0..out[2] {
                for d in 0..out[3] {
                    let l = a * ls[0] + b * ls[1] + c * ls[2] + d * ls[3];
                    let r = a * rs[0] + b * rs[1] + c * rs[2] + d * rs[3];
                    f(k, l, r);
                    k += 1;
                }
            }
        }
    }
}

/// The operands and output of a binary op, checked.
struct Binary<'b> {
    inputs: Inputs<'b>,
    out: &'b mut [u8],
    lhs: Region<4>,
    rhs: Region<4>,
    dims: [usize; 4],
    ls: [usize; 4],
    rs: [usize; 4],
}

fn binary<'b>(a: &Attrs<'_>, arena: &'b mut [u8], size: usize) -> Result<Binary<'b>, Diagnostic> {
    let k = a.kernel;
    let (lhs, output, rhs) =
        (a.region::<4>(0, "lhs")?, a.region::<4>(1, "output")?, a.region::<4>(3, "rhs")?);
    let (ls, rs) = (strides(k, &lhs, &output)?, strides(k, &rhs, &output)?);
    let bytes = output.bytes(size).ok_or_else(|| invalid(k, format_args!("size overflows")))?.1;
    let (inputs, out) = split(k, arena, output.offset, bytes)?;
    Ok(Binary { inputs, out, lhs, rhs, dims: output.dims, ls, rs })
}

fn elements(kernel: &str, r: &Region<4>) -> Result<usize, Diagnostic> {
    r.elements().ok_or_else(|| invalid(kernel, format_args!("size overflows")))
}

/// `nn.add.i8`.
pub(crate) fn add_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.add.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let q = a.ints(2, "quant", Some(12))?;
        let range =
            ActivationRange::new(q[10], q[11]).map_err(|e| diag_fmt!(InvalidArgument, "{}: {}", K, e))?;
        if !(0..=20).contains(&q[9]) || [q[2], q[5], q[8]].iter().any(|s| !(-31..=30).contains(s)) {
            return Err(invalid(K, format_args!("shifts out of range in 'quant'")));
        }
        let b = binary(&a, arena, 1)?;
        let x = b.inputs.i8s(b.lhs.offset, elements(K, &b.lhs)?)?;
        let y = b.inputs.i8s(b.rhs.offset, elements(K, &b.rhs)?)?;
        let out = i8s_mut(b.out);
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| {
            // Offsets are zero points in [-128, 127] (negated), so the shifted values fit i32.
            let xv = (q[0].saturating_add(i32::from(x[l]))).saturating_mul(1 << q[9]);
            let yv = (q[3].saturating_add(i32::from(y[r]))).saturating_mul(1 << q[9]);
            let xs = multiply_by_quantized_multiplier(xv, q[1], q[2]);
            let ys = multiply_by_quantized_multiplier(yv, q[4], q[5]);
            let sum =
                multiply_by_quantized_multiplier(xs.saturating_add(ys), q[7], q[8]).saturating_add(q[6]);
            out[o] = sum.clamp(range.min, range.max) as i8;
        });
        Ok(())
    })
}

/// `nn.mul.i8`.
pub(crate) fn mul_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.mul.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let q = a.ints(2, "quant", Some(7))?;
        let range =
            ActivationRange::new(q[5], q[6]).map_err(|e| diag_fmt!(InvalidArgument, "{}: {}", K, e))?;
        if !(-31..=30).contains(&q[4]) {
            return Err(invalid(K, format_args!("shift out of range in 'quant'")));
        }
        let b = binary(&a, arena, 1)?;
        let x = b.inputs.i8s(b.lhs.offset, elements(K, &b.lhs)?)?;
        let y = b.inputs.i8s(b.rhs.offset, elements(K, &b.rhs)?)?;
        let out = i8s_mut(b.out);
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| {
            let xv = q[0].saturating_add(i32::from(x[l]));
            let yv = q[1].saturating_add(i32::from(y[r]));
            let v = multiply_by_quantized_multiplier(xv.saturating_mul(yv), q[3], q[4]).saturating_add(q[2]);
            out[o] = v.clamp(range.min, range.max) as i8;
        });
        Ok(())
    })
}

fn binary_f32(frame: &KernelFrame<'_>, kernel: &'static str, op: fn(f32, f32) -> f32) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let (lo, hi) = crate::conv::range(&a, 2)?;
        let b = binary(&a, arena, 4)?;
        let x = b.inputs.f32s(b.lhs.offset, elements(kernel, &b.lhs)?)?;
        let y = b.inputs.f32s(b.rhs.offset, elements(kernel, &b.rhs)?)?;
        let out = f32s_mut(kernel, b.out)?;
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| out[o] = op(x[l], y[r]).clamp(lo, hi));
        Ok(())
    })
}

/// `nn.add.f32`.
pub(crate) fn add_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.add.f32", |a, b| a + b)
}

/// `nn.sub.f32`.
pub(crate) fn sub_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.sub.f32", |a, b| a - b)
}

/// `nn.mul.f32`.
pub(crate) fn mul_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.mul.f32", |a, b| a * b)
}
