//! int8 2-D convolution with per-channel weights: TFLite's
//! `reference_integer_ops::ConvPerChannel` (one group), NHWC input, OHWI filter.

use crate::arch::InnerLoops;
use crate::error::{DspError, product};
use crate::quant::{ActivationRange, PerChannel, PerChannelParams, Sizes, check_per_channel};
use crate::shape::{Nhwc, Window, origin, tap_range};

/// Shape and quantization of a convolution. Input `[n, h, w, c]`, filter
/// `[output_channels, window.filter.h, window.filter.w, c]` (symmetric int8), output
/// `[n, window.output.h, window.output.w, output_channels]`.
#[derive(Debug, Clone, Copy)]
pub struct ConvParams {
    /// Input shape.
    pub input: Nhwc,
    /// Output channels (filters).
    pub output_channels: usize,
    /// Filter size, stride, dilation, padding and output size.
    pub window: Window,
    /// Zero point of the input tensor.
    pub input_zero_point: i32,
    /// Zero point of the output tensor.
    pub output_zero_point: i32,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl ConvParams {
    /// Output shape.
    pub fn output_shape(&self) -> Nhwc {
        Nhwc::new(self.input.n, self.window.output.h, self.window.output.w, self.output_channels)
    }
}

impl PerChannelParams for ConvParams {
    fn output_stage(&self) -> (i32, i32, ActivationRange) {
        (self.input_zero_point, self.output_zero_point, self.activation)
    }

    fn sizes(&self) -> Result<Sizes, DspError> {
        self.window.check()?;
        let (f, oc) = (self.window.filter, self.output_channels);
        Ok(Sizes {
            input: self.input.elements(),
            filter: product(&[oc, f.h, f.w, self.input.c]),
            output: self.output_shape().elements(),
            channels: oc,
        })
    }
}

/// The kernel over inner loops `K`.
pub(crate) fn run<K: InnerLoops>(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check_per_channel(p, input, filter, bias, &quant, output)?;
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let ic = s.c;
    let per_filter = w.filter.h * w.filter.w * ic;
    if oc_n == 0 {
        return Ok(());
    }
    let input_offset = -p.input_zero_point;
    let mut pixels = output.chunks_exact_mut(oc_n);
    for b in 0..s.n {
        for oy in 0..w.output.h {
            let y0 = origin(oy, w.stride.h, w.pad.h);
            let (fy0, fy1) = tap_range(y0, w.dilation.h, w.filter.h, s.h);
            for ox in 0..w.output.w {
                let x0 = origin(ox, w.stride.w, w.pad.w);
                let (fx0, fx1) = tap_range(x0, w.dilation.w, w.filter.w, s.w);
                let Some(pixel) = pixels.next() else { return Ok(()) };
                // Two output channels at a time (an odd last one is paired with itself).
                for c in (0..oc_n).step_by(2) {
                    let d = if c + 1 < oc_n { c + 1 } else { c };
                    let filters =
                        [&filter[c * per_filter..][..per_filter], &filter[d * per_filter..][..per_filter]];
                    let mut acc = [bias.map_or(0, |b| b[c]), bias.map_or(0, |b| b[d])];
                    let mut taps = |x: &[i8], at: usize, len: usize| {
                        acc = K::dot2(x, filters.map(|f| &f[at..][..len]), input_offset, acc);
                    };
                    for fy in fy0..fy1 {
                        // In range: tap_range keeps 0 <= y0 + fy * dilation < h.
                        let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
                        let row = (b * s.h + iy) * s.w;
                        if w.dilation.w == 1 {
                            // The valid taps of a filter row are contiguous in both tensors.
                            if fx0 < fx1 {
                                let ix = (x0 + fx0 as isize) as usize;
                                let len = (fx1 - fx0) * ic;
                                taps(&input[(row + ix) * ic..][..len], (fy * w.filter.w + fx0) * ic, len);
                            }
                        } else {
                            for fx in fx0..fx1 {
                                let ix = (x0 + (fx * w.dilation.w) as isize) as usize;
                                taps(&input[(row + ix) * ic..][..ic], (fy * w.filter.w + fx) * ic, ic);
                            }
                        }
                    }
                    for (k, acc) in [(c, acc[0]), (d, acc[1])] {
                        pixel[k] = K::requantize(
                            acc,
                            quant.multiplier[k],
                            quant.shift[k],
                            p.output_zero_point,
                            p.activation,
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dsp, portable};
    use crate::shape::{Hw, Padding};
    use crate::testutil::{
        Geometry, Lcg, Operands, Quant, geometry, output_pixels, reference_conv, taps, window,
    };
    use proptest::prelude::*;
    use std::vec;

    #[test]
    fn known_answer_3x3_same() {
        // 3x3 single-channel input of ones (zero point 0), all-ones 3x3 filter, SAME padding:
        // each output counts the in-bounds taps (4 corners, 6 edges, 9 centre).
        let w = window(Hw::square(3), Hw::square(3), 1, 1, Padding::Same).unwrap();
        let p = Geometry::new(Nhwc::new(1, 3, 3, 1), w).conv(1);
        let mut out = [0i8; 9];
        let q = Quant::uniform(1.0, 1);
        dsp::conv2d(&p, &[1; 9], &[1; 9], None, q.get(), &mut out).unwrap();
        assert_eq!(out, [4, 6, 4, 6, 9, 6, 4, 6, 4]);
        // A nonzero input zero point: padding acts as the zero point, so input == zp gives 0.
        let p = ConvParams { input_zero_point: 1, ..p };
        portable::conv2d(&p, &[1; 9], &[1; 9], Some(&[-3]), q.get(), &mut out).unwrap();
        assert_eq!(out, [-3; 9]);
    }

    #[test]
    fn bad_lengths_are_errors() {
        let w = window(Hw::square(4), Hw::square(3), 1, 1, Padding::Valid).unwrap();
        let p = Geometry::new(Nhwc::new(1, 4, 4, 2), w).conv(3);
        let quant = Quant::uniform(0.5, 3);
        let q = quant.get();
        let (input, filter, mut out) = ([0i8; 32], [0i8; 54], [0i8; 12]);
        assert!(dsp::conv2d(&p, &input, &filter, None, q, &mut out).is_ok());
        assert!(dsp::conv2d(&p, &input[1..], &filter, None, q, &mut out).is_err());
        assert!(dsp::conv2d(&p, &input, &filter[1..], None, q, &mut out).is_err());
        assert!(dsp::conv2d(&p, &input, &filter, None, q, &mut out[1..]).is_err());
        assert!(portable::conv2d(&p, &input, &filter, Some(&[1]), q, &mut out).is_err());
        let mut bad = p;
        bad.window.stride.h = 0;
        assert!(portable::conv2d(&bad, &input, &filter, None, q, &mut out).is_err());
        bad = p;
        bad.window.pad.w = usize::MAX;
        assert_eq!(portable::conv2d(&bad, &input, &filter, None, q, &mut out), Err(DspError::Overflow));
        bad = p;
        bad.activation.max = 200;
        assert!(portable::conv2d(&bad, &input, &filter, None, q, &mut out).is_err());
    }

    prop_compose! {
        fn conv_case()(g in geometry(8), oc in 1usize..6) -> Option<(ConvParams, u64)> {
            let (g, seed) = g?;
            Some((g.conv(oc), seed))
        }
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in conv_case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            let (f, oc) = (p.window.filter, p.output_channels);
            let ops = Operands::random(seed, p.input.elements().unwrap(), oc * f.h * f.w * p.input.c, oc, 100_000);
            let output_len = p.output_shape().elements().unwrap();
            ops.assert_bit_exact(&p, with_bias, output_len, [portable::conv2d, dsp::conv2d], reference_conv)?;
        }

        #[test]
        fn approximates_float(case in conv_case()) {
            let Some((p, seed)) = case else { return Ok(()) };
            let mut rng = Lcg(seed);
            let (in_scale, out_scale) = (0.03f64, 0.25f64);
            let p = ConvParams { input_zero_point: 5, output_zero_point: -3, ..p };
            let input = rng.bytes(p.input.elements().unwrap());
            let per_filter = p.window.filter.h * p.window.filter.w * p.input.c;
            let filter = rng.bytes(p.output_channels * per_filter);
            let w_scales = rng.scales(p.output_channels, 0.002, 0.01);
            let quant = Quant::from_scales(in_scale, &w_scales, out_scale);
            let mut out = vec![0i8; p.output_shape().elements().unwrap()];
            crate::conv2d(&p, &input, &filter, None, quant.get(), &mut out).unwrap();
            // Float convolution over dequantized values; padding contributes real 0.
            let (s, w) = (p.input, p.window);
            let mut i = 0;
            for pixel in output_pixels(s, w) { for oc in 0..p.output_channels {
                let mut real = 0.0f64;
                for (fy, fx, at) in taps(s, w, pixel) {
                    for ic in 0..s.c {
                        let x = input[at + ic];
                        let f = filter[oc * per_filter + (fy * w.filter.w + fx) * s.c + ic];
                        real += in_scale * f64::from(i32::from(x) - 5) * w_scales[oc] * f64::from(f);
                    }
                }
                let want = (real / out_scale - 3.0).round().clamp(-128.0, 127.0);
                prop_assert!((f64::from(out[i]) - want).abs() <= 1.0, "got {} want {}", out[i], want);
                i += 1;
            }}
        }
    }
}
