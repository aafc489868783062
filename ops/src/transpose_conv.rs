//! `nn.transpose_conv.i8` and `nn.transpose_conv.f32`: TFLite's TRANSPOSE_CONV over NHWC
//! tensors, as its reference kernels compute it (`reference_integer_ops::TransposeConv`,
//! which TensorFlow Lite Micro runs, and `reference_ops::TransposeConv`): every input pixel
//! is scattered through the filter's taps onto the output pixels
//! `(in_y * stride_h - pad_top + ky, in_x * stride_w - pad_left + kx)` that lie inside the
//! output, summed per output element, then the bias is added and the result requantized
//! (int8) or clamped (float32).
//!
//! Attributes, in name order:
//! - int8: `bias` (dense i32 `[out]`), `filter` (dense i8 `[out, kh, kw, in]`, TFLite's
//!   layout), `input` and `output` (`[offset, n, h, w, c]`), `multipliers` (one per output
//!   channel), `quant` (`[input zero point, output zero point, activation min, activation
//!   max]`), `scratch` (`[offset, bytes]`: room for the int32 accumulator of every output
//!   element, as TFLite Micro's scratch buffer, apart from the input and the output),
//!   `shifts` (one per output channel), `window` (`[stride h, stride w, dilation h, dilation w,
//!   pad top, pad left]`: the convolutions' layout). The int32 sums wrap as TFLite Micro's
//!   do on two's complement machines, so their order does not matter; each output is
//!   `clamp(MultiplyByQuantizedMultiplier(sum + bias[c], multiplier[c], shift[c]) + output
//!   zero point)`.
//! - float32: `bias` (dense f32 `[out]`), `filter` (dense f32 `[out, kh, kw, in]`), `input`,
//!   `output`, `range` (`[activation min, activation max]`), `window`. The output is the
//!   accumulator; each output element sums its terms in the reference kernel's order (input
//!   pixel by input pixel, input channel by input channel).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_dsp::multiply_by_quantized_multiplier;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};
use crate::conv::tap;

/// The sizes of a transpose convolution, checked against each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    /// `[n, h, w, in channels]`.
    input: [usize; 4],
    /// `[n, h, w, out channels]`.
    output: [usize; 4],
    /// `[kh, kw]`.
    taps: [usize; 2],
    /// `[stride h, stride w]`.
    stride: [usize; 2],
    /// `[pad top, pad left]`.
    pad: [usize; 2],
    /// `[dilation h, dilation w]`.
    dilation: [usize; 2],
}

impl Geometry {
    /// Checks a filter of dims `[out, kh, kw, in]` and `filter_len` elements, the input and
    /// output dims and the `window` (`[sh, sw, dh, dw, ph, pw]`) fit together.
    fn new(
        kernel: &str,
        (filter, filter_len): ([usize; 4], usize),
        input: [usize; 4],
        output: [usize; 4],
        window: [usize; 6],
    ) -> Result<Geometry, Diagnostic> {
        let [fo, fh, fw, fi] = filter;
        let [sh, sw, dh, dw, ph, pw] = window;
        if input[0] != output[0] || fi != input[3] || fo != output[3] {
            return Err(invalid(
                kernel,
                format_args!("filter {:?} does not fit input {:?} and output {:?}", filter, input, output),
            ));
        }
        if dh == 0 || dw == 0 {
            return Err(invalid(kernel, format_args!("dilation {}x{} is 0", dh, dw)));
        }
        let product = |d: &[usize]| d.iter().try_fold(1usize, |p, &v| p.checked_mul(v));
        if product(&filter) != Some(filter_len) {
            return Err(invalid(
                kernel,
                format_args!("'filter' holds {} values, not {:?}", filter_len, filter),
            ));
        }
        if product(&input).is_none() || product(&output).is_none() {
            return Err(invalid(kernel, format_args!("size overflows")));
        }
        Ok(Geometry { input, output, taps: [fh, fw], stride: [sh, sw], pad: [ph, pw], dilation: [dh, dw] })
    }

    /// Calls `f(input pixel, output pixel, tap)` (pixel indices over the whole batch, tap
    /// `ky * kw + kx`) for every tap of every input pixel that lands inside the output, input
    /// pixel by input pixel in order.
    fn scatter(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [n, ih, iw, _] = self.input;
        let [_, oh, ow, _] = self.output;
        let ([kh, kw], [sh, sw], [ph, pw], [dh, dw]) = (self.taps, self.stride, self.pad, self.dilation);
        for b in 0..n {
            for iy in 0..ih {
                for ix in 0..iw {
                    let pixel = (b * ih + iy) * iw + ix;
                    for ky in 0..kh {
                        // The output row `iy * sh - ph + ky * dh`, if inside the output.
                        let Some(oy) = tap(iy, sh, ph, ky, dh, oh) else { continue };
                        for kx in 0..kw {
                            let Some(ox) = tap(ix, sw, pw, kx, dw, ow) else { continue };
                            f(pixel, (b * oh + oy) * ow + ox, ky * kw + kx);
                        }
                    }
                }
            }
        }
    }

    /// Adds every term `(x + input_offset) * w` into `acc` (one int32 per output element,
    /// wrapping).
    fn accumulate_i8(&self, x: &[i8], filter: &[i8], input_offset: i32, acc: &mut [i32]) {
        let (ic, oc, taps) = (self.input[3], self.output[3], self.taps[0] * self.taps[1]);
        self.scatter(|pixel, out, tap| {
            let x = &x[pixel * ic..][..ic];
            for (c, a) in acc[out * oc..][..oc].iter_mut().enumerate() {
                let w = &filter[(c * taps + tap) * ic..][..ic];
                *a = x.iter().zip(w).fold(*a, |a, (&x, &w)| {
                    a.wrapping_add((i32::from(x) + input_offset).wrapping_mul(i32::from(w)))
                });
            }
        });
    }

    /// Adds every term `x * w` into `out` (one per output element), each element's terms
    /// in the reference kernel's order.
    fn accumulate_f32(&self, x: &[f32], filter: &[f32], out: &mut [f32]) {
        let (ic, oc, taps) = (self.input[3], self.output[3], self.taps[0] * self.taps[1]);
        self.scatter(|pixel, o, tap| {
            let x = &x[pixel * ic..][..ic];
            for (c, o) in out[o * oc..][..oc].iter_mut().enumerate() {
                let w = &filter[(c * taps + tap) * ic..][..ic];
                for (&x, &w) in x.iter().zip(w) {
                    *o += x * w;
                }
            }
        });
    }
}

/// The int8 output stage: per-channel requantization and the activation clamp.
#[derive(Clone, Copy, Debug)]
struct Requantize<'a> {
    bias: &'a [i32],
    multipliers: &'a [i32],
    shifts: &'a [i32],
    output_zero_point: i32,
    /// `[min, max]`, within int8.
    range: [i32; 2],
}

impl Requantize<'_> {
    /// Writes each accumulator of `acc` (channels last, `bias.len()` of them) as int8.
    fn run(&self, acc: &[i32], out: &mut [i8]) {
        let channels = self.bias.len().max(1);
        for (pixel_acc, pixel_out) in acc.chunks(channels).zip(out.chunks_mut(channels)) {
            for ((((&a, o), &b), &m), &s) in
                pixel_acc.iter().zip(pixel_out).zip(self.bias).zip(self.multipliers).zip(self.shifts)
            {
                let v = multiply_by_quantized_multiplier(a.wrapping_add(b), m, s)
                    .wrapping_add(self.output_zero_point);
                // In -128..=127 after the clamp (the range was checked).
                *o = v.clamp(self.range[0], self.range[1]) as i8;
            }
        }
    }
}

/// Reads `filter` (attribute 1), `input` (2), `output` (`output_at`) and `window`
/// (`window_at`) of element type `T` (`dtype`), and the bias (attribute 0, `bias_dtype`).
#[allow(clippy::type_complexity)]
fn read<'a, T: bytemuck::Pod, B: bytemuck::Pod>(
    a: &Attrs<'a>,
    (dtype, bias_dtype): (DType, DType),
    (output_at, window_at): (usize, usize),
) -> Result<(Geometry, &'a [T], &'a [B], Region<4>, Region<4>), Diagnostic> {
    let (bias, [bias_len]) = a.dense::<B, 1>(0, "bias", bias_dtype)?;
    let (filter, dims) = a.dense::<T, 4>(1, "filter", dtype)?;
    let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(output_at, "output")?);
    let window = a.window(window_at)?;
    let g = Geometry::new(a.kernel, (dims, filter.len()), input.dims, output.dims, window)?;
    if bias_len != output.dims[3] || bias.len() != bias_len {
        return Err(invalid(
            a.kernel,
            format_args!("'bias' has {} values for {} channels", bias.len(), output.dims[3]),
        ));
    }
    Ok((g, filter, bias, input, output))
}

/// `nn.transpose_conv.i8`: the sums go to the scratch region, then become the output.
pub(crate) fn transpose_conv_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.transpose_conv.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 9)?;
        let (g, filter, bias, input, output) = read::<i8, i32>(&a, (DType::I8, DType::I32), (4, 8))?;
        let channels = output.dims[3];
        let multipliers = a.ints(3, "multipliers", Some(channels))?;
        let q = a.ints(5, "quant", Some(4))?;
        let scratch = a.region::<1>(6, "scratch")?;
        let shifts = a.ints(7, "shifts", Some(channels))?;
        if shifts.iter().any(|s| !(-31..=30).contains(s)) {
            return Err(invalid(K, format_args!("'shifts' must lie in -31..=30, got {:?}", shifts)));
        }
        let (in_zp, out_zp) = (q[0], q[1]);
        if !(-128..=127).contains(&in_zp) || !(-128..=127).contains(&out_zp) {
            return Err(invalid(K, format_args!("zero points {} and {} are not int8", in_zp, out_zp)));
        }
        let range = a.int8_range(q[2], q[3])?;
        let outputs = output.elements()?;
        let acc_bytes = output.byte_len(4)?;
        if scratch.dims[0] < acc_bytes {
            return Err(invalid(
                K,
                format_args!("'scratch' of {} bytes cannot hold {} int32 sums", scratch.dims[0], outputs),
            ));
        }
        let misaligned = || invalid(K, format_args!("'scratch' at {} is not 4-byte aligned", scratch.offset));
        // The sums, in the scratch region (the input lies outside it).
        let (inputs, acc) = split(K, arena, scratch.offset, acc_bytes)?;
        let x = inputs.i8s(input.offset, input.elements()?)?;
        let acc: &mut [i32] = bytemuck::try_cast_slice_mut(acc).map_err(|_| misaligned())?;
        acc.fill(0);
        g.accumulate_i8(x, filter, -in_zp, acc);
        // The output (the scratch lies outside it).
        let (inputs, out) = split(K, arena, output.offset, outputs)?;
        let acc: &[i32] =
            bytemuck::try_cast_slice(inputs.bytes(scratch.offset, acc_bytes)?).map_err(|_| misaligned())?;
        let stage = Requantize {
            bias,
            multipliers,
            shifts,
            output_zero_point: out_zp,
            range: [range.min, range.max],
        };
        stage.run(acc, i8s_mut(out));
        Ok(())
    })
}

/// `nn.transpose_conv.f32`: the output is the accumulator.
pub(crate) fn transpose_conv_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.transpose_conv.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let (g, filter, bias, input, output) = read::<f32, f32>(&a, (DType::F32, DType::F32), (3, 5))?;
        let (lo, hi) = a.float_range(4)?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        out.fill(0.0);
        g.accumulate_f32(x, filter, out);
        for pixel in out.chunks_mut(bias.len().max(1)) {
            for (o, &b) in pixel.iter_mut().zip(bias) {
                *o = (*o + b).clamp(lo, hi);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// TFLite's reference loop, verbatim in its order (scatter with signed coordinates).
    fn reference(g: &Geometry, x: &[i32], filter: &[i32]) -> Vec<i32> {
        let [n, ih, iw, ic] = g.input;
        let [_, oh, ow, oc] = g.output;
        let [kh, kw] = g.taps;
        let mut out = vec![0; n * oh * ow * oc];
        for b in 0..n {
            for iy in 0..ih {
                for ix in 0..iw {
                    for i in 0..ic {
                        let ox0 = (ix * g.stride[1]) as i64 - g.pad[1] as i64;
                        let oy0 = (iy * g.stride[0]) as i64 - g.pad[0] as i64;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                for c in 0..oc {
                                    let (oy, ox) = (
                                        oy0 + (ky * g.dilation[0]) as i64,
                                        ox0 + (kx * g.dilation[1]) as i64,
                                    );
                                    if ox >= 0 && ox < ow as i64 && oy >= 0 && oy < oh as i64 {
                                        let (oy, ox) = (oy as usize, ox as usize);
                                        out[((b * oh + oy) * ow + ox) * oc + c] += x
                                            [((b * ih + iy) * iw + ix) * ic + i]
                                            * filter[((c * kh + ky) * kw + kx) * ic + i];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn geometry(input: [usize; 4], output: [usize; 4], taps: [usize; 2], window: [usize; 6]) -> Geometry {
        let filter = [output[3], taps[0], taps[1], input[3]];
        Geometry::new("t", (filter, filter.iter().product()), input, output, window).expect("geometry")
    }

    #[test]
    fn scatter_matches_the_reference_loop() {
        // SAME 3x3 stride 2 (pad 1 of the 10x12 output), VALID 4x3 stride (2, 1), and an
        // output smaller than the input's reach (taps fall off both ends), and dilations 2x3.
        let cases = [
            geometry([1, 5, 6, 4], [1, 10, 12, 6], [3, 3], [2, 2, 1, 1, 1, 1]),
            geometry([2, 5, 6, 4], [2, 12, 8, 3], [4, 3], [2, 1, 1, 1, 0, 0]),
            geometry([1, 4, 4, 2], [1, 3, 5, 3], [5, 2], [3, 2, 1, 1, 2, 0]),
            geometry([1, 4, 5, 2], [1, 11, 9, 2], [3, 2], [2, 1, 2, 3, 1, 0]),
        ];
        for g in cases {
            let x: Vec<i8> = (0..g.input.iter().product::<usize>()).map(|i| (i * 37 % 251) as i8).collect();
            let taps = g.taps[0] * g.taps[1];
            let f: Vec<i8> =
                (0..g.output[3] * taps * g.input[3]).map(|i| (i * 53 % 255) as u8 as i8).collect();
            let offset = 7;
            let mut acc = vec![0; g.output.iter().product()];
            g.accumulate_i8(&x, &f, offset, &mut acc);
            let xi: Vec<i32> = x.iter().map(|&v| i32::from(v) + offset).collect();
            let fi: Vec<i32> = f.iter().map(|&v| i32::from(v)).collect();
            assert_eq!(acc, reference(&g, &xi, &fi), "{g:?}");
            // float32 on small integers is exact: the same sums.
            let xf: Vec<f32> = xi.iter().map(|&v| v as f32).collect();
            let ff: Vec<f32> = fi.iter().map(|&v| v as f32).collect();
            let mut out = vec![0.0; acc.len()];
            g.accumulate_f32(&xf, &ff, &mut out);
            assert_eq!(out, acc.iter().map(|&v| v as f32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn geometry_rejects_what_does_not_fit() {
        let ok = ([3, 4, 3, 2], 72);
        let w = [2, 1, 1, 1, 0, 0];
        assert!(Geometry::new("t", ok, [1, 5, 6, 2], [1, 12, 8, 3], w).is_ok());
        // Input channels, output channels, batches, dilation, filter length, overflow.
        assert!(Geometry::new("t", ok, [1, 5, 6, 3], [1, 12, 8, 3], w).is_err());
        assert!(Geometry::new("t", ok, [1, 5, 6, 2], [1, 12, 8, 4], w).is_err());
        assert!(Geometry::new("t", ok, [2, 5, 6, 2], [1, 12, 8, 3], w).is_err());
        assert!(Geometry::new("t", ok, [1, 5, 6, 2], [1, 12, 8, 3], [2, 1, 0, 1, 0, 0]).is_err());
        assert!(Geometry::new("t", ([3, 4, 3, 2], 71), [1, 5, 6, 2], [1, 12, 8, 3], w).is_err());
        let huge = usize::MAX / 2;
        assert!(Geometry::new("t", ok, [1, huge, 6, 2], [1, 12, 8, 3], w).is_err());
    }

    #[test]
    fn requantize_adds_bias_then_scales_and_clamps() {
        let stage = Requantize {
            bias: &[10, -10],
            multipliers: &[1 << 30, 1 << 30],
            shifts: &[0, -1],
            output_zero_point: -5,
            range: [-128, 100],
        };
        let mut out = [0i8; 4];
        // (acc + bias) / 2 (then / 4 on channel 1) + zero point.
        stage.run(&[90, 42, 1000, i32::MAX], &mut out);
        assert_eq!(out, [45, 3, 100, 100]);
    }
}
