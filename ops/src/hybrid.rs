//! Dynamic-range ("hybrid") layers: float32 input and output, int8 weights.
//! `nn.fully_connected.hybrid`, `nn.conv_2d.hybrid` and `nn.depthwise_conv_2d.hybrid`
//! follow LiteRT's builtin kernels (`EvalHybridDense` of fully_connected.cc,
//! `EvalHybridPerChannel` / `EvalHybrid` of conv.cc and depthwise_conv.cc) as its x86-64
//! builds run them: each batch of the input (a row for fully connected, an image for the
//! convolutions) is quantized to int8 on the fly, into a step-local scratch region of the
//! arena, the int8 dot products are exact int32 sums, and each output is
//! `act(float(sum) * (filter scale[c] * input scale) + bias[c])` (depthwise:
//! `float(sum) * filter scale[c] * input scale`, in LiteRT's order for each channel).
//!
//! Attributes, in name order: `bias` (dense f32 `[out]`), `filter` (dense i8, TFLite's
//! layouts: `[out, in]`, `[out, kh, kw, in]`, `[1, kh, kw, out]`), `input` and `output`
//! (`[offset, batches, depth]` or `[offset, n, h, w, c]`, f32), `quantize` (`"symmetric"`:
//! `SymmetricQuantizeFloats`, zero point 0, values in -127..=127; `"asymmetric"`:
//! `AsymmetricQuantizeFloats`, a zero point per batch), `range` (`[activation min, max]`),
//! `scales` (f32, the filter's scale of every output channel), `scratch` (`[offset, bytes]`:
//! room for one batch of quantized input, apart from the input and the output), and for the
//! convolutions `window` (`[stride h, stride w, dilation h, dilation w, pad top, pad left]`).
//!
//! The input rounding is that of LiteRT's NEON kernels (`NeonSymmetricQuantizeFloats`,
//! `NeonAsymmetricQuantizeFloats`, through NEON_2_SSE on x86): `trunc(v ± 0.5)` in float for
//! the leading multiple of 8 values, `std::round` for the rest. Padding taps contribute
//! nothing (LiteRT fills them with the zero point and subtracts the filter's row sums).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};
use crate::conv::tap;

/// How a batch of float input becomes int8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quantize {
    Symmetric,
    Asymmetric,
}

/// LiteRT's vectorized `RoundToNearest` without `vcvtaq` (NEON_2_SSE on x86): adds ±0.5 in
/// float, then truncates (saturating).
fn round_vector(v: f32) -> i32 {
    (v + if v < 0.0 { -0.5 } else { 0.5 }) as i32
}

/// `std::round` (half away from zero), saturating.
fn round_scalar(v: f32) -> i32 {
    let t = v as i32;
    // Exact: below 2^24 both are exact; above, `v` is an integer and equals `t` (or saturates).
    let frac = v - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// `std::round` of a double in `(-128, 127)`.
fn round_f64(v: f64) -> i32 {
    let t = v as i32;
    let frac = v - f64::from(t);
    if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    }
}

/// Writes `round(x * inv) + zero point` clamped to `lo..=hi` into `q`, rounding as LiteRT's
/// NEON kernels: the vector rule for the leading multiple of 8 values, `std::round` after.
fn quantize_with(x: &[f32], q: &mut [i8], inv: f32, zero_point: i32, (lo, hi): (i32, i32)) {
    let vectors = x.len() & !7;
    for (i, (&v, q)) in x.iter().zip(q.iter_mut()).enumerate() {
        let r = if i < vectors { round_vector(v * inv) } else { round_scalar(v * inv) };
        // In -128..=127 after the clamp.
        *q = r.saturating_add(zero_point).clamp(lo, hi) as i8;
    }
}

/// LiteRT's `SymmetricQuantizeFloats`: scale `max |x| / 127`, zero point 0. Returns the
/// scaling factor and the zero point.
fn symmetric(x: &[f32], q: &mut [i8]) -> (f32, i32) {
    let (lo, hi) = x.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let range = lo.abs().max(hi.abs());
    if x.is_empty() || range == 0.0 {
        q.fill(0);
        return (1.0, 0);
    }
    quantize_with(x, q, 127.0 / range, 0, (-127, 127));
    (range / 127.0, 0)
}

/// LiteRT's `AsymmetricQuantizeFloats` (NEON): the range `[min(x, 0), max(x, 0)]` onto
/// -128..=127 with a nudged zero point, in double precision as LiteRT computes it.
fn asymmetric(x: &[f32], q: &mut [i8]) -> (f32, i32) {
    let (lo, hi) = x.iter().fold((0.0f32, 0.0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if lo == hi {
        q.fill(0);
        return (1.0, 0);
    }
    // `rmax - rmin` in float (LiteRT's NEON kernel keeps them float), the rest in double.
    let scale = f64::from(hi - lo) / 255.0;
    let (from_min, from_max) = (f64::from(lo) / scale, f64::from(hi) / scale);
    let zero_point =
        if 128.0 + from_min.abs() < 127.0 + from_max.abs() { -128.0 - from_min } else { 127.0 - from_max };
    let zero_point = if zero_point <= -128.0 {
        -128
    } else if zero_point >= 127.0 {
        127
    } else {
        round_f64(zero_point)
    };
    let factor = scale as f32;
    let inv = if factor == 0.0 { 0.0 } else { (1.0 / f64::from(factor)) as f32 };
    quantize_with(x, q, inv, zero_point, (-128, 127));
    (factor, zero_point)
}

/// `Σ (q - zero point) * w`, exact modulo 2^32 as LiteRT's int32 accumulators.
fn dot(q: &[i8], w: &[i8], zero_point: i32) -> i32 {
    q.iter().zip(w).fold(0i32, |acc, (&x, &w)| acc.wrapping_add((i32::from(x) - zero_point) * i32::from(w)))
}

/// The attributes every hybrid layer has after `input`, and the arena layout it runs over.
struct Layer<'a> {
    bias: &'a [f32],
    scales: &'a [f32],
    quantize: Quantize,
    range: (f32, f32),
    scratch: Region<1>,
}

impl Layer<'_> {
    /// `bias` (attribute 0) and, from attribute `at`: `quantize`, `range`, `scales` (one
    /// per channel) and `scratch`.
    fn read<'a>(a: &Attrs<'a>, at: usize, channels: usize) -> Result<Layer<'a>, Diagnostic> {
        let (bias, [bias_len]) = a.dense::<f32, 1>(0, "bias", DType::F32)?;
        if bias_len != channels {
            return Err(invalid(
                a.kernel,
                format_args!("'bias' has {} values for {} channels", bias_len, channels),
            ));
        }
        let quantize = match a.string(at, "quantize")? {
            "symmetric" => Quantize::Symmetric,
            "asymmetric" => Quantize::Asymmetric,
            other => {
                return Err(invalid(
                    a.kernel,
                    format_args!("'quantize' must be \"symmetric\" or \"asymmetric\", got \"{}\"", other),
                ));
            }
        };
        let range = a.float_range(at + 1)?;
        let scales = a.floats(at + 2, "scales", channels)?;
        let scratch = a.region::<1>(at + 3, "scratch")?;
        Ok(Layer { bias, scales, quantize, range, scratch })
    }

    /// Runs the layer batch by batch: quantizes batch `b` of the input (`batches` runs of
    /// `in_len` f32 at `input`) into the scratch region, then `body` computes batch `b` of
    /// the output (`out_len` f32 at `output`) from the quantized values, their zero point
    /// and their scaling factor.
    fn by_batch(
        &self,
        kernel: &'static str,
        arena: &mut [u8],
        (input, output): (usize, usize),
        (batches, in_len, out_len): (usize, usize, usize),
        mut body: impl FnMut(&[i8], i32, f32, &mut [f32]),
    ) -> Result<(), Diagnostic> {
        let overflow = || invalid(kernel, format_args!("size overflows"));
        let in_bytes = in_len.checked_mul(4).ok_or_else(overflow)?;
        let out_bytes = out_len.checked_mul(4).ok_or_else(overflow)?;
        let total = |bytes: usize| batches.checked_mul(bytes).ok_or_else(overflow);
        if self.scratch.dims[0] < in_len {
            return Err(invalid(
                kernel,
                format_args!("'scratch' of {} bytes cannot hold {} inputs", self.scratch.dims[0], in_len),
            ));
        }
        // The input and the scratch lie outside the whole output (each batch then splits
        // the arena around the part it writes).
        let (inputs, _) = split(kernel, arena, output, total(out_bytes)?)?;
        inputs.bytes(input, total(in_bytes)?)?;
        inputs.bytes(self.scratch.offset, in_len)?;
        for b in 0..batches {
            let (inputs, q) = split(kernel, arena, self.scratch.offset, in_len)?;
            // In range: batches * in_bytes was checked above.
            let x = inputs.f32s(input + b * in_bytes, in_len)?;
            let q = i8s_mut(q);
            let (factor, zero_point) = match self.quantize {
                Quantize::Symmetric => symmetric(x, q),
                Quantize::Asymmetric => asymmetric(x, q),
            };
            let (inputs, out) = split(kernel, arena, output + b * out_bytes, out_bytes)?;
            let q = inputs.i8s(self.scratch.offset, in_len)?;
            body(q, zero_point, factor, f32s_mut(kernel, out)?);
        }
        Ok(())
    }

    /// `float(sum) * (scale[c] * factor) + bias[c]`, clamped (LiteRT's fully connected and
    /// convolution epilogue).
    fn output(&self, sum: i32, c: usize, factor: f32) -> f32 {
        (sum as f32 * (self.scales[c] * factor) + self.bias[c]).clamp(self.range.0, self.range.1)
    }
}

/// `nn.fully_connected.hybrid`.
pub(crate) fn fully_connected_hybrid(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fully_connected.hybrid";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 8)?;
        let (filter, [units, depth]) = a.dense::<i8, 2>(1, "filter", DType::I8)?;
        let (input, output) = (a.region::<2>(2, "input")?, a.region::<2>(3, "output")?);
        let l = Layer::read(&a, 4, units)?;
        let batches = input.dims[0];
        if input.dims[1] != depth || output.dims != [batches, units] || depth == 0 {
            return Err(invalid(
                K,
                format_args!(
                    "filter [{}, {}] does not fit input {:?} and output {:?}",
                    units, depth, input.dims, output.dims
                ),
            ));
        }
        l.by_batch(K, arena, (input.offset, output.offset), (batches, depth, units), |q, zp, factor, out| {
            for (c, (o, w)) in out.iter_mut().zip(filter.chunks_exact(depth)).enumerate() {
                *o = l.output(dot(q, w, zp), c, factor);
            }
        })
    })
}

/// The geometry of a hybrid convolution, checked against the filter.
struct Conv<'a> {
    filter: &'a [i8],
    /// `[kh, kw]`.
    taps: [usize; 2],
    input: Region<4>,
    output: Region<4>,
    /// `[stride h, stride w, dilation h, dilation w, pad top, pad left]`.
    window: [usize; 6],
}

impl Conv<'_> {
    /// The in-bounds taps of output pixel `(oy, ox)`: `(input pixel index in the batch,
    /// tap index ky * kw + kx)`.
    fn taps(&self, oy: usize, ox: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let [_, ih, iw, _] = self.input.dims;
        let [sh, sw, dh, dw, ph, pw] = self.window;
        let [kh, kw] = self.taps;
        (0..kh).filter_map(move |ky| tap(oy, sh, ph, ky, dh, ih).map(|y| (ky, y))).flat_map(move |(ky, y)| {
            (0..kw).filter_map(move |kx| tap(ox, sw, pw, kx, dw, iw).map(|x| (y * iw + x, ky * kw + kx)))
        })
    }
}

/// Reads a convolution's attributes: `filter` (dims `[d0, kh, kw, d3]`), `input`,
/// `output`, the common ones and `window`; returns them with the values per batch of the
/// input and the output.
#[allow(clippy::type_complexity)]
fn conv_attrs<'a>(a: &Attrs<'a>) -> Result<(Conv<'a>, [usize; 4], Layer<'a>, [usize; 2]), Diagnostic> {
    let (filter, fd) = a.dense::<i8, 4>(1, "filter", DType::I8)?;
    let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
    let l = Layer::read(a, 4, output.dims[3])?;
    let window = a.window(8)?;
    if input.dims[0] != output.dims[0] {
        return Err(invalid(a.kernel, format_args!("input and output batches differ")));
    }
    if fd[1] == 0 || fd[2] == 0 || input.dims[3] == 0 || output.dims[3] == 0 {
        return Err(invalid(a.kernel, format_args!("filter {:?} or channels are empty", fd)));
    }
    let per_batch = |d: [usize; 4]| {
        d[1..]
            .iter()
            .try_fold(1usize, |p, &v| p.checked_mul(v))
            .ok_or_else(|| invalid(a.kernel, format_args!("size overflows")))
    };
    let sizes = [per_batch(input.dims)?, per_batch(output.dims)?];
    Ok((Conv { filter, taps: [fd[1], fd[2]], input, output, window }, fd, l, sizes))
}

/// `nn.conv_2d.hybrid`.
pub(crate) fn conv_2d_hybrid(frame: &KernelFrame<'_>) {
    const K: &str = "nn.conv_2d.hybrid";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 9)?;
        let (conv, [fo, fh, fw, fi], l, [in_len, out_len]) = conv_attrs(&a)?;
        let ([n, _, _, ic], [_, oh, ow, oc]) = (conv.input.dims, conv.output.dims);
        if fo != oc || fi != ic {
            return Err(invalid(K, format_args!("filter [{}, {}, {}, {}] does not fit", fo, fh, fw, fi)));
        }
        // Not 0 and no overflow: the filter holds fo * per_filter values.
        let per_filter = fh * fw * ic;
        let place = (conv.input.offset, conv.output.offset);
        l.by_batch(K, arena, place, (n, in_len, out_len), |q, zp, factor, out| {
            let mut pixels = out.chunks_exact_mut(oc);
            for oy in 0..oh {
                for ox in 0..ow {
                    let Some(pixel) = pixels.next() else { return };
                    for (c, (o, f)) in pixel.iter_mut().zip(conv.filter.chunks_exact(per_filter)).enumerate()
                    {
                        let mut sum = 0i32;
                        for (at, t) in conv.taps(oy, ox) {
                            sum = sum.wrapping_add(dot(&q[at * ic..][..ic], &f[t * ic..][..ic], zp));
                        }
                        *o = l.output(sum, c, factor);
                    }
                }
            }
        })
    })
}

/// `nn.depthwise_conv_2d.hybrid`: output channel `c` filters input channel
/// `c / depth multiplier`.
pub(crate) fn depthwise_conv_2d_hybrid(frame: &KernelFrame<'_>) {
    const K: &str = "nn.depthwise_conv_2d.hybrid";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 9)?;
        let (conv, [fo, fh, fw, fc], l, [in_len, out_len]) = conv_attrs(&a)?;
        let ([n, _, _, ic], [_, oh, ow, oc]) = (conv.input.dims, conv.output.dims);
        if fo != 1 || fc != oc || oc % ic != 0 {
            return Err(invalid(K, format_args!("filter [{}, {}, {}, {}] does not fit", fo, fh, fw, fc)));
        }
        let multiplier = oc / ic;
        // LiteRT's NEON epilogue handles four channels at a time as `(sum * scale) * factor`,
        // its scalar tail as `(sum * factor) * scale`.
        let vectors = oc & !3;
        let place = (conv.input.offset, conv.output.offset);
        l.by_batch(K, arena, place, (n, in_len, out_len), |q, zp, factor, out| {
            let mut pixels = out.chunks_exact_mut(oc);
            for oy in 0..oh {
                for ox in 0..ow {
                    let Some(pixel) = pixels.next() else { return };
                    for (c, o) in pixel.iter_mut().enumerate() {
                        let mut sum = 0i32;
                        for (at, t) in conv.taps(oy, ox) {
                            let x = i32::from(q[at * ic + c / multiplier]) - zp;
                            sum = sum.wrapping_add(x * i32::from(conv.filter[t * oc + c]));
                        }
                        let scaled = if c < vectors {
                            sum as f32 * l.scales[c] * factor
                        } else {
                            sum as f32 * factor * l.scales[c]
                        };
                        *o = (scaled + l.bias[c]).clamp(l.range.0, l.range.1);
                    }
                }
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_rules() {
        assert_eq!([2.5, -2.5, 0.49999997, -0.5, 126.5].map(round_scalar), [3, -3, 0, -1, 127]);
        // The vector rule adds 0.5 in float: 0.49999997 + 0.5 rounds up to 1.0.
        assert_eq!([2.5, -2.5, 0.49999997, -0.5].map(round_vector), [3, -3, 1, -1]);
        assert_eq!([f32::NAN, f32::INFINITY, -1e20].map(round_scalar), [0, i32::MAX, i32::MIN]);
        assert_eq!([1.5, -1.5, 0.4, 126.6].map(round_f64), [2, -2, 0, 127]);
    }

    #[test]
    fn symmetric_quantization() {
        let x = [0.5f32, -1.27, 0.01, 1.0];
        let mut q = [0i8; 4];
        let (factor, zp) = symmetric(&x, &mut q);
        assert_eq!((factor, zp), (1.27 / 127.0, 0));
        assert_eq!(q, [50, -127, 1, 100]);
        assert_eq!(symmetric(&[0.0; 3], &mut [1; 3]), (1.0, 0));
        assert_eq!(symmetric(&[], &mut []), (1.0, 0));
    }

    #[test]
    fn asymmetric_quantization() {
        // [0, 2.55] onto -128..=127: scale 0.01, zero point -128.
        let x = [0.0f32, 2.55, 1.0, 0.005];
        let mut q = [0i8; 4];
        let (factor, zp) = asymmetric(&x, &mut q);
        assert_eq!(zp, -128);
        assert!((factor - 0.01).abs() < 1e-9);
        assert_eq!(q, [-128, 127, -28, -127]);
        // Negative values: the zero point moves up; every value dequantizes within a step.
        let x: [f32; 11] = core::array::from_fn(|i| i as f32 * 0.37 - 1.2);
        let mut q = [0i8; 11];
        let (factor, zp) = asymmetric(&x, &mut q);
        for (&v, &q) in x.iter().zip(&q) {
            assert!(((f32::from(q) - zp as f32) * factor - v).abs() <= factor * 0.5001);
        }
        assert_eq!(asymmetric(&[0.0; 2], &mut [3; 2]), (1.0, 0));
    }

    #[test]
    fn dot_subtracts_the_zero_point() {
        assert_eq!(dot(&[3, -4, 127], &[2, 5, -1], 1), 2 * 2 - 5 * 5 - 126);
    }
}
