//! int8 2-D convolution with per-channel weights: TFLite's
//! `reference_integer_ops::ConvPerChannel` (one group), NHWC input, OHWI filter.

use crate::arch::InnerLoops;
use crate::error::{DspError, check_len, product};
use crate::quant::{ActivationRange, PerChannel, check_zero_point};
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

fn check(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: &PerChannel<'_>,
    output: &[i8],
) -> Result<(), DspError> {
    check_zero_point(p.input_zero_point)?;
    check_zero_point(p.output_zero_point)?;
    p.activation.check()?;
    p.window.check()?;
    let f = p.window.filter;
    check_len("input", p.input.elements()?, input.len())?;
    check_len("filter", product(&[p.output_channels, f.h, f.w, p.input.c])?, filter.len())?;
    check_len("output", p.output_shape().elements()?, output.len())?;
    if let Some(bias) = bias {
        check_len("bias", p.output_channels, bias.len())?;
    }
    quant.check(p.output_channels)
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
    check(p, input, filter, bias, &quant, output)?;
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
    use crate::quant::quantize_multiplier;
    use crate::shape::{Hw, Padding};
    use crate::testutil::{Lcg, reference_conv};
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    fn window(input: Hw, filter: Hw, stride: usize, dilation: usize, padding: Padding) -> Window {
        Window::new(input, filter, Hw::square(stride), Hw::square(dilation), padding).unwrap()
    }

    #[test]
    fn known_answer_3x3_same() {
        // 3x3 single-channel input of ones (zero point 0), all-ones 3x3 filter, SAME padding:
        // each output counts the in-bounds taps (4 corners, 6 edges, 9 centre).
        let w = window(Hw::square(3), Hw::square(3), 1, 1, Padding::Same);
        let p = ConvParams {
            input: Nhwc::new(1, 3, 3, 1),
            output_channels: 1,
            window: w,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let (m, s) = quantize_multiplier(1.0);
        let mut out = [0i8; 9];
        let q = PerChannel { multiplier: &[m], shift: &[s] };
        dsp::conv2d(&p, &[1; 9], &[1; 9], None, q, &mut out).unwrap();
        assert_eq!(out, [4, 6, 4, 6, 9, 6, 4, 6, 4]);
        // A nonzero input zero point: padding acts as the zero point, so input == zp gives 0.
        let p = ConvParams { input_zero_point: 1, ..p };
        portable::conv2d(&p, &[1; 9], &[1; 9], Some(&[-3]), q, &mut out).unwrap();
        assert_eq!(out, [-3; 9]);
    }

    #[test]
    fn bad_lengths_are_errors() {
        let w = window(Hw::square(4), Hw::square(3), 1, 1, Padding::Valid);
        let p = ConvParams {
            input: Nhwc::new(1, 4, 4, 2),
            output_channels: 3,
            window: w,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let (m, s) = ([1 << 30; 3], [0; 3]);
        let q = PerChannel { multiplier: &m, shift: &s };
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
        fn conv_case()(
            n in 1usize..3, h in 1usize..7, w in 1usize..7, c in 1usize..8, oc in 1usize..6,
            fh in 1usize..4, fw in 1usize..4, stride in 1usize..3, dilation in 1usize..3, same: bool,
            izp in -128i32..=127, ozp in -128i32..=127, seed: u64,
        ) -> Option<(ConvParams, u64)> {
            let padding = if same { Padding::Same } else { Padding::Valid };
            let window = Window::new(Hw::new(h, w), Hw::new(fh, fw), Hw::square(stride), Hw::square(dilation), padding).ok()?;
            Some((ConvParams { input: Nhwc::new(n, h, w, c), output_channels: oc, window,
                input_zero_point: izp, output_zero_point: ozp, activation: ActivationRange::INT8 }, seed))
        }
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in conv_case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            let mut rng = Lcg(seed);
            let input = rng.bytes(p.input.elements().unwrap());
            let filter = rng.bytes(p.output_channels * p.window.filter.h * p.window.filter.w * p.input.c);
            let bias: Vec<i32> = (0..p.output_channels).map(|_| rng.range(-100_000, 100_000)).collect();
            let (mult, shift) = rng.per_channel(p.output_channels);
            let q = PerChannel { multiplier: &mult, shift: &shift };
            let bias = with_bias.then_some(&bias[..]);
            let mut a = vec![0i8; p.output_shape().elements().unwrap()];
            let mut b = a.clone();
            portable::conv2d(&p, &input, &filter, bias, q, &mut a).unwrap();
            dsp::conv2d(&p, &input, &filter, bias, q, &mut b).unwrap();
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a, reference_conv(&p, &input, &filter, bias, q));
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
            let w_scales: Vec<f64> = (0..p.output_channels).map(|_| 0.002 + rng.unit() * 0.01).collect();
            let (mult, shift): (Vec<i32>, Vec<i32>) =
                w_scales.iter().map(|ws| quantize_multiplier(in_scale * ws / out_scale)).unzip();
            let mut out = vec![0i8; p.output_shape().elements().unwrap()];
            crate::conv2d(&p, &input, &filter, None, PerChannel { multiplier: &mult, shift: &shift }, &mut out).unwrap();
            // Float convolution over dequantized values; padding contributes real 0.
            let (s, w) = (p.input, p.window);
            let mut i = 0;
            for b in 0..s.n { for oy in 0..w.output.h { for ox in 0..w.output.w { for oc in 0..p.output_channels {
                let mut real = 0.0f64;
                for fy in 0..w.filter.h { for fx in 0..w.filter.w {
                    let iy = (oy * w.stride.h + fy * w.dilation.h) as isize - w.pad.h as isize;
                    let ix = (ox * w.stride.w + fx * w.dilation.w) as isize - w.pad.w as isize;
                    if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize { continue; }
                    for ic in 0..s.c {
                        let x = input[((b * s.h + iy as usize) * s.w + ix as usize) * s.c + ic];
                        let f = filter[oc * per_filter + (fy * w.filter.w + fx) * s.c + ic];
                        real += in_scale * f64::from(i32::from(x) - 5) * w_scales[oc] * f64::from(f);
                    }
                }}
                let want = (real / out_scale - 3.0).round().clamp(-128.0, 127.0);
                prop_assert!((f64::from(out[i]) - want).abs() <= 1.0, "got {} want {}", out[i], want);
                i += 1;
            }}}}
        }
    }
}
