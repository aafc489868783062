//! Inner loops on x86-64's SSE2, part of the x86-64 baseline (so no runtime detection, and no
//! `std`), for the kernels' blocked loops (`InnerLoops::BLOCKED`).
//!
//! Inputs get the input offset added in int16 (`x + offset` is in `-255..=255`), filters are
//! sign-extended to int16, and pairs are multiplied and summed into int32 by `PMADDWD`, whose
//! products (at most 255 * 128 in magnitude) and their sum fit int32 exactly; the int32 sums
//! wrap as the portable loops' do, so the results are bit-exact in any order. (`PMADDUBSW`,
//! which saturates its int16 sums, is not used.)
//!
//! - Convolution (`sse2::conv_block`): four pixels' im2col patches by four filters at a
//!   time, the filters laid out once per call by `pack_filters`. Short patches in quads (each
//!   `PMADDWD` four values of a pixel, repeated by `PSHUFD`, times four of each of two
//!   channels: no reduction at the end), long ones as rows (eight values of a pixel times
//!   eight of a channel: no shuffle in the loop, a transposing reduction at the end).
//! - Depthwise (`sse2::depthwise_rows`): eight channels of a pixel at a time from input rows
//!   staged in int16, two taps per `PMADDWD` (their inputs interleaved, times their filters
//!   interleaved likewise by `pack_depthwise`).
//! - Fully connected (`sse2::dot_n`): 16 inputs of one row against up to four filters per
//!   step, each input widened once for all of them.
//! - The output stage (`sse2::requantize_rows`) four channels at a time: TFLite's rounding
//!   doubling high multiply from the 64-bit products of `PMULUDQ`, corrected for signs; its
//!   rounding right shift as `PSRAD` where the four channels share their shift (two `PSRAD`
//!   blended where they have two), else as a multiplication too (SSE2 shifts all lanes by
//!   one count).
//!
//! Where the CPU has AVX2, `X86` takes the wider loops of `super::avx2` instead (their own
//! filter layouts, the same results).
//!
//! Every function of `sse2` is compiled with the `sse2` target feature, which this module
//! exists only under (`cfg(target_feature = "sse2")`, set on every x86-64 target but those
//! that turn the vector unit off, such as `x86_64-unknown-none`).

use super::portable::Portable;
use super::{DepthwiseRows, InnerLoops, OutputStage};
use crate::quant::ActivationRange;

/// Marker for the SSE2 inner loops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct X86;

impl InnerLoops for X86 {
    const BLOCKED: bool = true;

    #[inline(always)]
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32 {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::dot_n(input, [filter], input_offset, [acc]) }[0];
        }
        // SAFETY: `sse2` functions need only the SSE2 instructions, which the target has: this
        // module is compiled only under `cfg(target_feature = "sse2")`.
        let [acc] = unsafe { sse2::dot_n(input, [filter], input_offset, [acc]) };
        acc
    }

    #[inline(always)]
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2] {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::dot_n(input, filters, input_offset, acc) };
        }
        // SAFETY: needs only SSE2, which the target has (this module's cfg).
        unsafe { sse2::dot_n(input, filters, input_offset, acc) }
    }

    #[inline(always)]
    fn dot4(input: &[i8], filters: [&[i8]; 4], input_offset: i32, acc: [i32; 4]) -> [i32; 4] {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::dot_n(input, filters, input_offset, acc) };
        }
        // SAFETY: needs only SSE2, which the target has (this module's cfg).
        unsafe { sse2::dot_n(input, filters, input_offset, acc) }
    }

    #[inline(always)]
    fn dot_run(input: &[i8], filters: &[i8], input_offset: i32, bias: &[i32], acc: &mut [i32]) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::dot_run(input, filters, input_offset, bias, acc) };
        }
        super::dot_run_by_4::<Self>(input, filters, input_offset, bias, acc);
    }

    #[inline(always)]
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]) {
        // Only the per-pixel depthwise loop (depth multipliers above 1) uses it.
        Portable::mac4(input, filter, input_offset, acc)
    }

    #[inline(always)]
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8 {
        Portable::requantize(acc, multiplier, shift, output_offset, act)
    }

    #[inline(always)]
    fn pack_filters(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
        if super::avx2::has_avx2() {
            // The layout of the AVX2 loop, which `conv_block` takes on the same condition.
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::pack_filters(filter, per_filter, stride, n, packed) };
        }
        pack_sse2(filter, per_filter, stride, n, packed);
    }

    #[inline(always)]
    fn conv_block(patches: &[i16], stride: usize, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`), and `pack_filters` laid the filters out
            // for this loop on the same (cached) condition.
            return unsafe { super::avx2::conv_block(patches, stride, packed, bias, acc) };
        }
        // SAFETY: needs only SSE2, which the target has (this module's cfg).
        unsafe { sse2::conv_block(patches, stride, packed, bias, acc) }
    }

    #[inline(always)]
    fn takes_pairs() -> bool {
        // `pack_filters` above on the same condition.
        super::avx2::has_avx2()
    }

    #[inline(always)]
    fn has_block_out() -> bool {
        super::avx2::has_avx2()
    }

    #[inline(always)]
    fn conv_block_out(
        block: (&[i16], usize, &[i16], &[i32]),
        stage: &OutputStage<'_>,
        acc: &mut [i32],
        out: (&mut [i8], usize, usize),
    ) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`), and `pack_filters` laid the filters out
            // for this loop on the same (cached) condition.
            return unsafe { super::avx2::conv_block_out(block, stage, out) };
        }
        super::block_out_by_sums::<Self>(block, stage, acc, out);
    }

    #[inline(always)]
    fn pack_direct(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::pack_filters(filter, per_filter, stride, n, packed) };
        }
        Portable::pack_direct(filter, per_filter, stride, n, packed);
    }

    #[inline(always)]
    fn has_direct() -> bool {
        super::avx2::has_avx2()
    }

    #[inline(always)]
    fn conv_direct(
        x: &[i16],
        geometry: ([usize; 4], usize, usize, usize),
        packed: &[i16],
        bias: &[i32],
        acc: &mut [i32],
    ) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`), and `pack_direct` laid the filters out
            // for its loops on the same condition.
            return unsafe { super::avx2::conv_direct(x, geometry, packed, bias, acc) };
        }
        Portable::conv_direct(x, geometry, packed, bias, acc)
    }

    #[inline(always)]
    fn pack_depthwise(filter: &[i8], filter_stride: usize, taps: usize, n: usize, packed: &mut [i16]) {
        // The layout of `sse2::depthwise_rows`: per block of eight channels, per pair of taps
        // (2k, 2k + 1), two vectors: [f_2k[c], f_2k+1[c]] for channels c = 0..4 of the block,
        // then 4..8 (a missing odd tap and channels past n are 0).
        let pairs = taps.div_ceil(2);
        let packed = &mut packed[..n.div_ceil(8) * pairs * 16];
        for (block, values) in packed.chunks_exact_mut(16 * pairs).enumerate() {
            for (k, values) in values.chunks_exact_mut(16).enumerate() {
                for (lane, v) in values.iter_mut().enumerate() {
                    let (t, j) = (2 * k + lane % 2, 8 * block + lane / 2);
                    *v = if t < taps && j < n { i16::from(filter[t * filter_stride + j]) } else { 0 };
                }
            }
        }
    }

    #[inline(always)]
    fn depthwise_rows(rows: &DepthwiseRows<'_>, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::depthwise_rows(rows, packed, bias, acc) };
        }
        // SAFETY: needs only SSE2, which the target has (this module's cfg).
        unsafe { sse2::depthwise_rows(rows, packed, bias, acc) }
    }

    #[inline(always)]
    fn requantize_rows(acc: &[i32], stage: &OutputStage<'_>, output: &mut [i8], output_stride: usize) {
        if super::avx2::has_avx2() {
            // SAFETY: the CPU has AVX2 (`has_avx2`).
            return unsafe { super::avx2::requantize_rows(acc, stage, output, output_stride) };
        }
        // SAFETY: needs only SSE2, which the target has (this module's cfg).
        unsafe { sse2::requantize_rows(acc, stage, output, output_stride) }
    }
}

/// [`InnerLoops::pack_filters`] for the SSE2 `conv_block`: plain rows for long patches, quads
/// for short ones.
fn pack_sse2(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
    if !sse2::quads(stride) {
        // Plain rows (the provided layout) for the long patches' kernel.
        Portable::pack_filters(filter, per_filter, stride, n, packed);
        return;
    }
    // Short patches: per group of four channels c0..c3, per step of eight values k..k + 8,
    // four vectors: c0's k..k + 4 then c1's, c0's k + 4..k + 8 then c1's, and the same two
    // for c2 and c3.
    let packed = &mut packed[..n.next_multiple_of(4) * stride];
    for (g, group) in packed.chunks_exact_mut(4 * stride).enumerate() {
        for (step, values) in group.chunks_exact_mut(32).enumerate() {
            for (v, quad) in values.chunks_exact_mut(4).enumerate() {
                // Quad v: channel pair v / 4, half (v / 2) % 2, channel v % 2 of the pair.
                let c = 4 * g + 2 * (v / 4) + v % 2;
                let k0 = 8 * step + 4 * ((v / 2) % 2);
                for (t, w) in quad.iter_mut().enumerate() {
                    let k = k0 + t;
                    *w = if c < n && k < per_filter { i16::from(filter[c * per_filter + k]) } else { 0 };
                }
            }
        }
    }
}

super::per_channel_kernels!(
    X86,
    "[`crate::fully_connected()`] with the SSE2 inner loops.",
    "[`crate::conv2d()`] with the SSE2 inner loops.",
    "[`crate::depthwise_conv2d()`] with the SSE2 inner loops."
);

/// The depthwise pieces the SSE2 and AVX2 loops share (the SSE2 loop's filter layout).
impl DepthwiseRows<'_> {
    /// Where each of the filter's taps reads, from a pixel's first staged value, for `n`
    /// channels; a missing odd tap (at `taps`) reads the first, times a zero filter value.
    pub(super) fn tap_offsets(&self, n: usize) -> [usize; super::DEPTHWISE_MAX_TAPS + 1] {
        let mut at = [0usize; super::DEPTHWISE_MAX_TAPS + 1];
        for (t, at) in at.iter_mut().enumerate().take(self.filter.h * self.filter.w) {
            *at = ((t / self.filter.w) * self.columns + (t % self.filter.w) * self.dilation) * n;
        }
        at
    }

    /// [`InnerLoops::depthwise_rows`] for channels `from..n` (`n = bias.len()`), one at a time,
    /// their filter values from the SSE2 loop's packing: the vector loops' last `n % 8`
    /// channels. `at` is [`DepthwiseRows::tap_offsets`].
    pub(super) fn last_channels(
        &self,
        packed: &[i16],
        bias: &[i32],
        acc: &mut [i32],
        at: &[usize],
        from: usize,
    ) {
        let (n, taps) = (bias.len(), self.filter.h * self.filter.w);
        if from >= n {
            return;
        }
        let pairs = taps.div_ceil(2);
        let w = |t: usize, j: usize| i32::from(packed[(j / 8 * pairs + t / 2) * 16 + 2 * (j % 8) + t % 2]);
        for (i, acc) in acc.chunks_exact_mut(n).enumerate() {
            for (j, a) in acc.iter_mut().enumerate().skip(from) {
                *a = (0..taps).fold(bias[j], |a, t| {
                    a.wrapping_add(i32::from(self.values[i * self.stride * n + at[t] + j]) * w(t, j))
                });
            }
        }
    }
}

/// The SSE2 code. Safe functions with the `sse2` target feature: they call each other and the
/// register-only intrinsics freely; memory is read and written through the few loads and
/// stores below, each over a reference of exactly the vector's size (`avx2` uses them too).
pub(super) mod sse2 {
    use super::super::{DepthwiseRows, OutputStage};
    use core::arch::x86_64::*;

    /// 16 bytes from an array of them (any alignment).
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(in crate::arch) fn load_i8x16(v: &[i8; 16]) -> __m128i {
        // SAFETY: `v` is a valid reference to 16 readable bytes; `loadu` has no alignment
        // requirement.
        unsafe { _mm_loadu_si128(v.as_ptr().cast()) }
    }

    /// Eight int16 (any alignment).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn load_i16x8(v: &[i16; 8]) -> __m128i {
        // SAFETY: `v` is a valid reference to 16 readable bytes; `loadu` has no alignment
        // requirement.
        unsafe { _mm_loadu_si128(v.as_ptr().cast()) }
    }

    /// Four int32 (any alignment).
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(in crate::arch) fn load_i32x4(v: &[i32; 4]) -> __m128i {
        // SAFETY: `v` is a valid reference to 16 readable bytes; `loadu` has no alignment
        // requirement.
        unsafe { _mm_loadu_si128(v.as_ptr().cast()) }
    }

    /// The four int32 lanes of `v`.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(in crate::arch) fn store_i32x4(v: __m128i, out: &mut [i32; 4]) {
        // SAFETY: `out` is a valid, exclusive reference to 16 writable bytes; `storeu` has no
        // alignment requirement.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
    }

    /// The low and high eight int8 lanes of `v`, sign-extended to int16: unpacked with their
    /// sign bytes (`PCMPGTB` against 0). Unpacking `v` with itself and shifting right by 8,
    /// the other SSE2 idiom, lets LLVM take any register for the bytes the shift drops, which
    /// it did, making the loops wait on an accumulator (a false dependency).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn widen(v: __m128i) -> (__m128i, __m128i) {
        let sign = _mm_cmpgt_epi8(_mm_setzero_si128(), v);
        (_mm_unpacklo_epi8(v, sign), _mm_unpackhi_epi8(v, sign))
    }

    /// The sum of the four int32 lanes, modulo 2^32.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn hsum(v: __m128i) -> i32 {
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v));
        _mm_cvtsi128_si32(v)
    }

    /// `[Σa, Σb, Σc, Σd]`: the lane sums of four vectors as one (a transpose and three adds).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn reduce4(a: __m128i, b: __m128i, c: __m128i, d: __m128i) -> __m128i {
        // [a0+a2, b0+b2, a1+a3, b1+b3] and likewise for c, d.
        let ab = _mm_add_epi32(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b));
        let cd = _mm_add_epi32(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d));
        _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd))
    }

    /// `acc[f] + Σ filters[f][i] * (input[i] + offset)`, 16 inputs per step, each input
    /// widened once for all `N` filters.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn dot_n<const N: usize>(
        input: &[i8],
        filters: [&[i8]; N],
        offset: i32,
        acc: [i32; N],
    ) -> [i32; N] {
        let n = input.len();
        let (x16, x_tail) = input.as_chunks::<16>();
        let w16 = filters.map(|f| f[..n].as_chunks::<16>().0);
        // int8 zero points keep the offset in -127..=128.
        let off = _mm_set1_epi16(offset as i16);
        let mut sums = [_mm_setzero_si128(); N];
        for (i, x) in x16.iter().enumerate() {
            let (lo, hi) = widen(load_i8x16(x));
            let (lo, hi) = (_mm_add_epi16(lo, off), _mm_add_epi16(hi, off));
            for (sum, w) in sums.iter_mut().zip(&w16) {
                let (w_lo, w_hi) = widen(load_i8x16(&w[i]));
                let p = _mm_add_epi32(_mm_madd_epi16(lo, w_lo), _mm_madd_epi16(hi, w_hi));
                *sum = _mm_add_epi32(*sum, p);
            }
        }
        let done = n - x_tail.len();
        let mut out = acc;
        for ((o, sum), f) in out.iter_mut().zip(sums).zip(filters) {
            *o = x_tail.iter().zip(&f[done..n]).fold(o.wrapping_add(hsum(sum)), |a, (&x, &w)| {
                a.wrapping_add(i32::from(w) * (i32::from(x) + offset))
            });
        }
        out
    }

    /// [`conv_block`]'s sums of four pixels' patches (`x8`) and a group of four filters
    /// packed in quads (`w8`), as the four channels of each pixel.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn block_quads(x8: &[&[[i16; 8]]; 4], w8: &[[i16; 8]]) -> [__m128i; 4] {
        let (w8, _) = w8.as_chunks::<4>();
        // Per pixel: lanes [c0, c0, c1, c1] and [c2, c2, c3, c3].
        let mut v = [[_mm_setzero_si128(); 2]; 4];
        for (s, w) in w8.iter().enumerate() {
            let w = [load_i16x8(&w[0]), load_i16x8(&w[1]), load_i16x8(&w[2]), load_i16x8(&w[3])];
            for (v, x) in v.iter_mut().zip(x8) {
                let x = load_i16x8(&x[s]);
                let (lo, hi) = (_mm_shuffle_epi32::<0x44>(x), _mm_shuffle_epi32::<0xEE>(x));
                let c01 = _mm_add_epi32(_mm_madd_epi16(lo, w[0]), _mm_madd_epi16(hi, w[1]));
                let c23 = _mm_add_epi32(_mm_madd_epi16(lo, w[2]), _mm_madd_epi16(hi, w[3]));
                v[0] = _mm_add_epi32(v[0], c01);
                v[1] = _mm_add_epi32(v[1], c23);
            }
        }
        v.map(|[a, b]| {
            let (a, b) = (_mm_castsi128_ps(a), _mm_castsi128_ps(b));
            _mm_add_epi32(
                _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(a, b)),
                _mm_castps_si128(_mm_shuffle_ps::<0b11_01_11_01>(a, b)),
            )
        })
    }

    /// [`conv_block`]'s sums of four pixels' patches (`x8`) and a group of four filter rows
    /// (`w8`, one after the other), as the four channels of each pixel.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn block_rows(x8: &[&[[i16; 8]]; 4], w8: &[[i16; 8]]) -> [__m128i; 4] {
        let steps = x8[0].len();
        // Per channel pair: [p0c, p0d, p1c, p1d] and [p2c, p2d, p3c, p3d].
        let mut sums = [[_mm_setzero_si128(); 2]; 2];
        for (pair, sums) in sums.iter_mut().enumerate() {
            let rows = [&w8[2 * pair * steps..][..steps], &w8[(2 * pair + 1) * steps..][..steps]];
            let mut v = [[_mm_setzero_si128(); 2]; 4];
            for i in 0..steps {
                let w = [load_i16x8(&rows[0][i]), load_i16x8(&rows[1][i])];
                for (v, x) in v.iter_mut().zip(x8) {
                    let x = load_i16x8(&x[i]);
                    v[0] = _mm_add_epi32(v[0], _mm_madd_epi16(x, w[0]));
                    v[1] = _mm_add_epi32(v[1], _mm_madd_epi16(x, w[1]));
                }
            }
            *sums =
                [reduce4(v[0][0], v[0][1], v[1][0], v[1][1]), reduce4(v[2][0], v[2][1], v[3][0], v[3][1])];
        }
        [
            _mm_unpacklo_epi64(sums[0][0], sums[1][0]),
            _mm_unpackhi_epi64(sums[0][0], sums[1][0]),
            _mm_unpacklo_epi64(sums[0][1], sums[1][1]),
            _mm_unpackhi_epi64(sums[0][1], sums[1][1]),
        ]
    }

    /// Longest patches (int16 values) [`conv_block`] multiplies in quads: shorter ones spend
    /// relatively more on the end of a block, where quads take 3 instructions per pixel and
    /// the rows' kernel 12 (its reduction); longer ones go faster on the rows' kernel, which
    /// needs no `PSHUFD` in its loop.
    const QUADS_UP_TO: usize = 32;

    /// Whether [`conv_block`] takes patches of `stride` values in quads, and its filters as
    /// `pack_filters` lays them out for that.
    pub(super) fn quads(stride: usize) -> bool {
        stride <= QUADS_UP_TO
    }

    /// See [`super::InnerLoops::conv_block`]: four pixels by four channels, the sums coming
    /// out as the four channels of a pixel, in place. Exact modulo 2^32 for any int16
    /// (`PMADDWD`'s only overflow, all four operands -2^15, gives 2^31 modulo 2^32).
    ///
    /// Short patches ([`quads`]): each `PMADDWD` takes four values of one pixel, twice over
    /// (`PSHUFD`), times four of each of two channels (packed so), into lanes [c0, c0, c1, c1],
    /// which a last pairwise add makes the pixel's channels. Long ones: filter rows as they
    /// are, eight values of a pixel times eight of a channel per `PMADDWD`, each filter step
    /// loaded once for the four pixels, two channels at a time; a transposing reduction at the
    /// end.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn conv_block(patches: &[i16], stride: usize, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        let n = bias.len();
        if n == 0 {
            return;
        }
        let rows = acc.len() / n;
        let x8: [&[[i16; 8]]; 4] =
            core::array::from_fn(|p| patches[p * stride..][..stride].as_chunks::<8>().0);
        let quads = quads(stride);
        for (g, group) in packed[..n.next_multiple_of(4) * stride].chunks_exact(4 * stride).enumerate() {
            let (w8, _) = group.as_chunks::<8>();
            let v = if quads { block_quads(&x8, w8) } else { block_rows(&x8, w8) };
            let c = 4 * g;
            if c + 4 <= n {
                let b = load_i32x4(&bias[c..].as_chunks::<4>().0[0]);
                for (p, v) in v.iter().enumerate().take(rows) {
                    store_i32x4(_mm_add_epi32(*v, b), &mut acc[p * n + c..].as_chunks_mut::<4>().0[0]);
                }
            } else {
                // The run's last 1..=3 channels.
                for (p, &v) in v.iter().enumerate().take(rows) {
                    let mut sums = [0i32; 4];
                    store_i32x4(v, &mut sums);
                    for ((a, &s), &b) in acc[p * n + c..p * n + n].iter_mut().zip(&sums).zip(&bias[c..]) {
                        *a = s.wrapping_add(b);
                    }
                }
            }
        }
    }

    /// See [`super::InnerLoops::depthwise_rows`]: eight channels at a time, two taps per
    /// `PMADDWD` (the staged inputs of taps `2k` and `2k + 1` interleaved, times their filters
    /// interleaved likewise by `pack_depthwise`); the last `n % 8` channels one at a time.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn depthwise_rows(g: &DepthwiseRows<'_>, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        let (n, taps) = (bias.len(), g.filter.h * g.filter.w);
        if n == 0 || taps == 0 {
            return;
        }
        let pairs = taps.div_ceil(2);
        let at = g.tap_offsets(n);
        let (w8, _) = packed[..n.div_ceil(8) * pairs * 16].as_chunks::<8>();
        let done = n / 8 * 8;
        for c in (0..done).step_by(8) {
            let w = &w8[c / 8 * 2 * pairs..][..2 * pairs];
            let (b, _) = bias[c..].as_chunks::<4>();
            let (b_lo, b_hi) = (load_i32x4(&b[0]), load_i32x4(&b[1]));
            for (i, acc) in acc.chunks_exact_mut(n).enumerate() {
                let values = &g.values[i * g.stride * n + c..];
                let x = |t: usize| load_i16x8(&values[at[t]..].as_chunks::<8>().0[0]);
                let (mut lo, mut hi) = (b_lo, b_hi);
                for (k, w) in w.as_chunks::<2>().0.iter().enumerate() {
                    let (a, b) = (x(2 * k), x(2 * k + 1));
                    lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), load_i16x8(&w[0])));
                    hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), load_i16x8(&w[1])));
                }
                let (halves, _) = acc[c..][..8].as_chunks_mut::<4>();
                store_i32x4(lo, &mut halves[0]);
                store_i32x4(hi, &mut halves[1]);
            }
        }
        g.last_channels(packed, bias, acc, &at, done);
    }

    /// The output stage of four channels, precomputed from their multipliers and shifts.
    #[derive(Clone, Copy)]
    struct Stage4 {
        /// Multipliers, all nonnegative (lanes 1 and 3 also in 0 and 2, for `PMULUDQ`).
        m: __m128i,
        m_odd: __m128i,
        /// `2^max(shift, 0)` (and lanes 1 and 3 in 0 and 2): the left shift as a multiplication.
        left: __m128i,
        left_odd: __m128i,
        /// `2^(31 - max(-shift, 0))` (and lanes 1 and 3 in 0 and 2): the floor of the right
        /// shift as a multiplication then a 31-bit logical shift.
        right: __m128i,
        right_odd: __m128i,
        /// Shift counts for `PSLLD`/`PSRAD`: lane 0's left and right ones, and the right one of
        /// the lanes `second` selects (all ones there).
        left_count: __m128i,
        right_count: __m128i,
        second_count: __m128i,
        second: __m128i,
        /// `2^right - 1` and half of it (`RoundingDivideByPOT`'s mask and threshold).
        mask: __m128i,
        half: __m128i,
    }

    /// Lanes 1 and 3 of `v` moved to lanes 0 and 2, for `PMULUDQ`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn odd(v: __m128i) -> __m128i {
        _mm_srli_epi64::<32>(v)
    }

    /// The low 32 bits of lanes 0 and 2 of `even`, and of `odd`'s lanes 0 and 2 as lanes 1 and 3.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn interleave(even: __m128i, odd: __m128i) -> __m128i {
        let low = _mm_set_epi32(0, -1, 0, -1);
        _mm_or_si128(_mm_and_si128(even, low), _mm_slli_epi64::<32>(odd))
    }

    /// `v` as four `u32`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn u32x4(v: [u32; 4]) -> __m128i {
        _mm_set_epi32(v[3] as i32, v[2] as i32, v[1] as i32, v[0] as i32)
    }

    /// How a [`Stage4`]'s lanes shift, the const parameter of [`Stage4::apply`] (one loop per
    /// kind; in per-channel models about half the groups of four channels share a right shift,
    /// and most others have two): one left and one right shift for all lanes (`PSLLD`,
    /// `PSRAD`) ...
    const UNIFORM: u8 = 0;
    /// ... no left shift, two right shifts (two `PSRAD`, blended) ...
    const TWO_RIGHT: u8 = 1;
    /// ... no left shift, right shifts per lane (multiplications) ...
    const RIGHT_PER_LANE: u8 = 2;
    /// ... or both per lane (multipliers of 1 and more, which have left shifts, are rare).
    const PER_LANE: u8 = 3;

    impl Stage4 {
        /// The stage of channels with multipliers `m` (nonnegative) and shifts `s`
        /// (`-31..=30`), and its kind.
        #[target_feature(enable = "sse2")]
        #[inline]
        fn new(m: [i32; 4], s: [i32; 4]) -> (Stage4, u8) {
            let left = s.map(|s| s.max(0) as u32);
            let right = s.map(|s| (-s).max(0) as u32);
            let m = _mm_set_epi32(m[3], m[2], m[1], m[0]);
            let (left_pow, right_pow) = (u32x4(left.map(|l| 1 << l)), u32x4(right.map(|r| 1 << (31 - r))));
            let mask = right.map(|r| (1u32 << r) - 1);
            // The right shift of the lanes that differ from lane 0's, if they all agree.
            let other = right.iter().copied().find(|&r| r != right[0]);
            let two = other.is_some_and(|o| right.iter().all(|&r| r == right[0] || r == o));
            let kind = if left.iter().any(|&l| l != left[0]) || (left[0] != 0 && other.is_some()) {
                PER_LANE
            } else if other.is_none() {
                UNIFORM
            } else if two {
                TWO_RIGHT
            } else {
                RIGHT_PER_LANE
            };
            let second = other.unwrap_or(right[0]);
            let stage = Stage4 {
                m,
                m_odd: odd(m),
                left: left_pow,
                left_odd: odd(left_pow),
                right: right_pow,
                right_odd: odd(right_pow),
                left_count: _mm_cvtsi32_si128(left[0] as i32),
                right_count: _mm_cvtsi32_si128(right[0] as i32),
                second_count: _mm_cvtsi32_si128(second as i32),
                second: u32x4(right.map(|r| if r == right[0] { 0 } else { u32::MAX })),
                mask: u32x4(mask),
                half: u32x4(mask.map(|m| m >> 1)),
            };
            (stage, kind)
        }

        /// TFLite's `MultiplyByQuantizedMultiplier` of four accumulators, the shifts taken as
        /// `KIND` says.
        #[target_feature(enable = "sse2")]
        #[inline]
        fn apply<const KIND: u8>(&self, x: __m128i) -> __m128i {
            // The left shift, wrapping: the low 32 bits of x * 2^left.
            let x = match KIND {
                UNIFORM => _mm_sll_epi32(x, self.left_count),
                PER_LANE => interleave(_mm_mul_epu32(x, self.left), _mm_mul_epu32(odd(x), self.left_odd)),
                _ => x,
            };
            // SaturatingRoundingDoublingHighMul(x, m) = floor((x * m + 2^30) / 2^31) for every
            // x and m >= 0 (its nudge 1 - 2^30 with truncation, for negative products, rounds
            // the same way), which fits int32 (the saturating case needs m = i32::MIN). The
            // signed 64-bit product is PMULUDQ's unsigned one less m * 2^32 where x < 0; the
            // 31-bit logical shift then gives the right low 32 bits.
            let x_neg = _mm_srai_epi32::<31>(x);
            let fix = _mm_and_si128(x_neg, self.m);
            let nudge = _mm_set1_epi64x(1 << 30);
            let even = _mm_sub_epi64(_mm_mul_epu32(x, self.m), _mm_slli_epi64::<32>(fix));
            let even = _mm_srli_epi64::<31>(_mm_add_epi64(even, nudge));
            let high = _mm_set_epi32(-1, 0, -1, 0);
            let odd_p = _mm_sub_epi64(_mm_mul_epu32(odd(x), self.m_odd), _mm_and_si128(fix, high));
            let odd_p = _mm_srli_epi64::<31>(_mm_add_epi64(odd_p, nudge));
            let r = interleave(even, odd_p);
            // RoundingDivideByPOT(r, right) = floor(r / 2^right) + (remainder > threshold).
            let r_neg = _mm_srai_epi32::<31>(r);
            let floor = match KIND {
                UNIFORM => _mm_sra_epi32(r, self.right_count),
                TWO_RIGHT => {
                    let (a, b) = (_mm_sra_epi32(r, self.right_count), _mm_sra_epi32(r, self.second_count));
                    _mm_or_si128(_mm_andnot_si128(self.second, a), _mm_and_si128(self.second, b))
                }
                _ => {
                    // floor(r / 2^k) = !floor(!r / 2^k) for negative r, and !r >= 0; for
                    // u < 2^31, floor(u / 2^k) = (u * 2^(31 - k)) >> 31, which is < 2^31.
                    let u = _mm_xor_si128(r, r_neg);
                    let even = _mm_srli_epi64::<31>(_mm_mul_epu32(u, self.right));
                    let odd_q = _mm_srli_epi64::<31>(_mm_mul_epu32(odd(u), self.right_odd));
                    _mm_xor_si128(interleave(even, odd_q), r_neg)
                }
            };
            let remainder = _mm_and_si128(r, self.mask);
            let threshold = _mm_sub_epi32(self.half, r_neg);
            _mm_sub_epi32(floor, _mm_cmpgt_epi32(remainder, threshold))
        }
    }

    /// The rows of one four-channel column of [`requantize_rows`]: `acc` and `output` start
    /// at the column, rows `width` and `stride` apart.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn column<const KIND: u8>(
        st: &Stage4,
        acc: &[i32],
        width: usize,
        (offset, min, max): (__m128i, __m128i, __m128i),
        output: &mut [i8],
        stride: usize,
    ) {
        let rows = acc.len().div_ceil(width);
        for r in 0..rows {
            let (a, _) = acc[r * width..].as_chunks::<4>();
            let v = _mm_add_epi32(st.apply::<KIND>(load_i32x4(&a[0])), offset);
            let v = _mm_packs_epi32(v, v);
            let v = _mm_min_epi16(_mm_max_epi16(v, min), max);
            let bytes = _mm_cvtsi128_si32(_mm_packs_epi16(v, v)).to_le_bytes();
            output[r * stride..][..4].copy_from_slice(&bytes.map(|b| b as i8));
        }
    }

    /// See [`super::InnerLoops::requantize_rows`]: four channels at a time, their stage
    /// precomputed once for all rows; any run with a negative multiplier (which TFLite's
    /// converter never writes) and the last `width % 4` channels go through the scalar stage.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn requantize_rows(acc: &[i32], stage: &OutputStage<'_>, output: &mut [i8], stride: usize) {
        let width = stage.multiplier.len();
        if width == 0 {
            return;
        }
        let rows = acc.len() / width;
        let acc = &acc[..rows * width];
        // The activation range lies within int8, so clamping the int16-saturated value is
        // clamping the value.
        let out_stage = (
            _mm_set1_epi32(stage.offset),
            _mm_set1_epi16(stage.act.min as i16),
            _mm_set1_epi16(stage.act.max as i16),
        );
        let (m4, _) = stage.multiplier.as_chunks::<4>();
        let (s4, _) = stage.shift.as_chunks::<4>();
        let mut scalar_from = m4.len() * 4;
        for (j, (&m, &s)) in m4.iter().zip(s4).enumerate() {
            let c = 4 * j;
            if m.iter().any(|&m| m < 0) {
                scalar_from = c;
                break;
            }
            let (st, kind) = Stage4::new(m, s);
            let (acc, output) = (&acc[c..], &mut output[c..]);
            match kind {
                UNIFORM => column::<UNIFORM>(&st, acc, width, out_stage, output, stride),
                TWO_RIGHT => column::<TWO_RIGHT>(&st, acc, width, out_stage, output, stride),
                RIGHT_PER_LANE => column::<RIGHT_PER_LANE>(&st, acc, width, out_stage, output, stride),
                _ => column::<PER_LANE>(&st, acc, width, out_stage, output, stride),
            }
        }
        for c in scalar_from..width {
            let (m, s) = (stage.multiplier[c], stage.shift[c]);
            for r in 0..rows {
                output[r * stride + c] = super::X86::requantize_one(acc[r * width + c], m, s, stage);
            }
        }
    }
}

impl X86 {
    /// The scalar output stage of one value.
    #[inline]
    fn requantize_one(acc: i32, multiplier: i32, shift: i32, stage: &OutputStage<'_>) -> i8 {
        Self::requantize(acc, multiplier, shift, stage.offset, stage.act)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Lcg;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// int8 values, the extremes (-128, 127) and 0 drawn far more often than uniformly.
    fn int8() -> impl Strategy<Value = i8> {
        prop_oneof![Just(-128i8), Just(127i8), Just(0i8), any::<i8>()]
    }

    fn bytes(len: impl Into<proptest::collection::SizeRange>) -> impl Strategy<Value = Vec<i8>> {
        proptest::collection::vec(int8(), len)
    }

    /// Input zero points, the extremes often (offsets -127 and 128).
    fn zero_point() -> impl Strategy<Value = i32> {
        prop_oneof![Just(-128i32), Just(127i32), -128i32..=127]
    }

    /// Accumulators, the wrapping edges often.
    fn acc() -> impl Strategy<Value = i32> {
        prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), any::<i32>()]
    }

    /// One of `special` three times in four, else `random`.
    fn draw(rng: &mut Lcg, special: &[i32], random: fn(&mut Lcg) -> i32) -> i32 {
        if rng.next() % 4 < 3 { special[(rng.next() % special.len() as u32) as usize] } else { random(rng) }
    }

    /// `n` rows of `len` values (one flat vector), and `len` up to 70: odd lengths, every
    /// tail of the 16- and 8-wide steps.
    fn rows(n: usize) -> impl Strategy<Value = (usize, Vec<i8>)> {
        (0usize..70).prop_flat_map(move |len| (Just(len), bytes(n * len)))
    }

    proptest! {
        #[test]
        fn dots_match_portable(
            (len, v) in rows(5), zp in zero_point(), a in proptest::array::uniform4(acc()),
        ) {
            let x = &v[..len];
            let f: [&[i8]; 4] = core::array::from_fn(|i| &v[(i + 1) * len..][..len]);
            prop_assert_eq!(X86::dot(x, f[0], -zp, a[0]), Portable::dot(x, f[0], -zp, a[0]));
            let pair = [f[0], f[1]];
            prop_assert_eq!(X86::dot2(x, pair, -zp, [a[0], a[1]]), Portable::dot2(x, pair, -zp, [a[0], a[1]]));
            prop_assert_eq!(X86::dot4(x, f, -zp, a), Portable::dot4(x, f, -zp, a));
            // The SSE2 loop too, which `X86` leaves for CPUs without AVX2.
            // SAFETY: SSE2 is part of every x86-64 target this module builds for.
            prop_assert_eq!(unsafe { sse2::dot_n(x, f, -zp, a) }, Portable::dot4(x, f, -zp, a));
        }

        #[test]
        fn dot_runs_match_portable(
            depth in 0usize..70, n in 1usize..30, more in 0usize..3, seed: u64, zp in zero_point(),
        ) {
            let mut rng = Lcg(seed);
            // `more` filters past the run's, which a loop may read (times zero) but not sum.
            let (x, filters) = (rng.bytes(depth), rng.bytes((n + more) * depth));
            let bias: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            let (mut a, mut b) = (std::vec![7; n], std::vec![9; n]);
            // AVX2's eight channels at a time where the CPU has it.
            X86::dot_run(&x, &filters, -zp, &bias, &mut a);
            Portable::dot_run(&x, &filters, -zp, &bias, &mut b);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn direct_blocks_match_portable(
            rows in 1usize..4, pairs in 1usize..20, n in 1usize..30, pixels in 1usize..5, seed: u64,
        ) {
            // Four pixels' filter rows read in place, `row` apart, from staged values.
            let mut rng = Lcg(seed);
            let (taps, row) = (2 * pairs, 2 * pairs + 5);
            let x: Vec<i16> = (0..rows * row + 12).map(|_| rng.range(-255, 256) as i16).collect();
            let bases: [usize; 4] = core::array::from_fn(|_| (rng.next() % 6) as usize);
            let filter = rng.bytes(n * rows * taps);
            let bias: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            let stride = rows * taps;
            let (mut a, mut b) = (std::vec![0i16; n.next_multiple_of(8) * stride], std::vec![0i16; n.next_multiple_of(8) * stride]);
            X86::pack_direct(&filter, stride, stride, n, &mut a);
            Portable::pack_direct(&filter, stride, stride, n, &mut b);
            let (mut got, mut want) = (std::vec![7; pixels * n], std::vec![9; pixels * n]);
            X86::conv_direct(&x, (bases, row, rows, taps), &a, &bias, &mut got);
            Portable::conv_direct(&x, (bases, row, rows, taps), &b, &bias, &mut want);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn saturated_dots_match_portable(len in 0usize..100, x in prop_oneof![Just(-128i8), Just(127i8)],
                                         w in prop_oneof![Just(-128i8), Just(127i8)], zp in zero_point()) {
            // Every product at its largest (|x + offset| = 255, |w| = 128): nothing saturates.
            let (x, w) = (std::vec![x; len], std::vec![w; len]);
            let f = [&w[..]; 4];
            prop_assert_eq!(X86::dot4(&x, f, -zp, [0; 4]), Portable::dot4(&x, f, -zp, [0; 4]));
            // SAFETY: SSE2 is part of every x86-64 target this module builds for.
            prop_assert_eq!(unsafe { sse2::dot_n(&x, f, -zp, [0; 4]) }, Portable::dot4(&x, f, -zp, [0; 4]));
        }

        #[test]
        fn conv_block_matches_portable(
            per_filter in 0usize..150, n in 1usize..30, rows in 1usize..5, seed: u64, extreme: bool,
        ) {
            // Patches of any int16 (the extremes, where PMADDWD's sum overflows, as well).
            let mut rng = Lcg(seed);
            let stride = per_filter.next_multiple_of(8).max(8);
            let mut value = |_| if extreme { [i16::MIN, i16::MAX][(rng.next() % 2) as usize] } else { rng.next() as i16 };
            let mut patches: Vec<i16> = (0..4 * stride).map(&mut value).collect();
            for row in patches.chunks_exact_mut(stride) {
                row[per_filter..].fill(0);
            }
            let filter = rng.bytes(n * per_filter);
            let bias: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            let len = n.next_multiple_of(8) * stride;
            let mut b = std::vec![0i16; len];
            Portable::pack_filters(&filter, per_filter, stride, n, &mut b);
            let mut want = std::vec![7i32; rows * n];
            Portable::conv_block(&patches, stride, &b, &bias, &mut want);
            // Both x86-64 loops: SSE2, and AVX2 where the CPU has it (which `X86` then takes).
            let mut a = std::vec![0i16; len];
            pack_sse2(&filter, per_filter, stride, n, &mut a);
            let mut x = std::vec![7i32; rows * n];
            // SAFETY: SSE2 is part of every x86-64 target this module builds for.
            unsafe { sse2::conv_block(&patches, stride, &a, &bias, &mut x) };
            prop_assert_eq!(&x, &want);
            if super::super::avx2::has_avx2() {
                let mut a = std::vec![0i16; len];
                // SAFETY: the CPU has AVX2 (`has_avx2`).
                unsafe { super::super::avx2::pack_filters(&filter, per_filter, stride, n, &mut a) };
                let mut x = std::vec![7i32; rows * n];
                // SAFETY: the CPU has AVX2 (`has_avx2`).
                unsafe { super::super::avx2::conv_block(&patches, stride, &a, &bias, &mut x) };
                prop_assert_eq!(&x, &want);
            }
        }

        #[test]
        fn depthwise_rows_match_portable(
            channels in 0usize..40, fh in 1usize..4, fw in 1usize..6, pixels in 1usize..6,
            stride in 1usize..3, dilation in 1usize..3, seed: u64, bias in acc(),
        ) {
            let mut rng = Lcg(seed);
            let columns = (pixels - 1) * stride + (fw - 1) * dilation + 1;
            // Staged values: inputs plus an offset, 0 here and there (padding).
            let values: Vec<i16> = (0..fh * columns * channels)
                .map(|_| if rng.next().is_multiple_of(5) { 0 } else { rng.range(-255, 256) as i16 })
                .collect();
            // A filter tensor with more channels than the run (stride 45).
            let (taps, filter_stride) = (fh * fw, 45);
            let filter = rng.bytes(taps * filter_stride);
            let rows = DepthwiseRows { values: &values, columns, filter: crate::Hw::new(fh, fw), stride, dilation };
            let bias: Vec<i32> = (0..channels).map(|j| bias.wrapping_add(j as i32)).collect();
            let size = taps.next_multiple_of(2) * channels.next_multiple_of(8);
            let (mut pa, mut pb) = (std::vec![7i16; size], std::vec![7i16; size]);
            X86::pack_depthwise(&filter, filter_stride, taps, channels, &mut pa);
            Portable::pack_depthwise(&filter, filter_stride, taps, channels, &mut pb);
            let (mut a, mut b) = (std::vec![1; pixels * channels], std::vec![2; pixels * channels]);
            X86::depthwise_rows(&rows, &pa, &bias, &mut a);
            Portable::depthwise_rows(&rows, &pb, &bias, &mut b);
            prop_assert_eq!(&a, &b);
            // The SSE2 loop too, which `X86` leaves for CPUs without AVX2.
            let mut a = std::vec![1; pixels * channels];
            // SAFETY: SSE2 is part of every x86-64 target this module builds for.
            unsafe { sse2::depthwise_rows(&rows, &pa, &bias, &mut a) };
            prop_assert_eq!(&a, &b);
        }

        #[test]
        fn requantize_rows_matches_scalar(
            rows in 1usize..11, width in 0usize..20, seed: u64, zp in zero_point(),
            act in (-128i32..=127).prop_flat_map(|lo| (Just(lo), lo..=127)),
        ) {
            // Multipliers over their whole range (0 and i32::MAX included, and a negative
            // one now and then), every shift, accumulators with their extremes.
            let mut rng = Lcg(seed);
            let m_special = [0, 1, i32::MAX, 1 << 30, -5, i32::MIN];
            let a_special = [i32::MIN, i32::MAX, 0, -1, 1, 1 << 30, -(1 << 30)];
            let multiplier: Vec<i32> =
                (0..width).map(|_| draw(&mut rng, &m_special, |r| (r.next() >> 1) as i32)).collect();
            let shift: Vec<i32> = (0..width).map(|_| draw(&mut rng, &[-31, 30, 0, -1, 1], |r| r.range(-31, 31))).collect();
            let acc: Vec<i32> = (0..rows * width).map(|_| draw(&mut rng, &a_special, |r| r.next() as i32)).collect();
            let act = ActivationRange::new(act.0, act.1).unwrap();
            let stage = OutputStage { multiplier: &multiplier, shift: &shift, offset: zp, act };
            let stride = width + 3;
            let (mut a, mut b) = (std::vec![0i8; rows * stride], std::vec![0i8; rows * stride]);
            // AVX2's loop where the CPU has it (four rows at a time), and SSE2's.
            X86::requantize_rows(&acc, &stage, &mut a, stride);
            Portable::requantize_rows(&acc, &stage, &mut b, stride);
            prop_assert_eq!(&a, &b);
            let mut a = std::vec![0i8; rows * stride];
            // SAFETY: SSE2 is part of every x86-64 target this module builds for.
            unsafe { sse2::requantize_rows(&acc, &stage, &mut a, stride) };
            prop_assert_eq!(&a, &b);
        }

        #[test]
        fn stage4_matches_scalar_everywhere(acc: [i32; 4], m in proptest::array::uniform4(0i32..=i32::MAX),
                                            s in proptest::array::uniform4(-31i32..=30)) {
            // Per-lane shifts (distinct counts), right shifts only, two of them, and uniform
            // ones (all lanes the first's): each of `Stage4`'s kinds.
            let two = [s[0], s[1], s[0], s[1]].map(|s| -s.abs());
            for s in [s, s.map(|s| -s.abs()), two, [s[0]; 4]] {
                let stage = OutputStage { multiplier: &m, shift: &s, offset: 0, act: ActivationRange::INT8 };
                let (mut a, mut b) = ([0i8; 4], [0i8; 4]);
                X86::requantize_rows(&acc, &stage, &mut a, 4);
                Portable::requantize_rows(&acc, &stage, &mut b, 4);
                prop_assert_eq!(a, b);
            }
        }
    }
}
