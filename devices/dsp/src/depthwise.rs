//! int8 depthwise convolution with per-channel weights: TFLite's
//! `reference_integer_ops::DepthwiseConvPerChannel`. Output channel `ic * depth_multiplier + m`
//! filters input channel `ic`.

use crate::arch::InnerLoops;
use crate::error::{DspError, check_len, product};
use crate::quant::{ActivationRange, PerChannel, check_zero_point};
use crate::shape::{Nhwc, Window, origin, tap_range};

/// Shape and quantization of a depthwise convolution. Input `[n, h, w, c]`, filter
/// `[1, window.filter.h, window.filter.w, c * depth_multiplier]` (symmetric int8), output
/// `[n, window.output.h, window.output.w, c * depth_multiplier]`.
#[derive(Debug, Clone, Copy)]
pub struct DepthwiseParams {
    /// Input shape.
    pub input: Nhwc,
    /// Output channels per input channel, at least 1.
    pub depth_multiplier: usize,
    /// Filter size, stride, dilation, padding and output size.
    pub window: Window,
    /// Zero point of the input tensor.
    pub input_zero_point: i32,
    /// Zero point of the output tensor.
    pub output_zero_point: i32,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl DepthwiseParams {
    /// Output shape (`c * depth_multiplier` channels; saturating, checked by the kernel).
    pub fn output_shape(&self) -> Nhwc {
        let c = self.input.c.saturating_mul(self.depth_multiplier);
        Nhwc::new(self.input.n, self.window.output.h, self.window.output.w, c)
    }
}

fn check(
    p: &DepthwiseParams,
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
    if p.depth_multiplier == 0 {
        return Err(DspError::Param("zero depth multiplier"));
    }
    let oc = product(&[p.input.c, p.depth_multiplier])?;
    let f = p.window.filter;
    check_len("input", p.input.elements()?, input.len())?;
    check_len("filter", product(&[f.h, f.w, oc])?, filter.len())?;
    check_len("output", p.output_shape().elements()?, output.len())?;
    if let Some(bias) = bias {
        check_len("bias", oc, bias.len())?;
    }
    quant.check(oc)
}

/// The kernel over inner loops `K`: four channels at a time when the depth multiplier is 1
/// (the common case, where channels line up), one at a time otherwise.
pub(crate) fn run<K: InnerLoops>(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check(p, input, filter, bias, &quant, output)?;
    let (s, w, dm) = (p.input, p.window, p.depth_multiplier);
    let (ic_n, oc_n) = (s.c, s.c * dm);
    if oc_n == 0 {
        return Ok(());
    }
    let input_offset = -p.input_zero_point;
    let out = |acc: i32, c: usize| {
        K::requantize(acc, quant.multiplier[c], quant.shift[c], p.output_zero_point, p.activation)
    };
    let mut pixels = output.chunks_exact_mut(oc_n);
    for b in 0..s.n {
        for oy in 0..w.output.h {
            let y0 = origin(oy, w.stride.h, w.pad.h);
            let (fy0, fy1) = tap_range(y0, w.dilation.h, w.filter.h, s.h);
            for ox in 0..w.output.w {
                let x0 = origin(ox, w.stride.w, w.pad.w);
                let (fx0, fx1) = tap_range(x0, w.dilation.w, w.filter.w, s.w);
                let Some(pixel) = pixels.next() else { return Ok(()) };
                // (input offset, filter offset) of every in-bounds tap, in TFLite's order.
                let taps = (fy0..fy1).flat_map(|fy| {
                    let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
                    (fx0..fx1).map(move |fx| {
                        let ix = (x0 + (fx * w.dilation.w) as isize) as usize;
                        (((b * s.h + iy) * s.w + ix) * ic_n, (fy * w.filter.w + fx) * oc_n)
                    })
                });
                let mut first_scalar = 0;
                if dm == 1 {
                    let blocks = oc_n / 4;
                    for block in 0..blocks {
                        let c = block * 4;
                        let mut acc = [0i32; 4];
                        if let Some(bias) = bias {
                            acc.copy_from_slice(&bias[c..c + 4]);
                        }
                        for (xi, fi) in taps.clone() {
                            let (x, _) = input[xi + c..][..4].as_chunks::<4>();
                            let (f, _) = filter[fi + c..][..4].as_chunks::<4>();
                            K::mac4(&x[0], &f[0], input_offset, &mut acc);
                        }
                        for (k, &a) in acc.iter().enumerate() {
                            pixel[c + k] = out(a, c + k);
                        }
                    }
                    first_scalar = blocks * 4;
                }
                for (c, o) in pixel.iter_mut().enumerate().skip(first_scalar) {
                    let ic = c / dm;
                    let mut acc = bias.map_or(0, |b| b[c]);
                    for (xi, fi) in taps.clone() {
                        let (x, f) = (i32::from(input[xi + ic]), i32::from(filter[fi + c]));
                        acc = acc.wrapping_add(f * (x + input_offset));
                    }
                    *o = out(acc, c);
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
    use crate::testutil::{Lcg, reference_depthwise};
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn known_answer() {
        // 2x2 input, 2 channels, 2x2 filter VALID: one output pixel per channel (x 2 multiplier).
        let w =
            Window::new(Hw::square(2), Hw::square(2), Hw::square(1), Hw::square(1), Padding::Valid).unwrap();
        let p = DepthwiseParams {
            input: Nhwc::new(1, 2, 2, 2),
            depth_multiplier: 2,
            window: w,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let input = [1, 10, 2, 20, 3, 30, 4, 40];
        let filter = [1, 0, 1, -1, 1, 0, 1, -1, 1, 0, 1, -1, 1, 0, 1, -1];
        let (m, s) = quantize_multiplier(1.0);
        let q = PerChannel { multiplier: &[m; 4], shift: &[s; 4] };
        let mut out = [0i8; 4];
        dsp::depthwise_conv2d(&p, &input, &filter, Some(&[0, 5, 0, 0]), q, &mut out).unwrap();
        assert_eq!(out, [10, 5, 100, -100]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let w =
            Window::new(Hw::square(3), Hw::square(3), Hw::square(1), Hw::square(1), Padding::Same).unwrap();
        let p = DepthwiseParams {
            input: Nhwc::new(1, 3, 3, 5),
            depth_multiplier: 1,
            window: w,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let (m, s) = ([1 << 30; 5], [0; 5]);
        let q = PerChannel { multiplier: &m, shift: &s };
        let (input, filter, mut out) = ([0i8; 45], [0i8; 45], [0i8; 45]);
        assert!(dsp::depthwise_conv2d(&p, &input, &filter, None, q, &mut out).is_ok());
        assert!(dsp::depthwise_conv2d(&p, &input[..44], &filter, None, q, &mut out).is_err());
        assert!(dsp::depthwise_conv2d(&p, &input, &filter[..44], None, q, &mut out).is_err());
        assert!(dsp::depthwise_conv2d(&p, &input, &filter, None, q, &mut out[..44]).is_err());
        let zero = DepthwiseParams { depth_multiplier: 0, ..p };
        assert!(portable::depthwise_conv2d(&zero, &input, &filter, None, q, &mut out).is_err());
        let huge = DepthwiseParams { depth_multiplier: usize::MAX, ..p };
        assert!(portable::depthwise_conv2d(&huge, &input, &filter, None, q, &mut out).is_err());
    }

    prop_compose! {
        fn case()(
            n in 1usize..3, h in 1usize..7, w in 1usize..7, c in 1usize..11, dm in 1usize..3,
            fh in 1usize..4, fw in 1usize..4, stride in 1usize..3, dilation in 1usize..3, same: bool,
            izp in -128i32..=127, ozp in -128i32..=127, seed: u64,
        ) -> Option<(DepthwiseParams, u64)> {
            let padding = if same { Padding::Same } else { Padding::Valid };
            let window = Window::new(Hw::new(h, w), Hw::new(fh, fw), Hw::square(stride), Hw::square(dilation), padding).ok()?;
            // Depth multiplier 1 twice as often: it is the packed path.
            let dm = if dm == 2 && seed % 2 == 0 { 1 } else { dm };
            Some((DepthwiseParams { input: Nhwc::new(n, h, w, c), depth_multiplier: dm, window,
                input_zero_point: izp, output_zero_point: ozp, activation: ActivationRange::INT8 }, seed))
        }
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            let mut rng = Lcg(seed);
            let oc = p.input.c * p.depth_multiplier;
            let input = rng.bytes(p.input.elements().unwrap());
            let filter = rng.bytes(p.window.filter.h * p.window.filter.w * oc);
            let bias: Vec<i32> = (0..oc).map(|_| rng.range(-100_000, 100_000)).collect();
            let (mult, shift) = rng.per_channel(oc);
            let q = PerChannel { multiplier: &mult, shift: &shift };
            let bias = with_bias.then_some(&bias[..]);
            let mut a = vec![0i8; p.output_shape().elements().unwrap()];
            let mut b = a.clone();
            portable::depthwise_conv2d(&p, &input, &filter, bias, q, &mut a).unwrap();
            dsp::depthwise_conv2d(&p, &input, &filter, bias, q, &mut b).unwrap();
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a, reference_depthwise(&p, &input, &filter, bias, q));
        }
    }
}
