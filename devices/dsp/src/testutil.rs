//! Test helpers: a small PRNG and TFLite's reference loops transcribed literally (one MAC at a
//! time, in TFLite's order), to check the kernels' restructured loops against.

use crate::conv::ConvParams;
use crate::depthwise::DepthwiseParams;
use crate::fully_connected::FullyConnectedParams;
use crate::quant::{PerChannel, multiply_by_quantized_multiplier};
use std::vec::Vec;

/// A 64-bit LCG (Knuth's MMIX constants), enough for test data.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<i8> {
        (0..n).map(|_| self.next() as u8 as i8).collect()
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo) as u32) as i32
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        f64::from(self.next()) / 4_294_967_296.0
    }

    /// Random per-channel multipliers and shifts over their whole valid range.
    pub(crate) fn per_channel(&mut self, n: usize) -> (Vec<i32>, Vec<i32>) {
        (0..n).map(|_| ((self.next() >> 1) as i32 | (1 << 30), self.range(-20, 3))).unzip()
    }
}

fn output_stage(acc: i32, c: usize, q: PerChannel<'_>, zp: i32, min: i32, max: i32) -> i8 {
    let v = multiply_by_quantized_multiplier(acc, q.multiplier[c], q.shift[c]).wrapping_add(zp);
    v.clamp(min, max) as i8
}

/// `FullyConnectedPerChannel`, literally.
pub(crate) fn reference_fc(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    q: PerChannel<'_>,
) -> Vec<i8> {
    let mut out = std::vec![0i8; p.batches * p.output_depth];
    for b in 0..p.batches {
        for oc in 0..p.output_depth {
            let mut acc = 0i32;
            for d in 0..p.input_depth {
                let x = i32::from(input[b * p.input_depth + d]);
                let w = i32::from(filter[oc * p.input_depth + d]);
                acc = acc.wrapping_add(w * (x - p.input_zero_point));
            }
            if let Some(bias) = bias {
                acc = acc.wrapping_add(bias[oc]);
            }
            out[oc + p.output_depth * b] =
                output_stage(acc, oc, q, p.output_zero_point, p.activation.min, p.activation.max);
        }
    }
    out
}

/// `ConvPerChannel` (one group), literally.
pub(crate) fn reference_conv(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    q: PerChannel<'_>,
) -> Vec<i8> {
    let (s, w) = (p.input, p.window);
    let oc_n = p.output_channels;
    let mut out = std::vec![0i8; s.n * w.output.h * w.output.w * oc_n];
    for b in 0..s.n {
        for oy in 0..w.output.h {
            for ox in 0..w.output.w {
                for oc in 0..oc_n {
                    let mut acc = 0i32;
                    for fy in 0..w.filter.h {
                        for fx in 0..w.filter.w {
                            let iy = (oy * w.stride.h + fy * w.dilation.h) as isize - w.pad.h as isize;
                            let ix = (ox * w.stride.w + fx * w.dilation.w) as isize - w.pad.w as isize;
                            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                continue;
                            }
                            for ic in 0..s.c {
                                let x = i32::from(
                                    input[((b * s.h + iy as usize) * s.w + ix as usize) * s.c + ic],
                                );
                                let f =
                                    i32::from(filter[((oc * w.filter.h + fy) * w.filter.w + fx) * s.c + ic]);
                                acc = acc.wrapping_add(f * (x - p.input_zero_point));
                            }
                        }
                    }
                    if let Some(bias) = bias {
                        acc = acc.wrapping_add(bias[oc]);
                    }
                    out[((b * w.output.h + oy) * w.output.w + ox) * oc_n + oc] =
                        output_stage(acc, oc, q, p.output_zero_point, p.activation.min, p.activation.max);
                }
            }
        }
    }
    out
}

/// `DepthwiseConvPerChannel`, literally.
pub(crate) fn reference_depthwise(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    q: PerChannel<'_>,
) -> Vec<i8> {
    let (s, w, dm) = (p.input, p.window, p.depth_multiplier);
    let oc_n = s.c * dm;
    let mut out = std::vec![0i8; s.n * w.output.h * w.output.w * oc_n];
    for b in 0..s.n {
        for oy in 0..w.output.h {
            for ox in 0..w.output.w {
                for ic in 0..s.c {
                    for m in 0..dm {
                        let oc = m + ic * dm;
                        let mut acc = 0i32;
                        for fy in 0..w.filter.h {
                            for fx in 0..w.filter.w {
                                let iy = (oy * w.stride.h + fy * w.dilation.h) as isize - w.pad.h as isize;
                                let ix = (ox * w.stride.w + fx * w.dilation.w) as isize - w.pad.w as isize;
                                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                    continue;
                                }
                                let x = i32::from(
                                    input[((b * s.h + iy as usize) * s.w + ix as usize) * s.c + ic],
                                );
                                let f = i32::from(filter[(fy * w.filter.w + fx) * oc_n + oc]);
                                acc = acc.wrapping_add(f * (x - p.input_zero_point));
                            }
                        }
                        if let Some(bias) = bias {
                            acc = acc.wrapping_add(bias[oc]);
                        }
                        out[((b * w.output.h + oy) * w.output.w + ox) * oc_n + oc] =
                            output_stage(acc, oc, q, p.output_zero_point, p.activation.min, p.activation.max);
                    }
                }
            }
        }
    }
    out
}
