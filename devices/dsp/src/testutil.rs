//! Test helpers: a small PRNG, the operands and geometry the kernel tests share, and TFLite's
//! reference loops transcribed literally (one MAC at a time, in TFLite's order), to check the
//! kernels' restructured loops against.

use crate::arch::InnerLoops;
use crate::arch::portable::Portable;
use crate::conv::ConvParams;
use crate::depthwise::DepthwiseParams;
use crate::error::DspError;
use crate::fully_connected::FullyConnectedParams;
use crate::quant::{ActivationRange, PerChannel, multiply_by_quantized_multiplier, quantize_multiplier};
use crate::shape::{Hw, Nhwc, Padding, Window};
use proptest::prelude::*;
use std::vec;
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

    /// `n` filter scales, uniform in `[lo, lo + spread)`.
    pub(crate) fn scales(&mut self, n: usize, lo: f64, spread: f64) -> Vec<f64> {
        (0..n).map(|_| lo + self.unit() * spread).collect()
    }

    /// Random per-channel multipliers and shifts over their whole valid range.
    pub(crate) fn per_channel(&mut self, n: usize) -> Quant {
        let (multiplier, shift) =
            (0..n).map(|_| ((self.next() >> 1) as i32 | (1 << 30), self.range(-20, 3))).unzip();
        Quant { multiplier, shift }
    }
}

/// Per-channel multipliers and shifts owned by a test, lent to the kernels as a [`PerChannel`].
pub(crate) struct Quant {
    pub(crate) multiplier: Vec<i32>,
    pub(crate) shift: Vec<i32>,
}

impl Quant {
    /// `n` channels that all scale by `real`.
    pub(crate) fn uniform(real: f64, n: usize) -> Quant {
        let (m, s) = quantize_multiplier(real);
        Quant { multiplier: vec![m; n], shift: vec![s; n] }
    }

    /// What a converter computes for `input_scale * filter_scales[c] / output_scale`.
    pub(crate) fn from_scales(input_scale: f64, filter_scales: &[f64], output_scale: f64) -> Quant {
        let (multiplier, shift) =
            filter_scales.iter().map(|ws| quantize_multiplier(input_scale * ws / output_scale)).unzip();
        Quant { multiplier, shift }
    }

    /// The channels as the kernels take them.
    pub(crate) fn get(&self) -> PerChannel<'_> {
        PerChannel { multiplier: &self.multiplier, shift: &self.shift }
    }
}

/// A per-channel kernel, as `portable::conv2d` or `dsp::conv2d`.
pub(crate) type Kernel<P> =
    fn(&P, &[i8], &[i8], Option<&[i32]>, PerChannel<'_>, &mut [i8]) -> Result<(), DspError>;

/// A reference loop, as [`reference_conv`].
pub(crate) type Reference<P> = fn(&P, &[i8], &[i8], Option<&[i32]>, PerChannel<'_>) -> Vec<i8>;

/// Random operands of a per-channel kernel.
pub(crate) struct Operands {
    input: Vec<i8>,
    filter: Vec<i8>,
    bias: Vec<i32>,
    quant: Quant,
}

impl Operands {
    /// Draws from `Lcg(seed)`, in this order: `input` and `filter` values, a bias in
    /// `-bias_limit..bias_limit` per channel, then the channels' multipliers and shifts.
    pub(crate) fn random(
        seed: u64,
        input: usize,
        filter: usize,
        channels: usize,
        bias_limit: i32,
    ) -> Operands {
        let mut rng = Lcg(seed);
        let (input, filter) = (rng.bytes(input), rng.bytes(filter));
        let bias = (0..channels).map(|_| rng.range(-bias_limit, bias_limit)).collect();
        Operands { input, filter, bias, quant: rng.per_channel(channels) }
    }

    /// Asserts that every one of `kernels` (one per implementation of the inner loops) gives
    /// `reference`'s `output_len` values, with the bias or without.
    pub(crate) fn assert_bit_exact<P>(
        &self,
        p: &P,
        with_bias: bool,
        output_len: usize,
        kernels: &[Kernel<P>],
        reference: Reference<P>,
    ) -> Result<(), TestCaseError> {
        let (q, bias) = (self.quant.get(), with_bias.then_some(&self.bias[..]));
        let want = reference(p, &self.input, &self.filter, bias, q);
        for (i, kernel) in kernels.iter().enumerate() {
            let mut got = vec![0i8; output_len];
            kernel(p, &self.input, &self.filter, bias, q, &mut got).unwrap();
            prop_assert_eq!(&got, &want, "kernel {} of {}", i, kernels.len());
        }
        Ok(())
    }
}

/// The portable inner loops taking the kernels' blocked loops, on [`InnerLoops`]' provided
/// (scalar) blocked methods: the blocked loops' structure, tested on every host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockedPortable;

impl InnerLoops for BlockedPortable {
    const BLOCKED: bool = true;

    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32 {
        Portable::dot(input, filter, input_offset, acc)
    }

    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2] {
        Portable::dot2(input, filters, input_offset, acc)
    }

    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]) {
        Portable::mac4(input, filter, input_offset, acc)
    }

    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8 {
        Portable::requantize(acc, multiplier, shift, output_offset, act)
    }
}

/// Every implementation of a per-channel kernel: portable, dsp (emulated off Arm), the
/// portable loops blocked, and SSE2 on x86-64.
macro_rules! all_kernels {
    ($name:ident, $module:ident) => {{
        let mut kernels: std::vec::Vec<crate::testutil::Kernel<_>> = std::vec![
            crate::arch::portable::$name,
            crate::arch::dsp::$name,
            crate::$module::run::<crate::testutil::BlockedPortable>,
        ];
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        kernels.push(crate::arch::x86::$name);
        kernels
    }};
}
pub(crate) use all_kernels;

/// SAME padding when `same`, else VALID (proptest draws the bool).
pub(crate) fn padding(same: bool) -> Padding {
    if same { Padding::Same } else { Padding::Valid }
}

/// [`Window::new`] with the same stride and the same dilation along both axes.
pub(crate) fn window(
    input: Hw,
    filter: Hw,
    stride: usize,
    dilation: usize,
    padding: Padding,
) -> Result<Window, DspError> {
    Window::new(input, filter, Hw::square(stride), Hw::square(dilation), padding)
}

/// What convolution and depthwise parameters share: input shape, window and zero points.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    input: Nhwc,
    window: Window,
    /// Input and output zero points.
    zero_points: (i32, i32),
}

impl Geometry {
    /// `window` over `input`, with zero points 0.
    pub(crate) fn new(input: Nhwc, window: Window) -> Geometry {
        Geometry { input, window, zero_points: (0, 0) }
    }

    /// A convolution with `output_channels` filters and no activation clamp.
    pub(crate) fn conv(self, output_channels: usize) -> ConvParams {
        let (input_zero_point, output_zero_point) = self.zero_points;
        let (input, window, activation) = (self.input, self.window, ActivationRange::INT8);
        ConvParams { input, output_channels, window, input_zero_point, output_zero_point, activation }
    }

    /// A depthwise convolution with `depth_multiplier` and no activation clamp.
    pub(crate) fn depthwise(self, depth_multiplier: usize) -> DepthwiseParams {
        let (input_zero_point, output_zero_point) = self.zero_points;
        let (input, window, activation) = (self.input, self.window, ActivationRange::INT8);
        DepthwiseParams { input, depth_multiplier, window, input_zero_point, output_zero_point, activation }
    }
}

prop_compose! {
    /// A random geometry of fewer than `max_c` channels and a data seed (`None` where the
    /// window does not fit the input).
    pub(crate) fn geometry(max_c: usize)(
        n in 1usize..3, h in 1usize..7, w in 1usize..7, c in 1usize..max_c,
        fh in 1usize..4, fw in 1usize..4, stride in 1usize..3, dilation in 1usize..3, same: bool,
        izp in -128i32..=127, ozp in -128i32..=127, seed: u64,
    ) -> Option<(Geometry, u64)> {
        let window = window(Hw::new(h, w), Hw::new(fh, fw), stride, dilation, padding(same)).ok()?;
        Some((Geometry { input: Nhwc::new(n, h, w, c), window, zero_points: (izp, ozp) }, seed))
    }
}

/// Every output pixel `(batch, y, x)` of window `w` over input `s`, in NHWC order.
pub(crate) fn output_pixels(s: Nhwc, w: Window) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..s.n).flat_map(move |b| (0..w.output.h).flat_map(move |oy| (0..w.output.w).map(move |ox| (b, oy, ox))))
}

/// The taps `(fy, fx)` of output pixel `(b, oy, ox)` that lie inside the input, in TFLite's
/// order, each with the index of its input pixel (channel 0); taps in the padding are skipped.
pub(crate) fn taps(
    s: Nhwc,
    w: Window,
    (b, oy, ox): (usize, usize, usize),
) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..w.filter.h).flat_map(move |fy| {
        (0..w.filter.w).filter_map(move |fx| {
            let iy = (oy * w.stride.h + fy * w.dilation.h) as isize - w.pad.h as isize;
            let ix = (ox * w.stride.w + fx * w.dilation.w) as isize - w.pad.w as isize;
            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                return None;
            }
            Some((fy, fx, ((b * s.h + iy as usize) * s.w + ix as usize) * s.c))
        })
    })
}

/// TFLite's output stage of channel `c`: add the bias, requantize, add the zero point, clamp.
fn output_stage(
    acc: i32,
    c: usize,
    bias: Option<&[i32]>,
    q: PerChannel<'_>,
    zp: i32,
    act: ActivationRange,
) -> i8 {
    let acc = bias.map_or(acc, |bias| acc.wrapping_add(bias[c]));
    let v = multiply_by_quantized_multiplier(acc, q.multiplier[c], q.shift[c]).wrapping_add(zp);
    v.clamp(act.min, act.max) as i8
}

/// One multiply-accumulate with the input offset, wrapping as TFLite's int32 accumulation.
fn mac(acc: i32, x: i8, f: i8, input_zero_point: i32) -> i32 {
    acc.wrapping_add(i32::from(f) * (i32::from(x) - input_zero_point))
}

/// `FullyConnectedPerChannel`, literally.
pub(crate) fn reference_fc(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    q: PerChannel<'_>,
) -> Vec<i8> {
    let mut out = Vec::new();
    for b in 0..p.batches {
        for oc in 0..p.output_depth {
            let mut acc = 0i32;
            for d in 0..p.input_depth {
                let (x, w) = (input[b * p.input_depth + d], filter[oc * p.input_depth + d]);
                acc = mac(acc, x, w, p.input_zero_point);
            }
            out.push(output_stage(acc, oc, bias, q, p.output_zero_point, p.activation));
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
    let mut out = Vec::new();
    for pixel in output_pixels(s, w) {
        for oc in 0..p.output_channels {
            let mut acc = 0i32;
            for (fy, fx, at) in taps(s, w, pixel) {
                for ic in 0..s.c {
                    let f = filter[((oc * w.filter.h + fy) * w.filter.w + fx) * s.c + ic];
                    acc = mac(acc, input[at + ic], f, p.input_zero_point);
                }
            }
            out.push(output_stage(acc, oc, bias, q, p.output_zero_point, p.activation));
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
    let mut out = Vec::new();
    for pixel in output_pixels(s, w) {
        for ic in 0..s.c {
            for m in 0..dm {
                let oc = m + ic * dm;
                let mut acc = 0i32;
                for (fy, fx, at) in taps(s, w, pixel) {
                    let f = filter[(fy * w.filter.w + fx) * oc_n + oc];
                    acc = mac(acc, input[at + ic], f, p.input_zero_point);
                }
                out.push(output_stage(acc, oc, bias, q, p.output_zero_point, p.activation));
            }
        }
    }
    out
}
