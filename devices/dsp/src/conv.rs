//! int8 2-D convolution with per-channel weights: TFLite's
//! `reference_integer_ops::ConvPerChannel` (one group), NHWC input, OHWI filter.

use crate::arch::{InnerLoops, OutputStage, loops, widen};
use crate::error::{DspError, product};
use crate::filled::Filled;
use crate::quant::{ActivationRange, PerChannel, PerChannelParams, ScaleGroup, Sizes, check_per_channel};
use crate::shape::{Nhwc, Window, origin, tap_range, tap_range_of};

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
    run_with_pairs::<K>(p, input, (filter, bias, None), quant, output)
}

/// [`run`], the blocked loop reading `pairs` (checked to be [`pairs_len`] long) where `K`
/// [takes it](InnerLoops::takes_pairs) instead of laying each run's filters out per call.
pub(crate) fn run_with_pairs<K: InnerLoops>(
    p: &ConvParams,
    input: &[i8],
    (filter, bias, pairs): (&[i8], Option<&[i32]>, Option<&[i16]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check_per_channel(p, input, filter, bias, &quant, output)?;
    check_pairs(p, pairs)?;
    let pairs = pairs.filter(|_| K::takes_pairs());
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let ic = s.c;
    let per_filter = w.filter.h * w.filter.w * ic;
    if oc_n == 0 {
        return Ok(());
    }
    if K::BLOCKED && K::has_direct() && direct::<K>(p, input, filter, bias, quant, output) {
        return Ok(());
    }
    if K::BLOCKED && blocked_fits(per_filter) {
        // Stack buffers sized for the patches (zeroing 48 KiB for a 1x1 convolution of 8
        // channels cost more than the arithmetic).
        let patch = padded(per_filter);
        if patch <= 64 {
            blocked::<K, { PIXELS * 64 }, { CHANNEL_RUN * 64 }>(
                p,
                input,
                (filter, bias, pairs),
                quant,
                output,
            );
        } else if patch <= 256 {
            blocked::<K, { PIXELS * 256 }, FILTER_CAPACITY>(p, input, (filter, bias, pairs), quant, output);
        } else {
            blocked::<K, PATCH_CAPACITY, FILTER_CAPACITY>(p, input, (filter, bias, pairs), quant, output);
        }
        return Ok(());
    }
    if per_filter <= PAIR_PATCH {
        if K::DSP_LOOPS {
            pixel_words::<K>(p, input, filter, bias, quant, output);
        } else {
            pixel_pairs::<K>(p, input, filter, bias, quant, output);
        }
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

/// Most values per patch of [`pixel_pairs`] (two of them on the stack, as int8); longer
/// patches take the per-pixel loop.
const PAIR_PATCH: usize = 1152;

/// The loop of the unblocked inner loops (CMSIS-NN's structure, for microcontrollers), for
/// patches of at most [`PAIR_PATCH`] values and arguments `run` has checked: output pixels two
/// at a time, their patches read in place (pointwise) or gathered as int8 with the zero point
/// in the padding (whose input plus offset is then 0), and each pair of output channels
/// multiplied with both at once ([`InnerLoops::dot2x2`]). An odd last pixel or channel pairs
/// with itself.
fn pixel_pairs<K: InnerLoops>(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let per_filter = w.filter.h * w.filter.w * s.c;
    let total = s.n * w.output.h * w.output.w;
    let input_offset = -p.input_zero_point;
    let pointwise = w.is_pointwise();
    let pad = p.input_zero_point as i8;
    let mut patches = [[0i8; PAIR_PATCH]; 2];
    let mut pixel = (0, 0, 0);
    let out = |acc: i32, c: usize| {
        K::requantize(acc, quant.multiplier[c], quant.shift[c], p.output_zero_point, p.activation)
    };
    let mut q = 0;
    while q < total {
        let pair = total - q >= 2;
        if !pointwise {
            for patch in patches.iter_mut().take(1 + usize::from(pair)) {
                im2col(p, input, pixel, &mut patch[..per_filter], pad, |x| x);
                pixel = next_pixel(p, pixel);
            }
        }
        let (x, y) = if pointwise {
            let x = &input[q * s.c..][..s.c];
            (x, if pair { &input[(q + 1) * s.c..][..s.c] } else { x })
        } else {
            let [a, b] = &patches;
            (&a[..per_filter], if pair { &b[..per_filter] } else { &a[..per_filter] })
        };
        let rows = &mut output[q * oc_n..][..oc_n * (1 + usize::from(pair))];
        let (first, second) = rows.split_at_mut(oc_n);
        for c in (0..oc_n).step_by(2) {
            let d = if c + 1 < oc_n { c + 1 } else { c };
            let filters = [&filter[c * per_filter..][..per_filter], &filter[d * per_filter..][..per_filter]];
            let (bc, bd) = bias.map_or((0, 0), |b| (b[c], b[d]));
            let acc = K::dot2x2([x, y], filters, input_offset, [bc, bd, bc, bd]);
            (first[c], first[d]) = (out(acc[0], c), out(acc[1], d));
            if pair {
                (second[c], second[d]) = (out(acc[2], c), out(acc[3], d));
            }
        }
        q += 1 + usize::from(pair);
    }
}

/// The loop of the DSP word loops (`K::DSP_LOOPS`), for patches of at most [`PAIR_PATCH`]
/// values and arguments `run` has checked. Output channels go in runs of up to [`STAGE_RUN`],
/// whose output stage is worked out once ([`ScaleGroup`]); for each run, output pixels go
/// two at a time where their patches fit the buffer side by side ([`PAIRED`] values each),
/// else one at a time. A pair's patches (read in place when pointwise, else gathered with
/// the zero point in the padding) are widened once into int16 pairs with the input offset
/// added, side by side ([`loops::widen_words2`]), and multiplied with two filters at a time
/// ([`loops::conv_2x2`]: each filter word unpacked once for both pixels); a single pixel's
/// ([`loops::widen_words`]) with four at a time ([`loops::conv_row4`], CMSIS-NN's
/// `arm_nn_mat_mult_kernel_s8_s16` structure). A gathered patch is rounded up to whole
/// words with the zero point where the filter has the bytes to read past each row; elsewhere
/// the patch's last `len % 4` values, and everywhere the last `channels % 4` filters, are
/// summed by [`InnerLoops::dot`].
fn pixel_words<K: InnerLoops>(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let per_filter = w.filter.h * w.filter.w * s.c;
    let whole = per_filter / 4 * 4;
    let total = s.n * w.output.h * w.output.w;
    let input_offset = -p.input_zero_point;
    let offset_pair = loops::offset_pair(input_offset);
    let pointwise = w.is_pointwise();
    let (zp, act) = (p.output_zero_point, p.activation);
    let act4 = act.words();
    // The gathered patches of a pair (the second one's only when pairs fit).
    let paired = per_filter <= PAIRED;
    // Gathered patches whose length is not a multiple of four are widened to the next one,
    // the extra values the zero point (`x + offset` = 0: whatever filter byte follows, the
    // product is 0) rather than summed one by one; the filter rows are then read a few bytes
    // past their ends, into the next rows, where the filter has that many bytes left.
    let padded = per_filter.next_multiple_of(4);
    let rounded = !pointwise && padded > per_filter && padded <= PAIRED;
    let wide = if rounded { padded } else { whole };
    // The buffers, written only as far as this call uses them (see `Filled`): the gathered
    // patches of a pair (the second one's only when pairs fit), the zero point past each
    // patch; one pixel's widened values (two words per four values), or a pair's side by
    // side; each run's output stage.
    let (mut gathered, mut gathered_b) = (Filled::<i8, PAIR_PATCH>::new(), Filled::<i8, PAIRED>::new());
    let zero_point = p.input_zero_point as i8;
    let gathered = gathered.reset(if pointwise { 0 } else { padded }, zero_point);
    let gathered_b = gathered_b.reset(if pointwise || !paired { 0 } else { padded }, zero_point);
    let mut words = Filled::<u32, { PAIR_PATCH / 2 }>::new();
    let words = words.reset(if paired { wide } else { wide / 2 }, 0);
    let mut scales = Filled::<ScaleGroup, { STAGE_RUN / 4 }>::new();
    // Runs of whole groups of four channels, then the last `oc_n % 4` channels alone.
    let quads = oc_n / 4 * 4;
    let runs = (0..quads).step_by(STAGE_RUN).map(|c0| (c0, (quads - c0).min(STAGE_RUN)));
    let rest = (quads < oc_n).then_some((quads, oc_n - quads));
    for (c0, n) in runs.chain(rest) {
        let grouped = n.is_multiple_of(4);
        if grouped {
            ScaleGroup::fill(&quant, c0, n / 4, &mut scales);
        }
        let filters = &filter[c0 * per_filter..][..n * per_filter];
        let biases = bias.map(|b| &b[c0..][..n]);
        let (biases4, _) = biases.unwrap_or(&[]).as_chunks::<4>();
        let mut q = 0;
        if grouped && pointwise && whole == per_filter && paired {
            // Pointwise pairs read in place, with none of the general loop's cases (fewer
            // instructions per pair for the narrow layers, 8 or 16 channels); a last odd
            // pixel goes on alone in the general loop.
            let both = &mut words[..whole];
            let pairs = total / 2;
            for (k, rows) in output.chunks_exact_mut(2 * oc_n).take(pairs).enumerate() {
                let (a, b) = rows.split_at_mut(oc_n);
                let x = &input[2 * k * s.c..][..2 * s.c];
                loops::widen_words2(&x[..s.c], &x[s.c..], offset_pair, both);
                let (outs_a, _) = a[c0..][..n].as_chunks_mut::<4>();
                let (outs_b, _) = b[c0..][..n].as_chunks_mut::<4>();
                let groups =
                    outs_a.iter_mut().zip(outs_b).zip(filters.chunks_exact(4 * per_filter)).zip(scales.get());
                for (g, (((oa, ob), f), sc)) in groups.enumerate() {
                    let (acc_a, acc_b) = pair_group(both, f, per_filter, biases4.get(g).copied());
                    *oa = sc.output(acc_a, zp, act4);
                    *ob = sc.output(acc_b, zp, act4);
                }
            }
            q = 2 * pairs;
        }
        let mut pixel = (0, 0, 0);
        while q < total {
            let pair = grouped && paired && q + 1 < total;
            let x = if pointwise {
                &input[q * s.c..][..s.c]
            } else {
                im2col(p, input, pixel, &mut gathered[..per_filter], p.input_zero_point as i8, |x| x);
                pixel = next_pixel(p, pixel);
                &gathered[..per_filter]
            };
            let y = if !pair {
                x
            } else if pointwise {
                &input[(q + 1) * s.c..][..s.c]
            } else {
                im2col(p, input, pixel, &mut gathered_b[..per_filter], p.input_zero_point as i8, |x| x);
                pixel = next_pixel(p, pixel);
                &gathered_b[..per_filter]
            };
            let rows = &mut output[q * oc_n..][..oc_n * (1 + usize::from(pair))];
            let (row, second) = rows.split_at_mut(oc_n);
            let row = &mut row[c0..][..n];
            q += 1 + usize::from(pair);
            if !grouped {
                for (c, o) in row.iter_mut().enumerate() {
                    let f = &filters[c * per_filter..][..per_filter];
                    let acc = K::dot(x, f, input_offset, biases.map_or(0, |b| b[c]));
                    *o = K::requantize(acc, quant.multiplier[c0 + c], quant.shift[c0 + c], zp, act);
                }
                continue;
            }
            // The patch's last `per_filter % 4` values, for four filters `f`.
            let tail = |x: &[i8], f: &[i8], acc: &mut [i32; 4]| {
                *acc = loops::tail4::<K>(x, f, (per_filter, whole), input_offset, *acc);
            };
            let (outs, _) = row.as_chunks_mut::<4>();
            let groups = outs.iter_mut().zip(filters.chunks_exact(4 * per_filter)).zip(scales.get());
            // Group `g`'s filters read to the end of `filter` (rows past its own when
            // rounded), or its own rows and the tail, for the last group.
            let rounded_group = |g: usize| rounded && (c0 + 4 * g + 3) * per_filter + padded <= filter.len();
            let from_group = |g: usize| &filter[(c0 + 4 * g) * per_filter..];
            if pair {
                // (`x` and `y` hold `wide` values when rounded: `gathered` and `gathered_b`.)
                let (xw, yw) = if rounded { (&gathered[..wide], &gathered_b[..wide]) } else { (x, y) };
                let both = &mut words[..wide];
                loops::widen_words2(&xw[..wide], &yw[..wide], offset_pair, both);
                let (outs_b, _) = second[c0..][..n].as_chunks_mut::<4>();
                for (g, (((o, f), sc), ob)) in groups.zip(outs_b).enumerate() {
                    let bias = biases4.get(g).copied();
                    let (acc, acc_b) = if rounded_group(g) {
                        pair_group(both, from_group(g), per_filter, bias)
                    } else {
                        let (mut acc, mut acc_b) = pair_group(&both[..whole], f, per_filter, bias);
                        tail(x, f, &mut acc);
                        tail(y, f, &mut acc_b);
                        (acc, acc_b)
                    };
                    *o = sc.output(acc, zp, act4);
                    *ob = sc.output(acc_b, zp, act4);
                }
                continue;
            }
            let xw = if rounded { &gathered[..wide] } else { x };
            let one = &mut words[..wide / 2];
            loops::widen_words(&xw[..wide], offset_pair, one);
            for (g, ((o, f), sc)) in groups.enumerate() {
                let bias = biases4.get(g).copied().unwrap_or([0; 4]);
                let acc = if rounded_group(g) {
                    loops::conv_row4(one, from_group(g), per_filter, bias)
                } else {
                    let mut acc = loops::conv_row4(&one[..whole / 2], f, per_filter, bias);
                    tail(x, f, &mut acc);
                    acc
                };
                *o = sc.output(acc, zp, act4);
            }
        }
    }
}

/// A group of four filters (`f`, rows `per_filter` apart) times a pair of pixels' widened
/// values (`both`, laid out by [`loops::widen_words2`]), from the group's bias (or zeros):
/// the first pixel's four sums, then the second's.
#[inline(always)]
fn pair_group(both: &[u32], f: &[i8], per_filter: usize, bias: Option<[i32; 4]>) -> ([i32; 4], [i32; 4]) {
    let [b0, b1, b2, b3] = bias.unwrap_or([0; 4]);
    let [a0, a1, e0, e1] = loops::conv_2x2(both, f, per_filter, [b0, b1, b0, b1]);
    let [a2, a3, e2, e3] = loops::conv_2x2(both, &f[2 * per_filter..], per_filter, [b2, b3, b2, b3]);
    ([a0, a1, a2, a3], [e0, e1, e2, e3])
}

/// Most values per patch that [`pixel_words`] takes two pixels at a time (the second pixel's
/// gathered patch on the stack, 576 bytes; both widened patches fill the one patch's buffer).
const PAIRED: usize = PAIR_PATCH / 2;

/// Output channels per run of [`pixel_words`] (their scales on the stack, 1 KiB).
const STAGE_RUN: usize = 64;

/// Output pixels per block of the blocked loop: one patch each, multiplied by each filter
/// as it is read.
const PIXELS: usize = 4;
/// Output pixels per group: the blocks' accumulators are kept for this many pixels, which go
/// through the output stage together.
const GROUP: usize = 16;
/// int16 values the blocked loop's patches may take (16 KiB of stack); a kernel whose
/// [`PIXELS`] patches need more takes the per-pixel loop.
const PATCH_CAPACITY: usize = 8192;
/// int16 values of the widened filters of one run of channels (32 KiB of stack).
const FILTER_CAPACITY: usize = 16384;
/// Most output channels per run.
const CHANNEL_RUN: usize = 64;

/// The int16 length of a patch or filter in the blocked loop: padded with zeros to whole
/// 8-value steps.
fn padded(per_filter: usize) -> usize {
    per_filter.next_multiple_of(8).max(8)
}

/// The blocked loop (`K::BLOCKED`), for arguments `run` has checked, with [`PIXELS`] padded
/// patches fitting `PATCHES` int16 values and four channels' filters `FILTERS`. Output
/// channels go in runs whose filters, widened to int16, fit `FILTERS`; each run's output pixels in groups of [`GROUP`] (along
/// rows, then on to the next row and image), and those in blocks of [`PIXELS`], whose patches
/// are gathered (im2col) with the input offset added, widened to int16, and multiplied by the
/// run's filters ([`InnerLoops::pack_filters`], [`InnerLoops::conv_block`]); the group's
/// accumulators then go through the output stage at once.
fn blocked<K: InnerLoops, const PATCHES: usize, const FILTERS: usize>(
    p: &ConvParams,
    input: &[i8],
    (filter, bias_in, pairs): (&[i8], Option<&[i32]>, Option<&[i16]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let per_filter = w.filter.h * w.filter.w * s.c;
    // Patch rows apart (whole 8-value steps); im2col never writes the padding, which stays 0.
    let stride = padded(per_filter);
    // A multiple of 8, as `pack_filters` needs (at least 8: the patches' check bounds
    // `stride` by 2048).
    let run_len = (FILTERS / stride / 8 * 8).min(CHANNEL_RUN);
    let total = s.n * w.output.h * w.output.w;
    // A 1x1 filter on every input pixel in order: output pixel q's patch is input pixel q.
    let pointwise = w.is_pointwise();
    // -127..=128, so every input plus the offset is in -255..=255.
    let offset = -p.input_zero_point as i16;
    let mut patches = [0i16; PATCHES];
    // Only the part a run lays out is written (zeroing all 32 KiB per call showed).
    let mut filters = Filled::<i16, FILTERS>::new();
    let mut acc = [0i32; GROUP * CHANNEL_RUN];
    let mut biases = [0i32; CHANNEL_RUN];
    // Each block through the output stage as its sums come (AVX2), else each group's at once.
    let block_out = K::has_block_out();
    for c0 in (0..oc_n).step_by(run_len) {
        let n = (oc_n - c0).min(run_len);
        let laid = n.next_multiple_of(8) * stride;
        let filters: &[i16] = match pairs {
            // Groups of eight channels are laid out alike wherever they start.
            Some(pairs) => &pairs[c0 * stride..][..laid],
            None => {
                let filters = filters.reset(laid, 0);
                K::pack_filters(&filter[c0 * per_filter..], per_filter, stride, n, filters);
                filters
            }
        };
        let bias = &mut biases[..n];
        match bias_in {
            Some(b) => bias.copy_from_slice(&b[c0..][..n]),
            None => bias.fill(0),
        }
        let stage = OutputStage {
            multiplier: &quant.multiplier[c0..][..n],
            shift: &quant.shift[c0..][..n],
            offset: p.output_zero_point,
            act: p.activation,
        };
        let mut pixel = (0, 0, 0);
        for first in (0..total).step_by(GROUP) {
            let ng = (total - first).min(GROUP);
            let acc = &mut acc[..ng * n];
            for (block, acc) in acc.chunks_mut(PIXELS * n).enumerate() {
                let np = acc.len() / n;
                if pointwise {
                    // The block's patches are its pixels' inputs, one after the other.
                    let pixels = &input[(first + block * PIXELS) * s.c..][..np * s.c];
                    if stride == s.c {
                        widen(pixels, offset, &mut patches[..np * s.c]);
                    } else {
                        for (patch, x) in patches.chunks_exact_mut(stride).zip(pixels.chunks_exact(s.c)) {
                            widen(x, offset, &mut patch[..s.c]);
                        }
                    }
                } else {
                    for patch in patches.chunks_exact_mut(stride).take(np) {
                        // Inputs plus the offset, as int16 (-255..=255); the padding is 0.
                        im2col(p, input, pixel, &mut patch[..per_filter], 0, |x| i16::from(x) + offset);
                        pixel = next_pixel(p, pixel);
                    }
                }
                // Rows past the block's pixels (a last, partial block) hold stale values,
                // whose sums are not written.
                let block_patches = (&patches[..PIXELS * stride], stride, filters, &*bias);
                if block_out {
                    let out = &mut output[(first + block * PIXELS) * oc_n + c0..];
                    K::conv_block_out(block_patches, &stage, acc, (out, oc_n, np));
                } else {
                    K::conv_block(block_patches.0, stride, filters, bias, acc);
                }
            }
            if !block_out {
                K::requantize_rows(acc, &stage, &mut output[first * oc_n + c0..], oc_n);
            }
        }
    }
}

/// int16 values of the direct loop's staged input rows (24 KiB of stack).
const STAGED_CAPACITY: usize = 12288;

/// The direct loop ([`InnerLoops::conv_direct`]), for arguments `run` has checked: `false`
/// (nothing written) where it does not apply (a pointwise or column-dilated filter, or rows
/// or filters over its buffers). Per output row, the filter's input rows are staged once,
/// widened to int16 with the input offset added and their padding 0, and each pixel reads
/// its filter rows in place from them, so nothing is gathered per pixel (for a first layer
/// of three channels, gathering had cost several times its sums). Each filter row's `fw *
/// ic` values are padded to an even count with a zero filter value, whose input is the next
/// staged value (one spare at the end of each row). Out of line, so that its 76 KiB of stack
/// buffers are not added to the blocked loop's in `run`'s frame.
#[inline(never)]
fn direct<K: InnerLoops>(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias_in: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> bool {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let ic = s.c;
    let Some((taps, row, run_len)) = direct_geometry(p) else { return false };
    let row_len = w.filter.w * ic;
    let per_filter = w.filter.h * taps;
    let offset = -p.input_zero_point as i16;
    // Only the parts used are written (zeroing 70 KiB of buffers per call showed).
    let mut staged = Filled::<i16, STAGED_CAPACITY>::new();
    let staged = staged.reset(w.filter.h * row, 0);
    let mut evened = Filled::<i8, FILTER_CAPACITY>::new();
    let mut filters = Filled::<i16, FILTER_CAPACITY>::new();
    let filters = filters.reset(run_len.next_multiple_of(8) * per_filter, 0);
    let mut acc = [0i32; GROUP * CHANNEL_RUN];
    let mut biases = [0i32; CHANNEL_RUN];
    for c0 in (0..oc_n).step_by(run_len) {
        let n = (oc_n - c0).min(run_len);
        // The run's filters with each filter row padded to `taps` values.
        let run = &filter[c0 * w.filter.h * row_len..][..n * w.filter.h * row_len];
        let evened = evened.reset(n * per_filter, 0);
        for (dst, src) in evened.chunks_exact_mut(taps).zip(run.chunks_exact(row_len)) {
            dst[..row_len].copy_from_slice(src);
            dst[row_len..].fill(0);
        }
        K::pack_direct(evened, per_filter, per_filter, n, filters);
        let bias = &mut biases[..n];
        match bias_in {
            Some(b) => bias.copy_from_slice(&b[c0..][..n]),
            None => bias.fill(0),
        }
        let stage = OutputStage {
            multiplier: &quant.multiplier[c0..][..n],
            shift: &quant.shift[c0..][..n],
            offset: p.output_zero_point,
            act: p.activation,
        };
        for b in 0..s.n {
            for oy in 0..w.output.h {
                stage_conv_rows(p, input, (b, oy), offset, row, staged);
                let first_pixel = (b * w.output.h + oy) * w.output.w;
                for first in (0..w.output.w).step_by(GROUP) {
                    let ng = (w.output.w - first).min(GROUP);
                    let acc = &mut acc[..ng * n];
                    for (block, acc) in acc.chunks_mut(PIXELS * n).enumerate() {
                        let np = acc.len() / n;
                        // Unused pixels of a last, partial block read the first pixel's rows.
                        let bases = core::array::from_fn(|q| {
                            let ox = first + block * PIXELS + if q < np { q } else { 0 };
                            ox * w.stride.w * ic
                        });
                        K::conv_direct(staged, (bases, row, w.filter.h, taps), filters, bias, acc);
                    }
                    K::requantize_rows(acc, &stage, &mut output[(first_pixel + first) * oc_n + c0..], oc_n);
                }
            }
        }
    }
    true
}

/// [`direct`]'s filter row length (padded to pairs), staged row length and channels per run,
/// or `None` where it does not apply.
fn direct_geometry(p: &ConvParams) -> Option<(usize, usize, usize)> {
    let (ic, w) = (p.input.c, p.window);
    let row_len = w.filter.w * ic;
    if w.is_pointwise() || w.dilation.w != 1 || row_len == 0 || w.output.w == 0 {
        return None;
    }
    let taps = row_len.next_multiple_of(2);
    let per_filter = w.filter.h * taps;
    // Staged columns: from the first pixel's first tap to the last pixel's last, plus a spare.
    let columns = (w.output.w - 1) * w.stride.w + w.filter.w;
    let row = columns * ic + 1;
    let run_len = (FILTER_CAPACITY / per_filter / 8 * 8).min(CHANNEL_RUN);
    let fits = w.filter.h * row <= STAGED_CAPACITY && run_len > 0 && per_filter <= FILTER_CAPACITY;
    fits.then_some((taps, row, run_len))
}

/// The length of [`crate::prepack::pack_conv_pairs`]' layout of `p`'s filters (int16
/// values), where the loops that read it ahead of time (AVX2's blocked loop) take the layer:
/// neither the direct loop nor the per-pixel one. `p`'s sizes must be checked.
pub(crate) fn pairs_len(p: &ConvParams) -> Option<usize> {
    let w = p.window;
    let per_filter = w.filter.h.checked_mul(w.filter.w)?.checked_mul(p.input.c)?;
    if p.output_channels == 0 || !blocked_fits(per_filter) || direct_geometry(p).is_some() {
        return None;
    }
    p.output_channels.checked_next_multiple_of(8)?.checked_mul(padded(per_filter))
}

/// An error unless `pairs`, where given, are [`pairs_len`] long: checked on every CPU,
/// whether or not its loops read them.
pub(crate) fn check_pairs(p: &ConvParams, pairs: Option<&[i16]>) -> Result<(), DspError> {
    match pairs {
        Some(pairs) if Some(pairs.len()) != pairs_len(p) => {
            Err(DspError::Param("packed filter pairs are not the layer's length"))
        }
        _ => Ok(()),
    }
}

/// Whether [`PIXELS`] patches of `per_filter` values fit the blocked loop's buffer.
fn blocked_fits(per_filter: usize) -> bool {
    // (Bounded first: `padded` of a value near `usize::MAX` would overflow.)
    per_filter <= PATCH_CAPACITY / PIXELS && PIXELS * padded(per_filter) <= PATCH_CAPACITY
}

/// The input rows of output row `oy` of image `b` for [`direct`], into `staged` (`filter.h`
/// rows of `row` values): input plus `offset` as int16, 0 in the padding and the spare.
fn stage_conv_rows(
    p: &ConvParams,
    input: &[i8],
    (b, oy): (usize, usize),
    offset: i16,
    row: usize,
    staged: &mut [i16],
) {
    let (s, w) = (p.input, p.window);
    let ic = s.c;
    let y0 = origin(oy, w.stride.h, w.pad.h);
    // Input columns from x0 on; those inside the image are `from..to` (staged columns
    // `from - x0..`).
    let x0 = -(w.pad.w as isize);
    let columns = (row - 1) / ic;
    let from = x0.max(0) as usize;
    let to = ((x0 + columns as isize).max(0) as usize).min(s.w).max(from);
    let lead = ((from as isize - x0) as usize).min(columns);
    for (fy, dst) in staged.chunks_exact_mut(row).enumerate() {
        let iy = y0 + (fy * w.dilation.h) as isize;
        if iy < 0 || iy as usize >= s.h {
            dst.fill(0);
            continue;
        }
        let src = &input[((b * s.h + iy as usize) * s.w + from) * ic..][..(to - from) * ic];
        dst[..lead * ic].fill(0);
        widen(src, offset, &mut dst[lead * ic..][..src.len()]);
        dst[lead * ic + src.len()..].fill(0);
    }
}

/// The output pixel after `(b, oy, ox)`: along the row, then on to the next row and image.
pub(crate) fn next_pixel(p: &ConvParams, (b, oy, ox): (usize, usize, usize)) -> (usize, usize, usize) {
    if ox + 1 < p.window.output.w {
        (b, oy, ox + 1)
    } else if oy + 1 < p.window.output.h {
        (b, oy + 1, 0)
    } else {
        (b + 1, 0, 0)
    }
}

/// The patch of output pixel `(b, oy, ox)` in filter order (`[fh, fw, c]`), each input
/// converted by `value`; taps in the padding are `pad` (the converted zero point).
pub(crate) fn im2col<T: Copy>(
    p: &ConvParams,
    input: &[i8],
    (b, oy, ox): (usize, usize, usize),
    patch: &mut [T],
    pad: T,
    value: impl Fn(i8) -> T,
) {
    let (s, w, ic) = (p.input, p.window, p.input.c);
    let row_len = w.filter.w * ic;
    if row_len == 0 {
        return;
    }
    let convert = |src: &[i8], dst: &mut [T]| {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = value(x);
        }
    };
    let y0 = origin(oy, w.stride.h, w.pad.h);
    let x0 = origin(ox, w.stride.w, w.pad.w);
    if w.filter.h == 1 && row_len == ic && y0 >= 0 && x0 >= 0 && (y0 as usize) < s.h && (x0 as usize) < s.w {
        // A 1x1 filter inside the input (pointwise convolutions): one input pixel.
        convert(&input[((b * s.h + y0 as usize) * s.w + x0 as usize) * ic..][..ic], patch);
        return;
    }
    let (fy0, fy1) = tap_range_of(y0, w.dilation.h, w.filter.h, s.h);
    let (fx0, fx1) = tap_range_of(x0, w.dilation.w, w.filter.w, s.w);
    let fx1 = fx1.max(fx0);
    for (fy, dst) in patch.chunks_exact_mut(row_len).enumerate() {
        if !(fy0..fy1).contains(&fy) {
            dst.fill(pad);
            continue;
        }
        // In range: tap_range keeps 0 <= y0 + fy * dilation < h, and likewise for x.
        let iy = (y0 + (fy * w.dilation.h) as isize) as usize;
        let row = (b * s.h + iy) * s.w;
        // (Only where there is padding: `fill` calls `memset` even for none.)
        if fx0 > 0 {
            dst[..fx0 * ic].fill(pad);
        }
        if fx1 < w.filter.w {
            dst[fx1 * ic..].fill(pad);
        }
        if w.dilation.w == 1 {
            // The valid taps of a filter row are contiguous in both tensors.
            let ix = (x0 + fx0 as isize) as usize;
            let len = (fx1 - fx0) * ic;
            convert(&input[(row + ix) * ic..][..len], &mut dst[fx0 * ic..][..len]);
        } else {
            for fx in fx0..fx1 {
                let ix = (x0 + (fx * w.dilation.w) as isize) as usize;
                convert(&input[(row + ix) * ic..][..ic], &mut dst[fx * ic..][..ic]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dsp, portable};
    use crate::shape::{Hw, Padding};
    use crate::testutil::{
        Geometry, Lcg, Operands, Quant, all_kernels, geometry, output_pixels, reference_conv, taps, window,
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

    /// A convolution on random operands, every implementation against the reference.
    fn check_all(p: &ConvParams, seed: u64, with_bias: bool) -> Result<(), TestCaseError> {
        let (f, oc) = (p.window.filter, p.output_channels);
        let ops =
            Operands::random(seed, p.input.elements().unwrap(), oc * f.h * f.w * p.input.c, oc, 100_000);
        let output_len = p.output_shape().elements().unwrap();
        let mut kernels = all_kernels!(conv2d, conv);
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        kernels.push(crate::arch::vnni::conv2d);
        ops.assert_bit_exact(p, with_bias, output_len, &kernels, reference_conv)
    }

    #[test]
    fn pointwise_convolutions() {
        // 1x1, stride 1: patches straight from the input, 8-aligned (72 channels) or not (21),
        // short (quads) or long (rows), more than one run of output channels (70).
        for (c, oc, seed) in [(72, 70, 1), (21, 9, 2), (8, 16, 3), (3, 5, 4)] {
            let w = window(Hw::new(3, 7), Hw::square(1), 1, 1, Padding::Valid).unwrap();
            let p = Geometry::new(Nhwc::new(2, 3, 7, c), w).conv(oc);
            check_all(&ConvParams { input_zero_point: -128, output_zero_point: -3, ..p }, seed, true)
                .unwrap();
        }
    }

    #[test]
    fn pointwise_pixels_in_pairs_and_an_odd_last_one() {
        // The DSP loop's two-pixels-per-pass path: 15 pixels (the last alone), channels in
        // fours (16, 8) and not (24 inputs, 6 outputs: the last two alone).
        for (c, oc, seed) in [(16, 8, 5), (8, 16, 6), (24, 6, 7)] {
            let w = window(Hw::new(3, 5), Hw::square(1), 1, 1, Padding::Valid).unwrap();
            let p = Geometry::new(Nhwc::new(1, 3, 5, c), w).conv(oc);
            check_all(&ConvParams { input_zero_point: 17, output_zero_point: 4, ..p }, seed, true).unwrap();
        }
    }

    #[test]
    fn channels_in_fours_read_taps_in_place() {
        // The VNNI path's padded-image reading: SAME and VALID, strides, dilation, batches,
        // an input zero point, runs of 8, 16, 24 and 40 channels.
        let cases =
            [(Hw::new(9, 7), 3, 1, 1, Padding::Same, 16, 1), (Hw::new(8, 8), 3, 2, 1, Padding::Same, 24, 2)];
        let more =
            [(Hw::new(10, 6), 3, 1, 2, Padding::Same, 8, 2), (Hw::new(7, 9), 5, 2, 1, Padding::Valid, 40, 1)];
        for (i, (hw, f, stride, dilation, padding, oc, n)) in cases.into_iter().chain(more).enumerate() {
            let w = window(hw, Hw::square(f), stride, dilation, padding).unwrap();
            let p = Geometry::new(Nhwc::new(n, hw.h, hw.w, 4 * (i + 1)), w).conv(oc);
            check_all(
                &ConvParams { input_zero_point: 5 - 20 * i as i32, output_zero_point: 7, ..p },
                i as u64,
                true,
            )
            .unwrap();
        }
    }

    #[test]
    fn other_channel_counts_pad_to_quads_or_gather() {
        // The VNNI path pads three, five, six and seven channels to whole quads in the padded
        // image (and lays the filter out to match); one and two channels gather patches.
        for (i, c) in [3, 5, 6, 7, 1, 2].into_iter().enumerate() {
            let w = window(Hw::new(9, 8), Hw::square(3), 1 + i % 2, 1, Padding::Same).unwrap();
            let p = Geometry::new(Nhwc::new(1 + i % 2, 9, 8, c), w).conv(16 + 8 * (i % 3));
            check_all(
                &ConvParams { input_zero_point: 9 - 25 * i as i32, output_zero_point: -4, ..p },
                40 + i as u64,
                true,
            )
            .unwrap();
        }
    }

    #[test]
    fn large_images_go_in_bands() {
        // Padded images over the VNNI path's 32 KiB buffer (96x96x3 as four bytes a pixel,
        // 100x60x8): bands of output rows, each with the input rows it reads, SAME and VALID,
        // strides 1 and 2, dilation, two images.
        let cases = [
            (Nhwc::new(1, 96, 96, 3), 3, 2, 1, Padding::Same, 8),
            (Nhwc::new(2, 100, 60, 8), 3, 1, 2, Padding::Same, 8),
            (Nhwc::new(1, 70, 90, 4), 5, 2, 1, Padding::Valid, 16),
        ];
        for (i, (s, f, stride, dilation, padding, oc)) in cases.into_iter().enumerate() {
            let w = window(Hw::new(s.h, s.w), Hw::square(f), stride, dilation, padding).unwrap();
            let p = Geometry::new(s, w).conv(oc);
            check_all(
                &ConvParams { input_zero_point: -7 + 30 * i as i32, output_zero_point: 3, ..p },
                90 + i as u64,
                true,
            )
            .unwrap();
        }
    }

    #[test]
    fn long_patches_take_the_per_pixel_loop() {
        // 3x3x240 = 2160 values per patch: four do not fit the blocked loop's buffer.
        let w = window(Hw::new(4, 3), Hw::square(3), 1, 1, Padding::Same).unwrap();
        let p = Geometry::new(Nhwc::new(1, 4, 3, 240), w).conv(5);
        const { assert!(PIXELS * 9 * 240 > PATCH_CAPACITY) };
        check_all(&ConvParams { input_zero_point: -128, ..p }, 7, true).unwrap();
    }

    prop_compose! {
        /// Wider than `conv_case`: whole SIMD steps, odd tails, more than one run of channels.
        fn wide_conv_case()(g in geometry(40), oc in 1usize..70) -> Option<(ConvParams, u64)> {
            let (g, seed) = g?;
            Some((g.conv(oc), seed))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn wide_convolutions_are_bit_exact(case in wide_conv_case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            check_all(&p, seed, with_bias)?;
        }
    }

    proptest! {
        #[test]
        fn dsp_portable_and_reference_are_bit_exact(case in conv_case(), with_bias: bool) {
            let Some((p, seed)) = case else { return Ok(()) };
            check_all(&p, seed, with_bias)?;
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
