//! The int8 depthwise convolution on AVX2 without VNNI (depth multiplier 1, channels in
//! eights), reading the input tensor in place: no staged rows.
//!
//! - Each channel's bias takes `offset · Σ w` once per call (`Σ (x + offset)·w = Σ x·w +
//!   offset·Σ w`), so the loop multiplies the int8 inputs as they are, and a filter tap that
//!   falls in the padding reads the input zero point (whose `x + offset` is 0) from a buffer
//!   of it: the same sums as TFLite's, which skips those taps.
//! - Sixteen channels of a pixel at a time: each pair of taps is two 16-byte loads
//!   sign-extended to int16 (`VPMOVSXBW`), interleaved per 128-bit half, and one `VPMADDWD`
//!   per half with the pair's filter values, laid out once per call in that order
//!   ([`Laid`]). Products of two int8 and their pairwise sums fit int32 exactly.
//! - Eight channels with a column stride of 1: two neighbouring pixels are 16 contiguous
//!   values of every tap, so they go as one vector, the filter repeated in both halves.
//! - Pixels whose window lies inside the image read each tap at a fixed distance from the
//!   first; the others read a pointer per tap, to the input or to the zero point buffer.
//! - Sums wrap modulo 2^32 as every other path's, then go through TFLite's output stage in
//!   the registers they were summed in ([`Scale8`], the lanes' own multipliers and shifts laid
//!   out with the filters), the offset added in int32, and saturating packs to int8 before
//!   the clamp: the results are bit-exact with the other loops. (Storing the sums and running
//!   the stage over them instead: a 48x48x8 layer 23 us against 20, DS-CNN's 25x5x32 6.5
//!   against 5.2.)
//!
//! Before, the SSE2 loops' structure staged each output row's input rows as int16 with the
//! offset added (three times per input row for a 3x3 filter): a third of a 48x48x8 layer's
//! time.

use core::arch::x86_64::*;

use super::avx2::{Narrow, Scale8, load_i32x8, store_i8x16};
use crate::depthwise::DepthwiseParams;
use crate::filled::Filled;
use crate::quant::PerChannel;
use crate::shape::origin;

/// Most filter taps this loop takes (larger filters take the SSE2 loop).
const MAX_TAPS: usize = 32;
/// Channels per run: their filters, biases and output stages laid out once (some 24 KiB of
/// stack).
const RUN: usize = 256;
/// Channels per step.
const BLOCK: usize = 16;

/// Whether this loop takes `p` (checked parameters).
pub(super) fn fits(p: &DepthwiseParams) -> bool {
    let taps = p.window.filter.h * p.window.filter.w;
    p.depth_multiplier == 1 && (1..=MAX_TAPS).contains(&taps) && p.input.c > 0 && p.input.c.is_multiple_of(8)
}

/// A run's filters and biases, laid out for the loop: per block of 16 channels, per pair of
/// taps `2k, 2k + 1`, two vectors of int16: `lo` holds channels 0..4 then 8..12, `hi`
/// channels 4..8 then 12..16, each channel's two filter values side by side (an odd last
/// tap's partner is 0): the order in which `VPUNPCKLWD` and `VPUNPCKHWD` interleave two taps'
/// inputs. Its biases with `offset · Σ w` in the same two halves. A last block of 8 channels
/// (`n` is 8 mod 16) holds them in both 128-bit halves, so that with 8 channels in all two
/// pixels can go as one vector.
struct Laid {
    /// `[lo, hi]` per pair, per block.
    pairs: Filled<[__m256i; 2], { RUN / BLOCK * MAX_TAPS / 2 }>,
    /// `[lo, hi]` biases per block.
    bias: Filled<[__m256i; 2], { RUN / BLOCK }>,
    /// `[lo, hi]` output stages per block.
    stage: Filled<[Scale8; 2], { RUN / BLOCK }>,
}

impl Laid {
    /// Lays out channels `c0..c0 + n` (`n` at most [`RUN`], a multiple of 8) of `filter`
    /// (`taps` rows of `c` channels), `bias` (with `offset` times each channel's filter sum,
    /// modulo 2^32) and `quant`'s output stages, with the loop's own vector operations.
    #[target_feature(enable = "avx2")]
    fn fill(
        &mut self,
        (filter, bias, quant): (&[i8], Option<&[i32]>, &PerChannel<'_>),
        offset: i32,
        (c, c0, n): (usize, usize, usize),
        taps: usize,
    ) {
        let pairs = taps.div_ceil(2);
        // Tap `t`'s 16 (or a last block's 8, twice) values of block `j`, as int16; 0 for the
        // partner of an odd last tap.
        let values = |t: usize, j: usize| {
            if t >= taps {
                return _mm256_setzero_si256();
            }
            let row = &filter[t * c + c0 + BLOCK * j..];
            if BLOCK * j + BLOCK <= n {
                load_i8x16(&row.as_chunks::<16>().0[0])
            } else {
                let (eight, _) = row.as_chunks::<8>();
                _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(load_i8x8(&eight[0])))
            }
        };
        self.pairs.set((0..n.div_ceil(BLOCK) * pairs).map(|jk| {
            let (j, k) = (jk / pairs, jk % pairs);
            let (a, b) = (values(2 * k, j), values(2 * k + 1, j));
            [_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b)]
        }));
        let (ones, factor) = (_mm256_set1_epi16(1), _mm256_set1_epi32(offset));
        // Each block's filter sums, in the vectors' order: from the laid-out pairs.
        let laid = self.pairs.get();
        self.bias.set((0..n.div_ceil(BLOCK)).map(|j| {
            let mut sums = [_mm256_setzero_si256(); 2];
            for pair in &laid[j * pairs..][..pairs] {
                for (s, &v) in sums.iter_mut().zip(pair) {
                    *s = _mm256_add_epi32(*s, _mm256_madd_epi16(v, ones));
                }
            }
            let b = |at: usize| {
                bias.map_or(_mm256_setzero_si256(), |b| load_i32x8(&b[c0 + at..].as_chunks::<8>().0[0]))
            };
            let [lo, hi] = in_lanes(b, j, n);
            let fold = |b: __m256i, s: __m256i| _mm256_add_epi32(b, _mm256_mullo_epi32(factor, s));
            [fold(lo, sums[0]), fold(hi, sums[1])]
        }));
        let load = |v: &[i32], at: usize| load_i32x8(&v[c0 + at..].as_chunks::<8>().0[0]);
        self.stage.set((0..n.div_ceil(BLOCK)).map(|j| {
            let [m_lo, m_hi] = in_lanes(|at| load(quant.multiplier, at), j, n);
            let [s_lo, s_hi] = in_lanes(|at| load(quant.shift, at), j, n);
            [Scale8::new(m_lo, s_lo), Scale8::new(m_hi, s_hi)]
        }));
    }
}

/// Channels' values of block `j` in the lanes of its `[lo, hi]` vectors, from `load(at)`,
/// eight channels' values from the run's channel `at`: `lo` holds channels 0..4 then 8..12,
/// `hi` 4..8 then 12..16; a last block of 8 channels its 8 in both halves.
#[target_feature(enable = "avx2")]
#[inline]
fn in_lanes(load: impl Fn(usize) -> __m256i, j: usize, n: usize) -> [__m256i; 2] {
    if BLOCK * j + BLOCK <= n {
        let (a, b) = (load(BLOCK * j), load(BLOCK * j + 8));
        [_mm256_permute2x128_si256::<0x20>(a, b), _mm256_permute2x128_si256::<0x31>(a, b)]
    } else {
        let a = load(BLOCK * j);
        [_mm256_permute2x128_si256::<0x00>(a, a), _mm256_permute2x128_si256::<0x11>(a, a)]
    }
}

/// The convolution, for arguments the caller has checked and parameters [`fits`] takes, on a
/// CPU with AVX2.
#[target_feature(enable = "avx2")]
pub(super) fn depthwise(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    // The output stage's fix for a multiplier of `i32::MIN` only where one has it.
    if quant.multiplier.contains(&i32::MIN) {
        run::<true>(p, input, (filter, bias, quant), output);
    } else {
        run::<false>(p, input, (filter, bias, quant), output);
    }
}

/// [`depthwise`], `FIX` set where a multiplier is `i32::MIN`.
#[target_feature(enable = "avx2")]
fn run<const FIX: bool>(
    p: &DepthwiseParams,
    input: &[i8],
    (filter, bias, quant): (&[i8], Option<&[i32]>, PerChannel<'_>),
    output: &mut [i8],
) {
    let (s, w, c) = (p.input, p.window, p.input.c);
    let (f, taps) = (w.filter, w.filter.h * w.filter.w);
    let (oh, ow) = (w.output.h, w.output.w);
    assert!(fits(p) && input.len() >= s.n * s.h * s.w * c);
    assert!(output.len() >= s.n * oh * ow * c);
    let padding = [p.input_zero_point as i8; RUN];
    // Each tap's distance from the window's first input, in values; an odd count's partner
    // of the last tap reads where the last does (its filter values are 0).
    let mut tap_at = [0usize; MAX_TAPS + 1];
    for (t, at) in tap_at[..taps].iter_mut().enumerate() {
        *at = ((t / f.w) * w.dilation.h * s.w + (t % f.w) * w.dilation.w) * c;
    }
    tap_at[taps] = tap_at[taps - 1];
    let inside = |o: isize, filter: usize, dilation: usize, size: usize| {
        o >= 0 && o as usize + (filter - 1) * dilation < size
    };
    let mut laid = Laid { pairs: Filled::new(), bias: Filled::new(), stage: Filled::new() };
    let narrow = Narrow::new(p.output_zero_point, p.activation);
    let x = input.as_ptr();
    for c0 in (0..c).step_by(RUN) {
        let n = (c - c0).min(RUN);
        laid.fill((filter, bias, &quant), -p.input_zero_point, (c, c0, n), taps);
        let loops = Loops::<FIX> { pairs: taps.div_ceil(2), laid: &laid, n, narrow };
        // Two pixels per vector: eight channels, neighbouring columns eight values apart.
        let twos = n == 8 && c == 8 && w.stride.w == 1;
        for b in 0..s.n {
            for oy in 0..oh {
                let y0 = origin(oy, w.stride.h, w.pad.h);
                let rows_in = inside(y0, f.h, w.dilation.h, s.h);
                let row_out = &mut output[(b * oh + oy) * ow * c..][..ow * c];
                let mut ox = 0;
                while ox < ow {
                    let x0 = origin(ox, w.stride.w, w.pad.w);
                    let out = &mut row_out[ox * c + c0..];
                    if rows_in && inside(x0, f.w, w.dilation.w, s.w) {
                        let first = ((b * s.h + y0 as usize) * s.w + x0 as usize) * c + c0;
                        // SAFETY: the window lies inside the image (rows and columns just
                        // checked), so every tap's `n` values from channel `c0` lie within
                        // `input` (of `n * h * w * c` values, asserted).
                        let base = unsafe { x.add(first) };
                        // SAFETY: as `base`, for tap `t <= taps` (`tap_at[taps]` repeats the
                        // last tap's distance).
                        let tap = |t: usize| unsafe { base.add(tap_at[t]) };
                        if twos && ox + 1 < ow && inside(x0 + 1, f.w, w.dilation.w, s.w) {
                            // The next pixel's window lies inside too: its values of each tap
                            // are the 8 after this pixel's, and its outputs the 8 after.
                            // SAFETY: as `tap`, 16 values from each tap of both pixels.
                            unsafe { loops.block(tap, 0, &mut out.as_chunks_mut::<16>().0[0]) };
                            ox += 2;
                            continue;
                        }
                        // SAFETY: `tap` gives `n` readable values from each tap.
                        unsafe { loops.pixel(tap, &mut out[..n]) };
                    } else {
                        let mut at = [padding.as_ptr(); MAX_TAPS + 1];
                        for (fy, row) in at[..taps].chunks_exact_mut(f.w).enumerate() {
                            let iy = y0 + (fy * w.dilation.h) as isize;
                            if !(0..s.h as isize).contains(&iy) {
                                continue;
                            }
                            for (fx, at) in row.iter_mut().enumerate() {
                                let ix = x0 + (fx * w.dilation.w) as isize;
                                if (0..s.w as isize).contains(&ix) {
                                    let first = ((b * s.h + iy as usize) * s.w + ix as usize) * c + c0;
                                    // SAFETY: pixel (b, iy, ix) is in the image, so its `n`
                                    // values from channel `c0` lie within `input`.
                                    *at = unsafe { x.add(first) };
                                }
                            }
                        }
                        at[taps] = at[taps - 1];
                        // SAFETY: each pointer reads `n` values of a pixel in the image or of
                        // `padding` (`RUN >= n` values).
                        unsafe { loops.pixel(|t| at[t], &mut out[..n]) };
                    }
                    ox += 1;
                }
            }
        }
    }
}

/// One run of channels, its output stage with the fix for `i32::MIN` where `FIX` is set.
struct Loops<'a, const FIX: bool> {
    /// Pairs of taps.
    pairs: usize,
    /// The run's filters, biases and output stages.
    laid: &'a Laid,
    /// Channels in the run.
    n: usize,
    /// The stage after the rescaling.
    narrow: Narrow,
}

impl<const FIX: bool> Loops<'_, FIX> {
    /// One pixel's `n` outputs, tap `t`'s values read from `tap(t)` for `t <= taps`.
    ///
    /// # Safety
    /// Each `tap(t)` must be readable for `n` values; the CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn pixel(&self, tap: impl Fn(usize) -> *const i8, out: &mut [i8]) {
        let (blocks, _) = out.as_chunks_mut::<BLOCK>();
        let whole = self.n / BLOCK;
        for (j, out) in blocks[..whole].iter_mut().enumerate() {
            // SAFETY: block `j` reads values `16 j..16 j + 16 <= n` of each tap.
            unsafe { self.block(|t| tap(t).add(BLOCK * j), j, out) };
        }
        if !self.n.is_multiple_of(BLOCK) {
            let (last, _) = out[BLOCK * whole..].as_chunks_mut::<8>();
            // SAFETY: the last eight values of each tap, `16 whole + 8 = n`.
            unsafe { self.half(|t| tap(t).add(BLOCK * whole), whole, &mut last[0]) };
        }
    }

    /// Block `j`'s 16 outputs from 16 values at each `tap(t)`: the sums' halves `lo` and `hi`
    /// through the output stage in their lanes' order, which the first pack puts back in
    /// channel order.
    ///
    /// # Safety
    /// Each `tap(t)`, `t <= taps`, must be readable for 16 values; the CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn block(&self, tap: impl Fn(usize) -> *const i8, j: usize, out: &mut [i8; 16]) {
        let filters = &self.laid.pairs.get()[j * self.pairs..][..self.pairs];
        let [mut lo, mut hi] = self.laid.bias.get()[j];
        for (k, [w_lo, w_hi]) in filters.iter().enumerate() {
            // SAFETY: taps `2k + 1 <= taps` are readable for 16 values (the caller).
            let (a, b) = unsafe { (load16(tap(2 * k)), load16(tap(2 * k + 1))) };
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), *w_lo));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), *w_hi));
        }
        let [s_lo, s_hi] = &self.laid.stage.get()[j];
        // Channels 0..16 as int16, in order: the pack undoes the lanes' order.
        let offset = |s: &Scale8, v: __m256i| self.narrow.offset(s.apply::<FIX>(v));
        let v = _mm256_packs_epi32(offset(s_lo, lo), offset(s_hi, hi));
        store_i8x16(self.narrow.sixteen(v), out);
    }

    /// The first 8 outputs of block `j` (128-bit vectors) from 8 values at each `tap(t)`.
    ///
    /// # Safety
    /// Each `tap(t)`, `t <= taps`, must be readable for 8 values; the CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn half(&self, tap: impl Fn(usize) -> *const i8, j: usize, out: &mut [i8; 8]) {
        let filters = &self.laid.pairs.get()[j * self.pairs..][..self.pairs];
        let [b_lo, b_hi] = self.laid.bias.get()[j];
        let (mut lo, mut hi) = (_mm256_castsi256_si128(b_lo), _mm256_castsi256_si128(b_hi));
        for (k, [w_lo, w_hi]) in filters.iter().enumerate() {
            // SAFETY: taps `2k + 1 <= taps` are readable for 8 values (the caller);
            // `loadl_epi64` reads 8 bytes at any alignment.
            let (a, b) = unsafe {
                (
                    _mm_cvtepi8_epi16(_mm_loadl_epi64(tap(2 * k).cast())),
                    _mm_cvtepi8_epi16(_mm_loadl_epi64(tap(2 * k + 1).cast())),
                )
            };
            let (w_lo, w_hi) = (_mm256_castsi256_si128(*w_lo), _mm256_castsi256_si128(*w_hi));
            lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), w_lo));
            hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), w_hi));
        }
        let [s_lo, s_hi] = &self.laid.stage.get()[j];
        // (The stage's upper lanes are those of the same channels: their results are dropped.)
        let offset = |s: &Scale8, v: __m128i| {
            _mm256_castsi256_si128(self.narrow.offset(s.apply::<FIX>(_mm256_castsi128_si256(v))))
        };
        *out = self.narrow.eight(offset(s_lo, lo), offset(s_hi, hi));
    }
}

/// 16 int8 at `p`, sign-extended to int16.
///
/// # Safety
/// `p` must be readable for 16 bytes; the CPU must have AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load16(p: *const i8) -> __m256i {
    // SAFETY: the caller's; `loadu` has no alignment requirement.
    _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(p.cast()) })
}

/// The 16 int8 of `v`, sign-extended to int16.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i8x16(v: &[i8; 16]) -> __m256i {
    // SAFETY: `v` is a valid reference to 16 readable bytes.
    unsafe { load16(v.as_ptr()) }
}

/// The 8 int8 of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i8x8(v: &[i8; 8]) -> __m128i {
    // SAFETY: `v` is a valid reference to 8 readable bytes, what `loadl_epi64` reads (any
    // alignment).
    unsafe { _mm_loadl_epi64(v.as_ptr().cast()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::ActivationRange;
    use crate::shape::{Hw, Nhwc, Padding, Window};
    use crate::testutil::{Lcg, reference_depthwise};
    use std::vec;

    /// Layers this loop takes against the reference, on shapes the random tests reach rarely:
    /// eight channels two pixels at a time (odd widths leave one alone; a stride of 2 takes
    /// them one by one), a last half block (24, 40), more than one run of channels (264),
    /// even and odd tap counts, dilation, windows mostly in the padding, two batches; with
    /// every multiplier sign and size (`i32::MIN` among them), shifts at both ends, biases
    /// near int32's ends (a sum of i32::MIN meets the multiplier i32::MIN) and both extreme input
    /// zero points.
    #[test]
    fn shapes_and_stages_match_the_reference() {
        if !crate::has_avx2() {
            return std::eprintln!("skipped: this CPU has no AVX2");
        }
        let mut rng = Lcg(3);
        let cases = [
            (Nhwc::new(2, 5, 7, 8), Hw::square(3), 1, 1, Padding::Same),
            (Nhwc::new(1, 6, 9, 8), Hw::square(3), 2, 1, Padding::Same),
            (Nhwc::new(1, 4, 6, 8), Hw::new(2, 2), 1, 1, Padding::Valid),
            (Nhwc::new(1, 5, 5, 16), Hw::new(1, 3), 1, 2, Padding::Same),
            (Nhwc::new(1, 3, 4, 24), Hw::square(3), 1, 1, Padding::Same),
            (Nhwc::new(1, 7, 3, 40), Hw::square(5), 2, 1, Padding::Same),
            (Nhwc::new(1, 3, 3, 264), Hw::square(3), 1, 1, Padding::Same),
            (Nhwc::new(1, 2, 2, 8), Hw::square(5), 1, 1, Padding::Same),
        ];
        for (s, f, stride, dilation, padding) in cases {
            let window =
                Window::new(Hw::new(s.h, s.w), f, Hw::square(stride), Hw::square(dilation), padding).unwrap();
            for izp in [-128, 127, 3] {
                let p = DepthwiseParams {
                    input: s,
                    depth_multiplier: 1,
                    window,
                    input_zero_point: izp,
                    output_zero_point: -5,
                    activation: ActivationRange::new(-120, 110).unwrap(),
                };
                assert!(fits(&p));
                let c = s.c;
                let input = rng.bytes(s.elements().unwrap());
                let mut filter = rng.bytes(f.h * f.w * c);
                let mut bias: vec::Vec<i32> =
                    (0..c).map(|j| [i32::MAX - 9, i32::MIN + 9, -77, 1000, 5][j % 5]).collect();
                // Channel 0 sums to i32::MIN, its multiplier's: the one product that overflows.
                filter.iter_mut().step_by(c).for_each(|v| *v = 0);
                bias[0] = i32::MIN;
                let mults = [i32::MIN, i32::MAX, -(1 << 30), 1 << 30, 1, -1, 0x5555_5555, 0x4000_1234];
                let multiplier: vec::Vec<i32> = (0..c).map(|j| mults[j % mults.len()]).collect();
                let shift: vec::Vec<i32> = (0..c).map(|j| [-31, 30, 0, -7, 2, -1][j % 6]).collect();
                let quant = PerChannel { multiplier: &multiplier, shift: &shift };
                for bias in [Some(&bias[..]), None] {
                    let want = reference_depthwise(&p, &input, &filter, bias, quant);
                    let mut got = vec![0i8; want.len()];
                    // SAFETY: the CPU has AVX2 (checked above); `fits` takes `p` (asserted)
                    // and the lengths are the shape's.
                    unsafe { depthwise(&p, &input, &filter, bias, quant, &mut got) };
                    assert_eq!(got, want, "{s:?}, filter {f:?}, stride {stride}, input zero point {izp}");
                }
            }
        }
    }
}
