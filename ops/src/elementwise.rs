//! Element-wise binary ops with broadcasting: `nn.add.*`, `nn.sub.*`, `nn.mul.*`,
//! `nn.maximum.*`, `nn.minimum.*`, `nn.squared_difference.*` and `nn.prelu.*` (`rhs` is the
//! slope of negative `lhs` values).
//!
//! Operands and output are 4-D regions `[offset, d0, d1, d2, d3]` (the importer pads lower
//! ranks with leading 1s); an operand dim of 1 is broadcast along the output's. An operand
//! may instead be a rank-4 dense attribute of the element type: a constant read in place
//! (a bias vector, PRELU's slopes), which then takes no arena space. Attributes,
//! in name order: `lhs`, `output`, then `quant` (int8) or `range` (float32, the fused
//! activation `[min, max]`), then `rhs`.
//! - `nn.add.i8` `quant`: `[lhs offset, lhs multiplier, lhs shift, rhs offset, rhs multiplier,
//!   rhs shift, output zero point, output multiplier, output shift, left shift, activation min,
//!   activation max]`: TFLite Micro's int8 `Add` (both inputs rescaled to a common scale
//!   after a left shift, summed, rescaled to the output).
//! - `nn.sub.i8` `quant`: as `nn.add.i8`, the rescaled operands subtracted.
//! - `nn.squared_difference.i8` `quant`: as `nn.add.i8` (left shift 7), the difference of the
//!   rescaled operands squared before the output rescaling.
//! - `nn.mul.i8` `quant`: `[lhs offset, rhs offset, output zero point, output multiplier,
//!   output shift, activation min, activation max]`: TFLite Micro's int8 `Mul`.
//! - `nn.maximum.i8`, `nn.minimum.i8` `quant`: `[min, max]` (operands and output share one
//!   quantization, so the raw values compare).
//! - `nn.prelu.i8` `quant`: `[input offset, alpha offset, output zero point, identity
//!   multiplier, identity shift, alpha multiplier, alpha shift, min, max]`: TFLite Micro's
//!   int8 `Prelu`.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_dsp::{AddParams, multiply_by_quantized_multiplier};

use crate::activation_arena::{Inputs, f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};

/// A binary op's operand: an arena region, or a constant's bytes.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub dims: [usize; 4],
    at: Source<'a>,
}

#[derive(Clone, Copy)]
enum Source<'a> {
    Arena(usize),
    Constant(&'a [u8]),
}

impl<'a> Operand<'a> {
    /// Attribute `i`: a dense constant of `dtype` (rank 4) or an arena region.
    pub fn read(a: &Attrs<'a>, i: usize, name: &str, dtype: DType) -> Result<Self, Diagnostic> {
        // Asked first, not tried: a failed `dense` formats its error, once per operand per
        // call in the hot path.
        if a.is_dense(i)? {
            let (data, dims) = a.dense::<u8, 4>(i, name, dtype)?;
            return Ok(Operand { dims, at: Source::Constant(data) });
        }
        let r = a.region::<4>(i, name)?;
        Ok(Operand { dims: r.dims, at: Source::Arena(r.offset) })
    }

    /// Its bytes: `len` of them at its offset in the arena's inputs, or the constant's.
    pub fn bytes<'b>(&self, inputs: &Inputs<'b>, len: usize) -> Result<&'b [u8], Diagnostic>
    where
        'a: 'b,
    {
        match self.at {
            Source::Arena(offset) => inputs.bytes(offset, len),
            Source::Constant(data) => Ok(data),
        }
    }
}

/// Strides of `operand` within `output`'s index space (0 along broadcast dims).
pub(crate) fn strides(
    kernel: &str,
    operand: &Operand<'_>,
    output: &Region<4>,
) -> Result<[usize; 4], Diagnostic> {
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

/// The operands and output of a binary op, checked: the operands' bytes (each holding the
/// elements of its dims), the output's.
struct Binary<'b> {
    out: &'b mut [u8],
    lhs: &'b [u8],
    rhs: &'b [u8],
    dims: [usize; 4],
    ls: [usize; 4],
    rs: [usize; 4],
}

fn binary<'b>(a: &Attrs<'b>, arena: &'b mut [u8], dtype: DType) -> Result<Binary<'b>, Diagnostic> {
    let k = a.kernel;
    let output = a.region::<4>(1, "output")?;
    let (lhs, rhs) = (Operand::read(a, 0, "lhs", dtype)?, Operand::read(a, 3, "rhs", dtype)?);
    let (ls, rs) = (strides(k, &lhs, &output)?, strides(k, &rhs, &output)?);
    let size = dtype.size();
    let (inputs, out) = split(k, arena, output.offset, output.byte_len(size)?)?;
    let len = |o: &Operand<'_>| {
        o.dims
            .iter()
            .try_fold(size, |p, &d| p.checked_mul(d))
            .ok_or_else(|| invalid(k, format_args!("size overflows")))
    };
    let (lb, rb) = (lhs.bytes(&inputs, len(&lhs)?)?, rhs.bytes(&inputs, len(&rhs)?)?);
    Ok(Binary { out, lhs: lb, rhs: rb, dims: output.dims, ls, rs })
}

/// The longest `quant` of an int8 binary op.
const QUANT: usize = 12;

/// An int8 binary op: `quant` holds `len` values, the last two the activation range;
/// `valid` checks the rest; `make(quant, outputs)` gives the function computing one output
/// (before the clamp) from the two inputs.
fn binary_i8<F: Fn(i32, i32) -> i32>(
    frame: &KernelFrame<'_>,
    kernel: &'static str,
    len: usize,
    valid: fn(&[i32]) -> bool,
    make: impl FnOnce([i32; QUANT], usize) -> F,
) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let q = a.ints(2, "quant", Some(len))?;
        let range = a.int8_range(q[len - 2], q[len - 1])?;
        if !valid(q) {
            return Err(invalid(kernel, format_args!("shifts out of range in 'quant'")));
        }
        let mut quant = [0; QUANT];
        quant[..len].copy_from_slice(q);
        let b = binary(&a, arena, DType::I8)?;
        let (x, y): (&[i8], &[i8]) = (bytemuck::cast_slice(b.lhs), bytemuck::cast_slice(b.rhs));
        let out = i8s_mut(b.out);
        let op = make(quant, out.len());
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| {
            out[o] = op(i32::from(x[l]), i32::from(y[r])).clamp(range.min, range.max) as i8;
        });
        Ok(())
    })
}

fn shift_ok(s: &i32) -> bool {
    (-31..=30).contains(s)
}

/// The three ops of [`rescaled_op`].
#[derive(Clone, Copy, PartialEq)]
enum Rescaled {
    Add,
    Sub,
    SquaredDifference,
}

/// Add, sub or squared difference (`quant` as `nn.add.i8`): both operands rescaled to a
/// common scale, combined, rescaled to the output ([`hostrt_dsp::AddParams`]). Operands of
/// the output's shape go to `hostrt_dsp::add`/`sub` whole (vectorized where the CPU allows);
/// broadcasting ones element by element, where each operand's rescaling depends on its int8
/// value alone, so for more outputs than int8 values both are tabulated once (256 entries
/// each) and each output costs one rescaling, not three.
fn rescaled_op(frame: &KernelFrame<'_>, kernel: &'static str, op: Rescaled) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let q = a.ints(2, "quant", Some(12))?;
        let p = AddParams {
            input_offset: [q[0], q[3]],
            input_multiplier: [q[1], q[4]],
            input_shift: [q[2], q[5]],
            left_shift: q[9],
            output_multiplier: q[7],
            output_shift: q[8],
            output_offset: q[6],
            activation: a.int8_range(q[10], q[11])?,
        };
        p.check().map_err(|e| dsp_error(kernel, e))?;
        let b = binary(&a, arena, DType::I8)?;
        let (x, y): (&[i8], &[i8]) = (bytemuck::cast_slice(b.lhs), bytemuck::cast_slice(b.rhs));
        let out = i8s_mut(b.out);
        // Operands broadcast to the output, so equal element counts mean equal shapes.
        let whole = x.len() == out.len() && y.len() == out.len();
        if whole && op != Rescaled::SquaredDifference {
            let f = if op == Rescaled::Add { hostrt_dsp::add } else { hostrt_dsp::sub };
            return f(&p, x, y, out).map_err(|e| dsp_error(kernel, e));
        }
        let tables = (out.len() > 256).then(|| {
            let (mut tx, mut ty) = ([0i32; 256], [0i32; 256]);
            for v in -128..=127i32 {
                // v is an int8 value: its byte is the index.
                let i = usize::from(v as u8);
                (tx[i], ty[i]) = (p.rescale(0, v), p.rescale(1, v));
            }
            (tx, ty)
        });
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| {
            let (xs, ys) = match &tables {
                Some((tx, ty)) => (tx[usize::from(x[l] as u8)], ty[usize::from(y[r] as u8)]),
                None => (p.rescale(0, i32::from(x[l])), p.rescale(1, i32::from(y[r]))),
            };
            out[o] = p.output(match op {
                Rescaled::Add => xs.saturating_add(ys),
                Rescaled::Sub => xs.saturating_sub(ys),
                Rescaled::SquaredDifference => xs.saturating_sub(ys).saturating_mul(xs.saturating_sub(ys)),
            });
        });
        Ok(())
    })
}

/// `nn.add.i8`.
pub(crate) fn add_i8(frame: &KernelFrame<'_>) {
    rescaled_op(frame, "nn.add.i8", Rescaled::Add)
}

/// `nn.sub.i8`.
pub(crate) fn sub_i8(frame: &KernelFrame<'_>) {
    rescaled_op(frame, "nn.sub.i8", Rescaled::Sub)
}

/// `nn.squared_difference.i8`.
pub(crate) fn squared_difference_i8(frame: &KernelFrame<'_>) {
    rescaled_op(frame, "nn.squared_difference.i8", Rescaled::SquaredDifference)
}

/// `nn.maximum.i8`.
pub(crate) fn maximum_i8(frame: &KernelFrame<'_>) {
    binary_i8(frame, "nn.maximum.i8", 2, |_| true, |_, _| |x, y| x.max(y))
}

/// `nn.minimum.i8`.
pub(crate) fn minimum_i8(frame: &KernelFrame<'_>) {
    binary_i8(frame, "nn.minimum.i8", 2, |_| true, |_, _| |x, y| x.min(y))
}

/// `nn.prelu.i8`.
pub(crate) fn prelu_i8(frame: &KernelFrame<'_>) {
    binary_i8(
        frame,
        "nn.prelu.i8",
        9,
        |q| shift_ok(&q[4]) && shift_ok(&q[6]),
        |q, _| {
            move |x, a| {
                let xv = q[0].saturating_add(x);
                let v = if xv >= 0 {
                    multiply_by_quantized_multiplier(xv, q[3], q[4])
                } else {
                    multiply_by_quantized_multiplier(xv.saturating_mul(q[1].saturating_add(a)), q[5], q[6])
                };
                v.saturating_add(q[2])
            }
        },
    )
}

/// `nn.mul.i8` (`quant`: both operands' offsets, the output's, its multiplier and shift, the
/// activation range). Operands of the output's shape go to `hostrt_dsp::mul` whole (four
/// values at a time on Arm's DSP extension); broadcasting ones element by element.
pub(crate) fn mul_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.mul.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let q = a.ints(2, "quant", Some(7))?;
        let p = hostrt_dsp::MulParams {
            input_offset: [q[0], q[1]],
            output_multiplier: q[3],
            output_shift: q[4],
            output_offset: q[2],
            activation: a.int8_range(q[5], q[6])?,
        };
        p.check().map_err(|e| dsp_error(K, e))?;
        let b = binary(&a, arena, DType::I8)?;
        let (x, y): (&[i8], &[i8]) = (bytemuck::cast_slice(b.lhs), bytemuck::cast_slice(b.rhs));
        let out = i8s_mut(b.out);
        // Operands broadcast to the output, so equal element counts mean equal shapes.
        if x.len() == out.len() && y.len() == out.len() {
            return hostrt_dsp::mul(&p, x, y, out).map_err(|e| dsp_error(K, e));
        }
        broadcast(&b.dims, &b.ls, &b.rs, |o, l, r| out[o] = p.output(x[l], y[r]));
        Ok(())
    })
}

fn binary_f32(frame: &KernelFrame<'_>, kernel: &'static str, op: impl Fn(f32, f32) -> f32 + Sync) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let (lo, hi) = a.float_range(2)?;
        let b = binary(&a, arena, DType::F32)?;
        let unaligned = || invalid(kernel, format_args!("an f32 operand is not 4-byte aligned"));
        let x: &[f32] = bytemuck::try_cast_slice(b.lhs).map_err(|_| unaligned())?;
        let y: &[f32] = bytemuck::try_cast_slice(b.rhs).map_err(|_| unaligned())?;
        let out = f32s_mut(kernel, b.out)?;
        let f = |x, y| crate::clamp_to(op(x, y), (lo, hi));
        if x.len() == out.len() && y.len() == out.len() {
            // Operands of the output's shape (a residual connection's add): in runs over
            // the host's threads.
            crate::for_element_runs(frame, out, &|at, out| {
                let (x, y) = (&x[at..][..out.len()], &y[at..][..out.len()]);
                apply_f32((&b.dims, &b.ls, &b.rs), x, y, out, f)
            });
        } else {
            apply_f32((&b.dims, &b.ls, &b.rs), x, y, out, f);
        }
        Ok(())
    })
}

/// `out[i] = f(x[l], y[r])` over the broadcast of `x` (strides `ls`) and `y` (`rs`) to
/// `dims`, compiled for AVX-512 or AVX2 where the CPU has them (as `activation::map_f32`:
/// the same operations in the same order, so the same results). MobileNetV2's residual add
/// of 48x48x16 values, alone: 4.0 -> 1.4 us.
fn apply_f32(
    shape: (&[usize; 4], &[usize; 4], &[usize; 4]),
    x: &[f32],
    y: &[f32],
    out: &mut [f32],
    f: impl Fn(f32, f32) -> f32,
) {
    crate::on_widest(
        #[inline(always)]
        || apply_f32_on(shape, x, y, out, f),
    )
}

/// The loops of [`apply_f32`], inlined into the compiled form `on_widest` runs.
#[inline(always)]
fn apply_f32_on(
    (dims, ls, rs): (&[usize; 4], &[usize; 4], &[usize; 4]),
    x: &[f32],
    y: &[f32],
    out: &mut [f32],
    f: impl Fn(f32, f32) -> f32,
) {
    // Operands broadcast to the output, so equal element counts mean equal shapes: one
    // flat loop (vectorized by the compiler), not four nested ones with index arithmetic.
    if x.len() == out.len() && y.len() == out.len() {
        for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
            *o = f(x, y);
        }
        return;
    }
    // One operand whole and the other repeated as a block (a bias row, a scalar) or
    // each of its values held over a block (a per-row statistic): flat loops again.
    let (whole_x, whole_y) = (x.len() == out.len(), y.len() == out.len());
    if whole_x || whole_y {
        let (part, strides) = if whole_x { (y, rs) } else { (x, ls) };
        let g = |w: f32, p: f32| if whole_x { f(w, p) } else { f(p, w) };
        let whole = if whole_x { x } else { y };
        match repeat(strides, dims, part.len()) {
            Some(Repeat::Block(1)) => {
                let p = part[0];
                for (o, &w) in out.iter_mut().zip(whole) {
                    *o = g(w, p);
                }
                return;
            }
            Some(Repeat::Block(n)) => {
                for (o, w) in out.chunks_exact_mut(n).zip(whole.chunks_exact(n)) {
                    for ((o, &w), &p) in o.iter_mut().zip(w).zip(part) {
                        *o = g(w, p);
                    }
                }
                return;
            }
            Some(Repeat::Held(n)) => {
                let held = out.chunks_exact_mut(n).zip(whole.chunks_exact(n)).zip(part.iter().cycle());
                for ((o, w), &p) in held {
                    for (o, &w) in o.iter_mut().zip(w) {
                        *o = g(w, p);
                    }
                }
                return;
            }
            None => {}
        }
    }
    broadcast(dims, ls, rs, |o, l, r| out[o] = f(x[l], y[r]));
}

/// How a broadcast operand of `len` elements with `strides` covers an output of `dims`.
#[derive(Debug, PartialEq)]
enum Repeat {
    /// The operand is the output's trailing block of this many elements, repeated.
    Block(usize),
    /// Each operand value is held over this many consecutive outputs, the operand cycled.
    Held(usize),
}

fn repeat(strides: &[usize; 4], dims: &[usize; 4], len: usize) -> Option<Repeat> {
    if len == 1 {
        return Some(Repeat::Block(1));
    }
    // Each output dim of more than one element is the operand's own (stride ≠ 0) or
    // broadcast (stride 0); dims of 1 say nothing. The operand's own dims must be adjacent:
    // it is then a block, cycled through as the output runs, each value held over the
    // output dims after the block.
    let own = |k: usize| strides[k] != 0;
    let spread = |k: usize| strides[k] == 0 && dims[k] > 1;
    let first = (0..4).find(|&k| own(k))?;
    let last = (0..4).rev().find(|&k| own(k))?;
    if (first..last).any(spread) {
        return None;
    }
    if (last..4).any(spread) {
        Some(Repeat::Held(dims[last + 1..].iter().product()))
    } else {
        Some(Repeat::Block(len))
    }
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

/// `nn.maximum.f32`.
pub(crate) fn maximum_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.maximum.f32", f32::max)
}

/// `nn.minimum.f32`.
pub(crate) fn minimum_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.minimum.f32", f32::min)
}

/// `nn.squared_difference.f32`.
pub(crate) fn squared_difference_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.squared_difference.f32", |a, b| (a - b) * (a - b))
}

/// `nn.prelu.f32`.
pub(crate) fn prelu_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.prelu.f32", |x, a| if x >= 0.0 { x } else { x * a })
}

/// `nn.div.f32`.
pub(crate) fn div_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.div.f32", |a, b| a / b)
}

/// `nn.pow.f32`.
pub(crate) fn pow_f32(frame: &KernelFrame<'_>) {
    binary_f32(frame, "nn.pow.f32", libm::powf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_recognized() {
        // A bias row [1, 1, 1, 8] over [1, 1, 4, 8]; a scalar; a per-row value [1, 1, 4, 1].
        assert_eq!(repeat(&[0, 0, 0, 1], &[1, 1, 4, 8], 8), Some(Repeat::Block(8)));
        assert_eq!(repeat(&[0, 0, 0, 0], &[2, 3, 4, 5], 1), Some(Repeat::Block(1)));
        assert_eq!(repeat(&[0, 0, 1, 0], &[1, 1, 4, 8], 4), Some(Repeat::Held(8)));
        assert_eq!(repeat(&[0, 1, 0, 0], &[1, 3, 4, 8], 3), Some(Repeat::Held(32)));
        // Per channel [1, 3, 1, 1] over [2, 3, 4, 5]: cycled, each held over 20.
        assert_eq!(repeat(&[0, 1, 0, 0], &[2, 3, 4, 5], 3), Some(Repeat::Held(20)));
        // [2, 1, 8] over [2, 4, 8] is neither.
        assert_eq!(repeat(&[0, 8, 0, 1], &[1, 2, 4, 8], 16), None);
    }

    /// Every way two operands broadcast to a small output gives the generic loop's result.
    #[test]
    fn fast_paths_match_the_generic_loop() {
        for out_dims in [[2usize, 3, 4, 5], [1, 3, 1, 5]] {
            for lmask in 0..16u32 {
                for rmask in 0..16u32 {
                    // A set bit keeps the output's dim, a clear one broadcasts it.
                    let dims = |m: u32| {
                        core::array::from_fn::<usize, 4, _>(|k| if m >> k & 1 == 1 { out_dims[k] } else { 1 })
                    };
                    let (ld, rd) = (dims(lmask), dims(rmask));
                    // Row-major over the operand's own dims, 0 along broadcast ones (`strides`).
                    let st = |d: [usize; 4]| {
                        let mut s = [0usize; 4];
                        let mut step = 1;
                        for k in (0..4).rev() {
                            s[k] = if d[k] == out_dims[k] && d[k] != 1 { step } else { 0 };
                            step *= d[k];
                        }
                        s
                    };
                    let (ls, rs) = (st(ld), st(rd));
                    let x: std::vec::Vec<f32> = (0..ld.iter().product::<usize>()).map(|i| i as f32).collect();
                    let y: std::vec::Vec<f32> =
                        (0..rd.iter().product::<usize>()).map(|i| (i * 7) as f32).collect();
                    let n = out_dims.iter().product();
                    let (mut fast, mut slow) = (std::vec![0f32; n], std::vec![0f32; n]);
                    apply_f32((&out_dims, &ls, &rs), &x, &y, &mut fast, |a, b| a * 1000.0 + b);
                    broadcast(&out_dims, &ls, &rs, |o, l, r| slow[o] = x[l] * 1000.0 + y[r]);
                    assert_eq!(fast, slow, "{ld:?} {rd:?}");
                }
            }
        }
    }
}
