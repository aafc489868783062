//! int8 max and average pooling: TFLite's `reference_integer_ops::MaxPool` / `AveragePool`.
//! Input and output share scale and zero point; padding taps are left out (not averaged in).

use crate::error::{DspError, check_len};
use crate::quant::ActivationRange;
use crate::shape::{Hw, Nhwc, Window, origin, tap_range};

/// Shape of a pooling layer: input `[n, h, w, c]`, output `[n, window.output.h,
/// window.output.w, c]`. A dilated window reads taps `dilation` pixels apart (ONNX's
/// pooling has dilations; TFLite's has none).
#[derive(Debug, Clone, Copy)]
pub struct PoolParams {
    /// Input shape.
    pub input: Nhwc,
    /// Window size, stride, padding and output size.
    pub window: Window,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl PoolParams {
    /// Output shape.
    pub fn output_shape(&self) -> Nhwc {
        Nhwc::new(self.input.n, self.window.output.h, self.window.output.w, self.input.c)
    }
}

fn check(p: &PoolParams, input: &[i8], output: &[i8]) -> Result<(), DspError> {
    p.activation.check()?;
    p.window.check()?;
    check_len("input", p.input.elements()?, input.len())?;
    check_len("output", p.output_shape().elements()?, output.len())
}

/// Channels pooled per pass: their running values on the stack (256 bytes).
const CHANNEL_RUN: usize = 64;

/// One output pixel's window in the input: its in-bounds rows `rows` (filter rows) and, per
/// row, `taps` in-bounds taps `tap_step` values apart (`c` times the dilation) from
/// [`Pixel::first`]; `count` taps in all.
struct Pixel {
    rows: core::ops::Range<usize>,
    taps: usize,
    tap_step: usize,
    count: i32,
    /// Input offset of row `fy`'s first tap, less `fy * row_step` (modulo 2^N: it may lie
    /// before the input where the window starts above it).
    base: usize,
    row_step: usize,
}

impl Pixel {
    /// Input offset of the first in-bounds tap of filter row `fy` (channel 0).
    fn first(&self, fy: usize) -> usize {
        self.base.wrapping_add(fy * self.row_step)
    }
}

/// Calls `f(out, window)` for every output pixel of `p` (`out` its output values), for
/// checked arguments with channels. A window with no tap in bounds is `EmptyWindow`.
fn each_pixel(
    p: &PoolParams,
    output: &mut [i8],
    mut f: impl FnMut(&mut [i8], &Pixel),
) -> Result<(), DspError> {
    let (s, w) = (p.input, p.window);
    let mut pixels = output.chunks_exact_mut(s.c);
    for b in 0..s.n {
        for oy in 0..w.output.h {
            let y0 = origin(oy, w.stride.h, w.pad.h);
            let (fy0, fy1) = tap_range(y0, w.dilation.h, w.filter.h, s.h);
            for ox in 0..w.output.w {
                let x0 = origin(ox, w.stride.w, w.pad.w);
                let (fx0, fx1) = tap_range(x0, w.dilation.w, w.filter.w, s.w);
                let Some(out) = pixels.next() else { return Ok(()) };
                let count = fy1.saturating_sub(fy0) * fx1.saturating_sub(fx0);
                if count == 0 {
                    return Err(DspError::EmptyWindow);
                }
                // In range: tap_range keeps every tap inside the image (y0 + fy0 * dh >= 0
                // and x0 + fx0 * dw >= 0), so the offset of row fy0 is not negative.
                let (y, x) = (y0 + (fy0 * w.dilation.h) as isize, x0 + (fx0 * w.dilation.w) as isize);
                let row0 = (b * s.h + y as usize) * s.w + x as usize;
                let row_step = w.dilation.h * s.w * s.c;
                let window = Pixel {
                    rows: fy0..fy1,
                    taps: fx1 - fx0,
                    tap_step: w.dilation.w * s.c,
                    count: count as i32,
                    base: (row0 * s.c).wrapping_sub(fy0 * row_step),
                    row_step,
                };
                f(out, &window);
            }
        }
    }
    Ok(())
}

/// Pools every output value: for each output pixel and run of up to [`CHANNEL_RUN`]
/// channels, `acc = start`, then `acc = step(acc, x)` for each in-bounds tap `x` (row by
/// row, channels innermost, so each tap's values are read in one pass), and the output is
/// `finish(acc, taps)` clamped to the activation range. A window with no tap in bounds is
/// `EmptyWindow`.
fn pool(
    p: &PoolParams,
    input: &[i8],
    output: &mut [i8],
    start: i32,
    step: impl Fn(i32, i8) -> i32,
    finish: impl Fn(i32, i32) -> i32,
) -> Result<(), DspError> {
    check(p, input, output)?;
    let c_n = p.input.c;
    if c_n == 0 {
        return Ok(());
    }
    let mut acc = [0i32; CHANNEL_RUN];
    each_pixel(p, output, |pixel, window| {
        for (c0, out) in (0..c_n).step_by(CHANNEL_RUN).zip(pixel.chunks_mut(CHANNEL_RUN)) {
            let acc = &mut acc[..out.len()];
            acc.fill(start);
            for fy in window.rows.clone() {
                let taps = &input[window.first(fy) + c0..][..(window.taps - 1) * window.tap_step + out.len()];
                for tap in taps.chunks(window.tap_step) {
                    for (a, &x) in acc.iter_mut().zip(tap) {
                        *a = step(*a, x);
                    }
                }
            }
            for (o, &a) in out.iter_mut().zip(acc.iter()) {
                *o = p.activation.clamp_i8(finish(a, window.count));
            }
        }
    })
}

/// Max pooling. A window entirely in the padding gives `EmptyWindow`.
#[inline(never)]
pub fn max_pool(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), DspError> {
    pool(params, input, output, i32::MIN, |m, x| m.max(i32::from(x)), |m, _| m)
}

/// Average pooling, rounding to nearest with ties away from zero, as TFLite's int8 kernel
/// (`(acc ± count / 2) / count`). A window entirely in the padding gives `EmptyWindow`.
#[inline(never)]
pub fn avg_pool(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), DspError> {
    // On Arm with the DSP extension, four channels per word where the sums fit 16 bits; on
    // x86-64 16 or 64 channels a vector. Both read a row's taps side by side: undilated.
    let undilated = params.window.dilation == Hw::square(1);
    if cfg!(hostrt_arm_dsp) && undilated && words_fit(params) {
        check(params, input, output)?;
        return avg_words(params, input, output);
    }
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if undilated && crate::has_vnni() {
        check(params, input, output)?;
        let (c, act) = (params.input.c, params.activation);
        if c == 0 {
            return Ok(());
        }
        return each_pixel(params, output, |pixel, w| {
            let rows = w.rows.clone().map(|fy| w.first(fy));
            // SAFETY: `has_vnni` said the CPU has AVX-512 F, BW and VL.
            unsafe {
                crate::avx512::average_pixel(input, rows, (w.taps, c, w.count), (act.min, act.max), pixel)
            }
        });
    }
    pool(params, input, output, 0, |sum, x| sum.wrapping_add(i32::from(x)), average)
}

/// TFLite's rounded mean: `(sum ± count / 2) / count`, ties away from zero.
#[inline(always)]
fn average(sum: i32, count: i32) -> i32 {
    if sum > 0 { (sum + count / 2) / count } else { (sum - count / 2) / count }
}

/// Whether [`avg_words`] takes `p`: channels in fours, and at most 256 taps a window, so that
/// a sum of int8 values fits an int16 lane (`256 * -128 = -32768`, `256 * 127 = 32512`).
fn words_fit(p: &PoolParams) -> bool {
    p.input.c.is_multiple_of(4) && p.window.filter.h * p.window.filter.w <= 256
}

/// Channels per pass of [`avg_words`]: their running sums on the stack (512 bytes).
const WORD_RUN: usize = 256;

/// Average pooling four channels to a word, for checked arguments that [`words_fit`]: per
/// output pixel and run of up to [`WORD_RUN`] channels, each in-bounds tap's values (read in
/// one pass, channels innermost) are summed four at a time into two words of int16 pairs by
/// `SXTAB16` (channels 0 and 2, then 1 and 3): about two instructions per value, where the
/// generic loop takes about seven.
fn avg_words(p: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), DspError> {
    use crate::arch::dsp::intrinsics::{sxtab16, sxtab16_ror8};
    let c_n = p.input.c;
    if c_n == 0 {
        return Ok(());
    }
    let mut sums = [[0u32; 2]; WORD_RUN / 4];
    each_pixel(p, output, |pixel, window| {
        for (c0, out) in (0..c_n).step_by(WORD_RUN).zip(pixel.chunks_mut(WORD_RUN)) {
            let n = out.len();
            let (outs, _) = out.as_chunks_mut::<4>();
            let sums = &mut sums[..outs.len()];
            sums.fill([0; 2]);
            for fy in window.rows.clone() {
                let first = window.first(fy) + c0;
                for t in 0..window.taps {
                    let (values, _) = input[first + t * c_n..][..n].as_chunks::<4>();
                    for (sum, v) in sums.iter_mut().zip(values) {
                        let v = crate::arch::loops::word(v);
                        *sum = [sxtab16(sum[0], v), sxtab16_ror8(sum[1], v)];
                    }
                }
            }
            for (o, &[even, odd]) in outs.iter_mut().zip(sums.iter()) {
                let lane = |word: u32, high: bool| i32::from((word >> (16 * u32::from(high))) as u16 as i16);
                let four = [lane(even, false), lane(odd, false), lane(even, true), lane(odd, true)];
                *o = four.map(|sum| p.activation.clamp_i8(average(sum, window.count)));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Padding;
    use crate::testutil::{Lcg, output_pixels, padding, taps, window};
    use proptest::prelude::*;
    use std::vec;

    /// A single-batch `h x w x c` input pooled by square `f x f` windows.
    fn params(
        h: usize,
        w: usize,
        c: usize,
        f: usize,
        stride: usize,
        padding: Padding,
    ) -> Result<PoolParams, DspError> {
        let window = window(Hw::new(h, w), Hw::square(f), stride, 1, padding)?;
        Ok(PoolParams { input: Nhwc::new(1, h, w, c), window, activation: ActivationRange::INT8 })
    }

    #[test]
    fn known_answers() {
        let p = params(2, 2, 1, 2, 2, Padding::Valid).unwrap();
        let mut out = [0i8; 1];
        max_pool(&p, &[1, -5, 7, 3], &mut out).unwrap();
        assert_eq!(out, [7]);
        // Ties away from zero: 6/4 = 1.5 -> 2, -6/4 -> -2; 5/4 -> 1.
        avg_pool(&p, &[1, 2, 1, 2], &mut out).unwrap();
        assert_eq!(out, [2]);
        avg_pool(&p, &[-1, -2, -1, -2], &mut out).unwrap();
        assert_eq!(out, [-2]);
        avg_pool(&p, &[1, 1, 1, 2], &mut out).unwrap();
        assert_eq!(out, [1]);
        // SAME 3x3 window over 2x2: corner windows average only the in-bounds taps.
        let p = params(2, 2, 1, 3, 1, Padding::Same).unwrap();
        let mut out = [0i8; 4];
        avg_pool(&p, &[10, 20, 30, 41], &mut out).unwrap();
        assert_eq!(out, [25; 4]); // 101 / 4 = 25.25
        let relu = PoolParams { activation: ActivationRange::new(0, 127).unwrap(), ..p };
        max_pool(&relu, &[-10, -20, -30, -41], &mut out).unwrap();
        assert_eq!(out, [0; 4]);
    }

    #[test]
    fn word_sums_reach_the_int16_range() {
        // 16x16 windows of -128 (the lowest sum, -32768) and of 127.
        for v in [-128i8, 127] {
            let p = params(16, 16, 4, 16, 1, Padding::Valid).unwrap();
            assert!(words_fit(&p));
            let mut out = [0i8; 4];
            avg_words(&p, &[v; 16 * 16 * 4], &mut out).unwrap();
            assert_eq!(out, [v; 4]);
        }
        // 17x17 taps do not fit; the generic loop takes them.
        assert!(!words_fit(&params(17, 17, 4, 17, 1, Padding::Valid).unwrap()));
    }

    #[test]
    fn errors() {
        let p = params(2, 2, 1, 2, 2, Padding::Valid).unwrap();
        assert!(max_pool(&p, &[0; 3], &mut [0; 1]).is_err());
        assert!(avg_pool(&p, &[0; 4], &mut [0; 2]).is_err());
        let mut far = p;
        far.window.pad = Hw::square(5);
        assert_eq!(max_pool(&far, &[0; 4], &mut [0; 1]), Err(DspError::EmptyWindow));
        assert_eq!(avg_pool(&far, &[0; 4], &mut [0; 1]), Err(DspError::EmptyWindow));
    }

    proptest! {
        #[test]
        fn avg_words_is_the_generic_average(
            h in 1usize..9, w in 1usize..9, c in prop_oneof![Just(4usize), Just(8), Just(64), Just(260)],
            f in 1usize..5, stride in 1usize..3, same: bool, lo in -128i32..=0, seed: u64,
        ) {
            let Ok(p) = params(h, w, c, f, stride, padding(same)) else { return Ok(()) };
            let p = PoolParams { activation: ActivationRange::new(lo, 127 + lo / 2).unwrap(), ..p };
            prop_assert!(words_fit(&p));
            let input = Lcg(seed).bytes(h * w * c);
            let mut generic = vec![0i8; p.output_shape().elements().unwrap()];
            let mut words = generic.clone();
            pool(&p, &input, &mut generic, 0, |sum, x| sum.wrapping_add(i32::from(x)), average).unwrap();
            avg_words(&p, &input, &mut words).unwrap();
            prop_assert_eq!(words, generic);
        }

        /// On a CPU with AVX-512 BW (`has_vnni`), `avg_pool` takes its own loop: the same
        /// results as the generic one, channels across its 16- and 64-lane edges, every clamp.
        #[test]
        fn avg_pool_is_the_generic_average(
            h in 1usize..12, w in 1usize..12, c in prop_oneof![1usize..4, 15usize..18, 62usize..67, Just(130usize)],
            f in 1usize..7, stride in 1usize..3, same: bool, lo in -128i32..=0, seed: u64,
        ) {
            let Ok(p) = params(h, w, c, f, stride, padding(same)) else { return Ok(()) };
            let p = PoolParams { activation: ActivationRange::new(lo, 127 + lo / 2).unwrap(), ..p };
            let input = Lcg(seed).bytes(h * w * c);
            let mut generic = vec![0i8; p.output_shape().elements().unwrap()];
            let mut own = generic.clone();
            pool(&p, &input, &mut generic, 0, |sum, x| sum.wrapping_add(i32::from(x)), average).unwrap();
            avg_pool(&p, &input, &mut own).unwrap();
            prop_assert_eq!(own, generic);
        }

        #[test]
        fn avg_pool_approximates_float(h in 1usize..9, w in 1usize..9, c in prop_oneof![1usize..4, 62usize..70], f in 1usize..4,
                                       stride in 1usize..3, dilation in 1usize..3, same: bool, seed: u64) {
            // Dilated windows too: ONNX's pooling has them.
            let Ok(window) = window(Hw::new(h, w), Hw::square(f), stride, dilation, padding(same)) else { return Ok(()) };
            let p = PoolParams { input: Nhwc::new(1, h, w, c), window, activation: ActivationRange::INT8 };
            let input = Lcg(seed).bytes(h * w * c);
            let mut out = vec![0i8; p.output_shape().elements().unwrap()];
            let mut max = out.clone();
            // A dilated window can straddle a small image: its taps all in the padding.
            let empty = output_pixels(p.input, p.window).any(|px| taps(p.input, p.window, px).next().is_none());
            if empty {
                prop_assert_eq!(avg_pool(&p, &input, &mut out), Err(DspError::EmptyWindow));
                prop_assert_eq!(max_pool(&p, &input, &mut max), Err(DspError::EmptyWindow));
                return Ok(());
            }
            avg_pool(&p, &input, &mut out).unwrap();
            max_pool(&p, &input, &mut max).unwrap();
            let mut i = 0;
            for pixel in output_pixels(p.input, p.window) { for ch in 0..c {
                let (mut sum, mut n, mut hi) = (0.0f64, 0.0f64, i8::MIN);
                for (_, _, at) in taps(p.input, p.window, pixel) {
                    let x = input[at + ch];
                    sum += f64::from(x);
                    n += 1.0;
                    hi = hi.max(x);
                }
                // Exact rounding of the mean, ties away from zero, so within 1/2 LSB.
                prop_assert!((f64::from(out[i]) - sum / n).abs() <= 0.5);
                prop_assert_eq!(max[i], hi);
                i += 1;
            }}
        }
    }
}
