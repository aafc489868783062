//! Element-wise activations over `[offset, elements]` regions `input` and `output`.
//!
//! - float32, TFLite's reference formulas: `nn.clamp.f32` (RELU, RELU6, RELU_N1_TO_1; third
//!   attribute `range` `[min, max]`), `nn.leaky_relu.f32` (`params` `[alpha]`),
//!   `nn.logistic.f32`, `nn.tanh.f32`, `nn.hard_swish.f32`.
//! - int8: `nn.lookup.i8`, third attribute `table`, a dense `i8` tensor of 256 entries
//!   indexed by the input byte. Every int8 activation is a function of one int8 value, so the
//!   importer computes TFLite Micro's integer arithmetic once per possible input
//!   (docs/models.md) and the kernel only looks it up.
//! - `nn.log_softmax.f32` over the last axis of `[offset, rows, depth]` regions.

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};

/// Most parameters of a [`unary_f32`] kernel.
pub(crate) const MAX_PARAMS: usize = 2;

/// A float32 activation `f(x, params)`; `params` is attribute 2 (`params_name`) of
/// `params_len` floats (at most [`MAX_PARAMS`]), absent when 0.
pub(crate) fn unary_f32(
    frame: &KernelFrame<'_>,
    kernel: &'static str,
    params: (&str, usize),
    f: impl Fn(f32, &[f32; MAX_PARAMS]) -> f32 + Sync,
) {
    unary_f32_runs(frame, kernel, params, |x, out, p| map_f32(x, out, |v| f(v, p)))
}

/// [`unary_f32`] with `map(x, out, params)` over each run of the input and output, for an
/// activation with a loop of its own.
pub(crate) fn unary_f32_runs(
    frame: &KernelFrame<'_>,
    kernel: &'static str,
    params: (&str, usize),
    map: impl Fn(&[f32], &mut [f32], &[f32; MAX_PARAMS]) + Sync,
) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, if params.1 == 0 { 2 } else { 3 })?;
        let (input, output, n) = a.same_size()?;
        // The parameters by value: read through the attribute's slice, each was loaded and
        // bounds-checked again for every element, which kept the loop scalar (a clamp of
        // 2,048 values: 1.2 us).
        debug_assert!(params.1 <= MAX_PARAMS, "{kernel}: more parameters than MAX_PARAMS");
        let mut p = [0.0; MAX_PARAMS];
        if params.1 > 0 {
            let v = a.floats(2, params.0, params.1)?;
            p.iter_mut().zip(v).for_each(|(p, &v)| *p = v);
        }
        let (inputs, out) = split(kernel, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, n)?;
        // In runs over the host's threads, as same-shaped binary ops are. The ONNX
        // transformer's GELUs of 64x512 values, two threads, profiled: 65 -> 40 us, the four.
        crate::for_element_runs(frame, f32s_mut(kernel, out)?, &|at, out| {
            map(&x[at..][..out.len()], out, &p)
        });
        Ok(())
    })
}

/// `out[i] = f(x[i])`: on x86-64 CPUs with AVX-512F or AVX2, compiled for them, so that a
/// branch-free `f` runs sixteen or eight lanes at a time rather than SSE2's four. The same
/// operations in the same order either way (no contraction into fused multiply-adds): the
/// same results.
pub(crate) fn map_f32(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32) {
    crate::on_widest(
        #[inline(always)]
        || {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = f(v);
            }
        },
    )
}

/// `nn.clamp.f32`.
pub(crate) fn clamp_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.clamp.f32";
    let range = Attrs::of(frame, K, 3).and_then(|a| a.float_range(2));
    if let Err(e) = range {
        return frame.report_error(e);
    }
    unary_f32(frame, K, ("range", 2), |x, r| crate::clamp_to(x, (r[0], r[1])))
}

/// `nn.leaky_relu.f32`.
pub(crate) fn leaky_relu_f32(frame: &KernelFrame<'_>) {
    unary_f32(frame, "nn.leaky_relu.f32", ("params", 1), |x, p| if x > 0.0 { x } else { x * p[0] })
}

/// `nn.logistic.f32`: TFLite's reference, with its cut-offs.
pub(crate) fn logistic_f32(frame: &KernelFrame<'_>) {
    unary_f32(frame, "nn.logistic.f32", ("", 0), |x, _| {
        if x > 16.619_047 {
            1.0
        } else if x < -9.0 {
            libm::expf(x)
        } else {
            1.0 / (1.0 + libm::expf(-x))
        }
    })
}

/// `nn.tanh.f32`.
pub(crate) fn tanh_f32(frame: &KernelFrame<'_>) {
    unary_f32(frame, "nn.tanh.f32", ("", 0), |x, _| libm::tanhf(x))
}

/// `nn.hard_swish.f32`: `x * relu6(x + 3) / 6`.
pub(crate) fn hard_swish_f32(frame: &KernelFrame<'_>) {
    unary_f32(frame, "nn.hard_swish.f32", ("", 0), |x, _| x * (x + 3.0).clamp(0.0, 6.0) / 6.0)
}

/// `nn.lookup.i8`.
pub(crate) fn lookup_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.lookup.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 3)?;
        let (input, output, n) = a.same_size()?;
        let (table, dims) = a.dense::<i8, 1>(2, "table", DType::I8)?;
        if dims != [256] {
            return Err(invalid(K, format_args!("'table' must hold 256 entries, holds {}", dims[0])));
        }
        let (inputs, out) = split(K, arena, output.offset, n)?;
        let x = inputs.i8s(input.offset, n)?;
        for (o, &v) in i8s_mut(out).iter_mut().zip(x) {
            *o = table[usize::from(v as u8)];
        }
        Ok(())
    })
}

/// `nn.log_softmax.f32`: `x - max - log(Σ exp(x - max))` per row.
pub(crate) fn log_softmax_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.log_softmax.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 2)?;
        let (input, output) = (a.region::<2>(0, "input")?, a.region::<2>(1, "output")?);
        if input.dims != output.dims || input.dims[1] == 0 {
            return Err(invalid(
                K,
                format_args!("input {:?} and output {:?} differ or are empty", input.dims, output.dims),
            ));
        }
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let depth = input.dims[1];
        for (row, o) in x.chunks_exact(depth).zip(f32s_mut(K, out)?.chunks_exact_mut(depth)) {
            let max = row.iter().copied().fold(f32::MIN, f32::max);
            let sum: f32 = row.iter().map(|&v| libm::expf(v - max)).sum();
            let log_sum = libm::logf(sum);
            for (o, &v) in o.iter_mut().zip(row) {
                *o = v - max - log_sum;
            }
        }
        Ok(())
    })
}
