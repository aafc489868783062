//! int8 depthwise convolution with per-channel weights: TFLite's
//! `reference_integer_ops::DepthwiseConvPerChannel`. Output channel `ic * depth_multiplier + m`
//! filters input channel `ic`.

use crate::arch::InnerLoops;
use crate::error::{DspError, product};
use crate::quant::{ActivationRange, PerChannel, PerChannelParams, Sizes, check_per_channel};
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

impl PerChannelParams for DepthwiseParams {
    fn output_stage(&self) -> (i32, i32, ActivationRange) {
        (self.input_zero_point, self.output_zero_point, self.activation)
    }

    fn sizes(&self) -> Result<Sizes, DspError> {
        self.window.check()?;
        if self.depth_multiplier == 0 {
            return Err(DspError::Param("zero depth multiplier"));
        }
        let oc = product(&[self.input.c, self.depth_multiplier])?;
        let f = self.window.filter;
        Ok(Sizes {
            input: self.input.elements(),
            filter: product(&[f.h, f.w, oc]),
            output: self.output_shape().elements(),
            channels: oc,
        })
    }
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
    check_per_channel(p, input, filter, bias, &quant, output)?;
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
    use crate::shape::{Hw, Padding};
    use crate::testutil::{Geometry, Operands, Quant, geometry, reference_depthwise, window};
    use proptest::prelude::*;

    #[test]
    fn known_answer() {
        // 2x2 input, 2 channels, 2x2 filter VALID: one output pixel per channel (x 2 multiplier).
        let w = window(Hw::square(2), Hw::square(2), 1, 1, Padding::Valid).unwrap();
        let p = Geometry::new(Nhwc::new(1, 2, 2, 2), w).depthwise(2);
        let input = [1, 10, 2, 20, 3, 30, 4, 40];
        let filter = [1, 0, 1, -1, 1, 0, 1, -1, 1, 0, 1, -1, 1, 0, 1, -1];
        let q = Quant::uniform(1.0, 4);
        let mut out = [0i8; 4];
        dsp::depthwise_conv2d(&p, &input, &filter, Some(&[0, 5, 0, 0]), q.get(), &mut out).unwrap();
        assert_eq!(out, [10, 5, 100, -100]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let w = window(Hw::square(3), Hw::square(3), 1, 1, Padding::Same).unwrap();
        let p = Geometry::new(Nhwc::new(1, 3, 3, 5), w).depthwise(1);
        let quant = Quant::uniform(0.5, 5);
        let q = quant.get();
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
        fn case()(g in geometry(11), dm in 1usize..3) -> Option<(DepthwiseParams, u64)> {
            let (g, seed) = g?;
            // Depth multiplier 1 twice as often: it is the packed path.
            let dm = if dm == 2 && seed % 2 == 0 { 1 } else { dm };
            Some((g.depthwise(dm), seed))
        }
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            let oc = p.input.c * p.depth_multiplier;
            let filter_len = p.window.filter.h * p.window.filter.w * oc;
            let ops = Operands::random(seed, p.input.elements().unwrap(), filter_len, oc, 100_000);
            let output_len = p.output_shape().elements().unwrap();
            let kernels = [portable::depthwise_conv2d, dsp::depthwise_conv2d];
            ops.assert_bit_exact(&p, with_bias, output_len, kernels, reference_depthwise)?;
        }
    }
}
