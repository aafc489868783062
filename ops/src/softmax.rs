//! `nn.softmax.*` and `nn.log_softmax.i8` over the last axis of a `[rows, depth]` view.
//!
//! Attributes, in name order:
//! - `nn.softmax.i8`: `input`, `output` (`[offset, rows, depth]`), `params` (`[input
//!   multiplier, input left shift, diff min]`, TFLite's `PreprocessSoftmaxScaling`); the output
//!   has TFLite's fixed quantization (scale 1/256, zero point -128). Bit-exact with TFLite Micro.
//! - `nn.softmax.f32`: `beta` (`[beta]`), `input`, `output`.
//! - `nn.log_softmax.i8`: `input`, `output`, `params` (`[input multiplier, input left shift,
//!   reverse scaling divisor, reverse scaling right shift, diff min]`, TFLite's
//!   `PreprocessLogSoftmaxScalingExp`); the output has TFLite's fixed quantization (scale
//!   16/256, zero point 127). Bit-exact with TFLite Micro. (`nn.log_softmax.f32` is with the
//!   float32 activations.)

use hostrt_core::Diagnostic;
use hostrt_core::kernel::{KernelFrame, PrepareInput, Prepared};
use hostrt_dsp::{LogSoftmaxParams, SoftmaxParams};

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, dsp_error, invalid};
use crate::math::{exp, lane_max, lane_sum};
use crate::prepared::{keep, record, sizes, words};

const SOFTMAX_I8: &str = "nn.softmax.i8";

/// `nn.softmax.i8` as its attributes describe it, checked: the input's offset, the row
/// length, the element count, the output's offset, and TFLite's scaling parameters.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct SoftmaxI8 {
    /// Input offset, depth (row length), elements, output offset.
    regions: [u32; 4],
    params: [i32; 3],
}

fn decode_softmax_i8(a: &Attrs<'_>) -> Result<([usize; 4], [i32; 3]), Diagnostic> {
    const K: &str = SOFTMAX_I8;
    let (input, output) = (a.region::<2>(0, "input")?, a.region::<2>(1, "output")?);
    let p = a.ints(2, "params", Some(3))?;
    if input.dims != output.dims {
        return Err(invalid(K, format_args!("input {:?} and output {:?} differ", input.dims, output.dims)));
    }
    Ok(([input.offset, input.dims[1], input.elements()?, output.offset], [p[0], p[1], p[2]]))
}

/// `nn.softmax.i8`'s prepare function.
pub(crate) fn prepare_softmax_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    let (regions, params) = decode_softmax_i8(&Attrs::of_slice(input.attrs(), SOFTMAX_I8, 3).ok()?).ok()?;
    keep(&SoftmaxI8 { regions: words(regions)?, params })
}

/// `nn.softmax.i8`.
pub(crate) fn softmax_i8(frame: &KernelFrame<'_>) {
    const K: &str = SOFTMAX_I8;
    with_arena(frame, |arena| {
        let ([at, depth, len, to], p) = match frame.prepared().and_then(record::<SoftmaxI8>) {
            Some(r) => (sizes(r.regions), r.params),
            None => decode_softmax_i8(&Attrs::of(frame, K, 3)?)?,
        };
        let params = SoftmaxParams { input_multiplier: p[0], input_left_shift: p[1], diff_min: p[2] };
        let (inputs, out) = split(K, arena, to, len)?;
        let x = inputs.i8s(at, len)?;
        hostrt_dsp::softmax(&params, depth, x, i8s_mut(out)).map_err(|e| dsp_error(K, e))
    })
}

/// `nn.log_softmax.i8`.
pub(crate) fn log_softmax_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.log_softmax.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 3)?;
        let (input, output) = (a.region::<2>(0, "input")?, a.region::<2>(1, "output")?);
        let p = a.ints(2, "params", Some(5))?;
        if input.dims != output.dims {
            return Err(invalid(
                K,
                format_args!("input {:?} and output {:?} differ", input.dims, output.dims),
            ));
        }
        let len = input.elements()?;
        let params = LogSoftmaxParams {
            input_multiplier: p[0],
            input_left_shift: p[1],
            reverse_scaling_divisor: p[2],
            reverse_scaling_right_shift: p[3],
            diff_min: p[4],
        };
        let (inputs, out) = split(K, arena, output.offset, len)?;
        let x = inputs.i8s(input.offset, len)?;
        hostrt_dsp::log_softmax(&params, input.dims[1], x, i8s_mut(out)).map_err(|e| dsp_error(K, e))
    })
}

/// `nn.softmax.f32`: TFLite's reference float softmax (`exp(beta * (x - max))`, normalized).
pub(crate) fn softmax_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.softmax.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 3)?;
        let beta = a.floats(0, "beta", 1)?[0];
        let (input, output) = (a.region::<2>(1, "input")?, a.region::<2>(2, "output")?);
        if input.dims != output.dims || input.dims[1] == 0 {
            return Err(invalid(
                K,
                format_args!("input {:?} and output {:?} differ or are empty", input.dims, output.dims),
            ));
        }
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        let depth = input.dims[1];
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if hostrt_dsp::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { softmax_rows_avx2(x, out, depth, beta) };
            return Ok(());
        }
        softmax_rows(x, out, depth, beta);
        Ok(())
    })
}

/// Each row of `depth` values of `x`, softmax'd into `out`.
#[inline(always)]
fn softmax_rows(x: &[f32], out: &mut [f32], depth: usize, beta: f32) {
    for (row, o) in x.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        let max = lane_max(row);
        // Exponentials and their sum as vector loops (math.rs), within 2e-7 of libm's.
        for (o, &v) in o.iter_mut().zip(row) {
            *o = exp((v - max) * beta);
        }
        let sum = lane_sum(o, |e| e);
        for o in o.iter_mut() {
            *o /= sum;
        }
    }
}

/// [`softmax_rows`] compiled for AVX2: eight lanes at a time, the same operations in the
/// same order (no fused multiply-adds), so the same results.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2,fma")]
fn softmax_rows_avx2(x: &[f32], out: &mut [f32], depth: usize, beta: f32) {
    softmax_rows(x, out, depth, beta)
}
