//! int8 depthwise convolution with per-channel weights: TFLite's
//! `reference_integer_ops::DepthwiseConvPerChannel`. Output channel `ic * depth_multiplier + m`
//! filters input channel `ic`.

use crate::arch::{DEPTHWISE_MAX_TAPS, DepthwiseRows, InnerLoops, OutputStage, loops, widen};
use crate::error::{DspError, product};
use crate::filled::Filled;
use crate::quant::{ActivationRange, PerChannel, PerChannelParams, ScaleGroup, Sizes, check_per_channel};
use crate::shape::{Hw, Nhwc, Window, origin, tap_range_of};

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
    let taps = w.filter.h * w.filter.w;
    if K::BLOCKED && dm == 1 && taps <= MAX_TAPS && 8 * staged(w) <= ROW_CAPACITY {
        // Stack buffers sized for the filter (zeroing 24 KiB took 5% of a small model).
        let run = ic_n.min(CHANNEL_RUN).next_multiple_of(8);
        if taps <= 16 && staged(w) * run <= ROW_CAPACITY / 2 {
            blocked::<K, { ROW_CAPACITY / 2 }, { 16 * CHANNEL_RUN }>(p, input, filter, bias, quant, output);
        } else {
            blocked::<K, ROW_CAPACITY, { MAX_TAPS * CHANNEL_RUN }>(p, input, filter, bias, quant, output);
        }
        return Ok(());
    }
    if K::DSP_LOOPS && dm == 1 && w.dilation.w == 1 && ic_n.is_multiple_of(4) && w.filter.h <= WORD_ROWS {
        word_taps(p, input, filter, bias, quant, output);
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
            let (fy0, fy1) = tap_range_of(y0, w.dilation.h, w.filter.h, s.h);
            for ox in 0..w.output.w {
                let x0 = origin(ox, w.stride.w, w.pad.w);
                let (fx0, fx1) = tap_range_of(x0, w.dilation.w, w.filter.w, s.w);
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
                    // Four channels at a time, over the in-bounds taps row by row: one slice
                    // of input and of filter per filter row.
                    let (dx, taps_w) = (w.dilation.w * ic_n, fx1.saturating_sub(fx0));
                    let blocks = oc_n / 4;
                    for c in (0..blocks * 4).step_by(4) {
                        let mut acc = bias.map_or([0; 4], |b| [b[c], b[c + 1], b[c + 2], b[c + 3]]);
                        // (No row when no column is in bounds: `ix` would lie outside.)
                        for fy in if taps_w > 0 { fy0..fy1 } else { 0..0 } {
                            let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
                            let ix = (x0 + (fx0 * w.dilation.w) as isize) as usize;
                            let xs = &input[((b * s.h + iy) * s.w + ix) * ic_n + c..];
                            let fs = &filter[(fy * w.filter.w + fx0) * oc_n + c..];
                            for t in 0..taps_w {
                                let (x, _) = xs[t * dx..][..4].as_chunks::<4>();
                                let (f, _) = fs[t * oc_n..][..4].as_chunks::<4>();
                                K::mac4(&x[0], &f[0], input_offset, &mut acc);
                            }
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

/// The loop of the DSP word loops (`K::DSP_LOOPS`) for depth multiplier 1, dilation 1 along
/// rows, channels in fours and at most [`WORD_ROWS`] filter rows, for arguments `run` has
/// checked: channels in runs of up to
/// [`STAGE_RUN`] with their output stage worked out once ([`ScaleGroup`]); per output
/// pixel, its in-bounds taps once, then four channels at a time over them, each filter row's
/// taps (`c` bytes apart in both input and filter) in one [`loops::taps4`].
fn word_taps(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, c_n) = (p.input, p.window, p.input.c);
    let offset_pair = loops::offset_pair(-p.input_zero_point);
    let (zp, act) = (p.output_zero_point, p.activation);
    let act4 = act.words();
    // Written only as far as each run uses them (see `Filled`).
    let mut scales = Filled::<ScaleGroup, { STAGE_RUN / 4 }>::new();
    // A whole 3x3 window in the image takes `loops::taps4_3x3`, without the input offset:
    // each channel's `offset * Σ filter` is added to its sum instead.
    let three = w.filter == Hw::square(3) && w.dilation.h == 1;
    let offset = -p.input_zero_point;
    let mut folded = Filled::<[i32; 4], { STAGE_RUN / 4 }>::new();
    // Their filters as nine words per four channels (`loops::filter_words_3x3`).
    let mut words = Filled::<[u32; 9], { STAGE_RUN / 4 }>::new();
    for c0 in (0..c_n).step_by(STAGE_RUN) {
        let n = (c_n - c0).min(STAGE_RUN);
        ScaleGroup::fill(&quant, c0, n / 4, &mut scales);
        let scales = scales.get();
        // The 3x3 windows' filters as words, and their bias with the offset folded in.
        let groups = if three { n / 4 } else { 0 };
        words.set((0..groups).map(|g| loops::filter_words_3x3(&filter[c0 + 4 * g..], c_n)));
        let words = words.get();
        folded.set(words.iter().enumerate().map(|(g, taps)| {
            let c = c0 + 4 * g;
            core::array::from_fn(|r| {
                let sum = taps.iter().map(|w| i32::from((w >> (8 * r)) as u8 as i8)).sum::<i32>();
                bias.map_or(0, |b| b[c + r]).wrapping_add(offset.wrapping_mul(sum))
            })
        }));
        let folded = folded.get();
        let mut pixels = output.chunks_exact_mut(c_n);
        for b in 0..s.n {
            for oy in 0..w.output.h {
                let y0 = origin(oy, w.stride.h, w.pad.h);
                let (fy0, fy1) = tap_range_of(y0, w.dilation.h, w.filter.h, s.h);
                for ox in 0..w.output.w {
                    let x0 = origin(ox, w.stride.w, w.pad.w);
                    let (fx0, fx1) = tap_range_of(x0, 1, w.filter.w, s.w);
                    let Some(pixel) = pixels.next() else { return };
                    // Each in-bounds filter row's first input and filter value (none when no
                    // column is in bounds: `ix` would lie outside).
                    let taps_w = fx1.saturating_sub(fx0);
                    let mut rows = [(0, 0); WORD_ROWS];
                    let mut nr = 0;
                    for fy in if taps_w > 0 { fy0..fy1 } else { 0..0 } {
                        let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
                        let ix = (x0 + fx0 as isize) as usize;
                        rows[nr] =
                            (((b * s.h + iy) * s.w + ix) * c_n + c0, (fy * w.filter.w + fx0) * c_n + c0);
                        nr += 1;
                    }
                    let (outs, _) = pixel[c0..][..n].as_chunks_mut::<4>();
                    if three && nr == 3 && taps_w == 3 {
                        // The window's first tap (its filter's is the run's first: `words`).
                        let (xi, _) = rows[0];
                        let groups = outs.iter_mut().zip(scales).zip(folded).zip(words);
                        for (g, (((o, sc), fo), fw)) in groups.enumerate() {
                            let acc = loops::taps4_3x3(&input[xi + 4 * g..], s.w * c_n, fw, c_n, *fo);
                            *o = sc.output(acc, zp, act4);
                        }
                        continue;
                    }
                    for (g, (o, sc)) in outs.iter_mut().zip(scales).enumerate() {
                        let c = c0 + 4 * g;
                        let mut acc = bias.map_or([0; 4], |b| [b[c], b[c + 1], b[c + 2], b[c + 3]]);
                        for &(xi, fi) in &rows[..nr] {
                            acc = loops::taps4(
                                &input[xi + 4 * g..],
                                &filter[fi + 4 * g..],
                                c_n,
                                taps_w,
                                offset_pair,
                                acc,
                            );
                        }
                        *o = sc.output(acc, zp, act4);
                    }
                }
            }
        }
    }
}

/// Most filter rows [`word_taps`] takes.
const WORD_ROWS: usize = 8;

/// Channels per run of [`word_taps`] (their scales on the stack, 1 KiB).
const STAGE_RUN: usize = 64;

/// Most filter taps the blocked loop takes (larger filters take the per-pixel loop).
const MAX_TAPS: usize = DEPTHWISE_MAX_TAPS;
/// Output pixels of a row per run of the blocked loop.
const COLUMNS: usize = 16;
/// Most channels per run of the blocked loop.
const CHANNEL_RUN: usize = 64;
/// int16 values of the blocked loop's staged input rows (16 KiB of stack).
const ROW_CAPACITY: usize = 8192;

/// The staged input values per channel of a run of [`COLUMNS`] output pixels: the filter's
/// rows times the columns they read.
fn staged(w: Window) -> usize {
    w.filter.h * ((COLUMNS - 1) * w.stride.w + (w.filter.w - 1) * w.dilation.w + 1)
}

/// The blocked loop (`K::BLOCKED`, depth multiplier 1, at most [`MAX_TAPS`] taps, eight
/// channels of staged rows fitting `ROWS` int16 values, a run's packed filter `PACKED`), for
/// arguments `run` has checked. Channels
/// go in runs, each with its filter laid out once ([`InnerLoops::pack_depthwise`]); output
/// rows in runs of up to [`COLUMNS`] pixels: the input rows a run of pixels reads are widened
/// to int16 once, with the input offset added and the padding 0 ([`DepthwiseRows`]), then
/// [`InnerLoops::depthwise_rows`] computes it. Up to [`COLUMNS`] pixels (several rows, when
/// rows are short) go through the output stage at once.
fn blocked<K: InnerLoops, const ROWS: usize, const PACKED: usize>(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, c_n) = (p.input, p.window, p.input.c);
    let (oh, ow) = (w.output.h, w.output.w);
    let taps = w.filter.h * w.filter.w;
    // -127..=128, so every input plus the offset is in -255..=255.
    let offset = -p.input_zero_point as i16;
    // Channels per run: a multiple of 8 (the check in `run` leaves room for 8) unless all.
    let run_len = (ROWS / staged(w) / 8 * 8).min(CHANNEL_RUN);
    // Whole output rows per batch of the output stage (1 when a row takes several runs).
    let rows_per_batch = (COLUMNS / ow).max(1);
    // Only the parts used are written (zeroing 20 KiB of buffers per call showed in small
    // layers): each run stages and lays out all it reads.
    let mut rows = Filled::<i16, ROWS>::new();
    let rows = rows.reset(w.filter.h * columns(w, COLUMNS.min(ow)) * run_len.min(c_n), 0);
    let mut packed = Filled::<i16, PACKED>::new();
    let packed = packed.reset(taps.next_multiple_of(2) * run_len.min(c_n).next_multiple_of(8), 0);
    let mut acc = [0i32; COLUMNS * CHANNEL_RUN];
    let zeros = [0i32; CHANNEL_RUN];
    for c0 in (0..c_n).step_by(run_len) {
        let n = (c_n - c0).min(run_len);
        K::pack_depthwise(&filter[c0..], c_n, taps, n, packed);
        let bias = bias.map_or(&zeros[..n], |b| &b[c0..][..n]);
        let stage = OutputStage {
            multiplier: &quant.multiplier[c0..][..n],
            shift: &quant.shift[c0..][..n],
            offset: p.output_zero_point,
            act: p.activation,
        };
        for r0 in (0..s.n * oh).step_by(rows_per_batch) {
            let nr = (s.n * oh - r0).min(rows_per_batch);
            for ox0 in (0..ow).step_by(COLUMNS) {
                let np = (ow - ox0).min(COLUMNS);
                // With more than one row per batch, each row is one run (np == ow).
                for (r, acc) in acc[..nr * np * n].chunks_exact_mut(np * n).enumerate() {
                    let (b, oy) = ((r0 + r) / oh, (r0 + r) % oh);
                    let values = &mut rows[..w.filter.h * columns(w, np) * n];
                    stage_rows(p, input, (b, oy, ox0), (c0, n), offset, values);
                    let staged = DepthwiseRows {
                        values,
                        columns: columns(w, np),
                        filter: w.filter,
                        stride: w.stride.w,
                        dilation: w.dilation.w,
                    };
                    K::depthwise_rows(&staged, packed, bias, acc);
                }
                let first = r0 * ow + ox0;
                K::requantize_rows(&acc[..nr * np * n], &stage, &mut output[first * c_n + c0..], c_n);
            }
        }
    }
}

/// Input columns a run of `np` output pixels reads.
fn columns(w: Window, np: usize) -> usize {
    (np - 1) * w.stride.w + (w.filter.w - 1) * w.dilation.w + 1
}

/// Stages the input rows that output pixels `(b, oy, ox0..)` read (as many as fill `values`),
/// channels `c0..c0 + n`, as [`DepthwiseRows`] describes.
fn stage_rows(
    p: &DepthwiseParams,
    input: &[i8],
    (b, oy, ox0): (usize, usize, usize),
    (c0, n): (usize, usize),
    offset: i16,
    values: &mut [i16],
) {
    let (s, w, c_n) = (p.input, p.window, p.input.c);
    let row_len = values.len() / w.filter.h;
    let y0 = origin(oy, w.stride.h, w.pad.h);
    let (fy0, fy1) = tap_range_of(y0, w.dilation.h, w.filter.h, s.h);
    let x0 = origin(ox0, w.stride.w, w.pad.w);
    // The columns inside the input: x0 + x in 0..s.w.
    let (in0, in1) = tap_range_of(x0, 1, row_len / n, s.w);
    let in1 = in1.max(in0);
    for (fy, row) in values.chunks_exact_mut(row_len).enumerate() {
        if !(fy0..fy1).contains(&fy) || in0 == in1 {
            row.fill(0);
            continue;
        }
        row[..in0 * n].fill(0);
        row[in1 * n..].fill(0);
        // In range: tap_range keeps 0 <= y0 + fy * dilation < h, and x0 + in0 >= 0.
        let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
        let first = ((b * s.h + iy) * s.w + (x0 + in0 as isize) as usize) * c_n + c0;
        if n == c_n {
            // All channels: the row's inputs are contiguous.
            widen(&input[first..][..(in1 - in0) * n], offset, &mut row[in0 * n..in1 * n]);
        } else {
            for (x, dst) in row[in0 * n..in1 * n].chunks_exact_mut(n).enumerate() {
                widen(&input[first + x * c_n..][..n], offset, dst);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::arch::{dsp, portable};
    use crate::shape::{Hw, Padding};
    use crate::testutil::{
        Geometry, Operands, Quant, all_kernels, geometry, padding, reference_depthwise, window,
    };
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

    /// A depthwise convolution on random operands, every implementation against the reference.
    pub(crate) fn check_all(p: &DepthwiseParams, seed: u64, with_bias: bool) -> Result<(), TestCaseError> {
        let oc = p.input.c * p.depth_multiplier;
        let filter_len = p.window.filter.h * p.window.filter.w * oc;
        let ops = Operands::random(seed, p.input.elements().unwrap(), filter_len, oc, 100_000);
        let output_len = p.output_shape().elements().unwrap();
        let mut kernels = all_kernels!(depthwise_conv2d, depthwise);
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        kernels.push(crate::arch::avx512::depthwise_conv2d);
        ops.assert_bit_exact(p, with_bias, output_len, &kernels, reference_depthwise)
    }

    #[test]
    fn filters_of_17_to_32_taps_take_the_larger_buffers() {
        // 5x5 (25 taps), stride 2, SAME: staged rows of 5 x 35 columns.
        let w = window(Hw::new(7, 30), Hw::square(5), 2, 1, Padding::Same).unwrap();
        let p = Geometry::new(Nhwc::new(2, 7, 30, 21), w).depthwise(1);
        check_all(&DepthwiseParams { input_zero_point: -128, output_zero_point: 5, ..p }, 11, true).unwrap();
    }

    #[test]
    fn large_filters_take_the_per_pixel_loop() {
        let w = window(Hw::square(9), Hw::square(9), 1, 1, Padding::Same).unwrap();
        const { assert!(81 > MAX_TAPS) };
        let p = Geometry::new(Nhwc::new(1, 9, 9, 12), w).depthwise(1);
        check_all(&DepthwiseParams { input_zero_point: 127, ..p }, 3, true).unwrap();
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            check_all(&p, seed, with_bias)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Wider than `case`: rows longer than a batch of the output stage, 8-channel steps
        /// with tails, more than one run of channels.
        #[test]
        fn wide_depthwise_is_bit_exact(
            h in 1usize..5, w in 1usize..40, c in 1usize..80, f in 1usize..4, stride in 1usize..3,
            same: bool, izp in -128i32..=127, ozp in -128i32..=127, seed: u64, with_bias: bool,
        ) {
            let Ok(window) = window(Hw::new(h, w), Hw::square(f), stride, 1, padding(same)) else {
                return Ok(());
            };
            let p = DepthwiseParams {
                input_zero_point: izp,
                output_zero_point: ozp,
                ..Geometry::new(Nhwc::new(1, h, w, c), window).depthwise(1)
            };
            check_all(&p, seed, with_bias)?;
        }
    }
}
