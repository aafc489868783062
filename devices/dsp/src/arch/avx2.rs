//! AVX2 loops of the x86-64 kernels that choose their instructions at run time: detection of
//! AVX2 and AVX-512 VNNI (CPUID and XCR0, so no `std`; read once and cached); the int8
//! convolution tiles (four pixels by 16 output channels across the lanes, over gathered
//! patches or staged input rows read in place), depthwise rows (16 channels a step) and fully
//! connected runs (eight channels a step) that `x86::X86` takes where the CPU has AVX2; TFLite's
//! fixed-point output stage eight lanes at a time; and the int8 add and subtract loops. Every
//! function here has the `avx2` target feature; callers check [`has_avx2`] (or [`has_vnni`],
//! which implies it) first. Products are `VPMADDWD`'s of int16 values, exact modulo 2^32 as
//! every other path's sums.

use core::arch::x86_64::*;
use core::sync::atomic::{AtomicU8, Ordering};

use super::x86::sse2::{load_i8x16, load_i32x4, store_i32x4};
use super::{DepthwiseRows, OutputStage};
use crate::add::AddParams;
use crate::quant::ActivationRange;

/// Whether the CPU and OS offer AVX2 (cached after the first call).
pub fn has_avx2() -> bool {
    features() & AVX2 != 0
}

/// Whether the CPU and OS offer AVX2, AVX-512 VNNI, AVX-512 BW and AVX-512 VL (cached after
/// the first call).
pub fn has_vnni() -> bool {
    features() & VNNI != 0
}

/// Whether the CPU and OS offer AVX-512 VBMI as well as what [`has_vnni`] asks (cached after
/// the first call): byte permutes across a whole vector, for table lookups.
pub(crate) fn has_vbmi() -> bool {
    features() & VBMI != 0
}

/// Whether the CPU and OS offer AVX2 and FMA3 (cached after the first call): what float
/// kernels elsewhere (hostrt-ops) check before their AVX2 loops.
pub fn has_avx2_fma() -> bool {
    features() & FMA != 0
}

/// Whether the CPU and OS offer AVX-512F with AVX2 and FMA3 (cached after the first call):
/// what float kernels elsewhere (hostrt-ops) check before their 512-bit loops.
pub fn has_avx512f() -> bool {
    features() & AVX512F != 0
}

/// Bit of [`features`]: AVX2.
const AVX2: u8 = 1;
/// Bit of [`features`]: AVX-512F (with AVX2 and FMA3, and the OS saving the registers).
const AVX512F: u8 = 8;
/// Bit of [`features`]: AVX2 and FMA3.
const FMA: u8 = 4;
/// Bit of [`features`]: AVX-512 VNNI with AVX-512 VL and BW (and AVX2).
const VNNI: u8 = 2;
/// Bit of [`features`]: AVX-512 VBMI with [`VNNI`]'s.
const VBMI: u8 = 16;

/// The features found, read once.
fn features() -> u8 {
    /// The bits above, plus 0x80 once known.
    static STATE: AtomicU8 = AtomicU8::new(0);
    let state = STATE.load(Ordering::Relaxed);
    if state & KNOWN != 0 {
        return state;
    }
    let found = detect() | KNOWN;
    STATE.store(found, Ordering::Relaxed);
    found
}

/// Bit of [`features`]: detection ran.
const KNOWN: u8 = 0x80;

fn detect() -> u8 {
    #[allow(unused_unsafe)] // `__cpuid_count` is an unsafe function before Rust 1.94.
    // SAFETY: CPUID exists on every x86-64 processor; leaves 1 and 7 are asked for only after
    // leaf 0 says they exist.
    let (max_leaf, leaf1, leaf7) = unsafe {
        let max_leaf = __cpuid_count(0, 0).eax;
        if max_leaf < 7 {
            return 0;
        }
        (max_leaf, __cpuid_count(1, 0), __cpuid_count(7, 0))
    };
    let _ = max_leaf;
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    let avx2 = leaf7.ebx & (1 << 5) != 0;
    let avx512f = leaf7.ebx & (1 << 16) != 0;
    let avx512vl = leaf7.ebx & (1 << 31) != 0;
    let avx512bw = leaf7.ebx & (1 << 30) != 0;
    let avx512vnni = leaf7.ecx & (1 << 11) != 0;
    let avx512vbmi = leaf7.ecx & (1 << 1) != 0;
    if !(osxsave && avx2) {
        return 0;
    }
    // SAFETY: XGETBV is available where CPUID reports OSXSAVE, checked above.
    let xcr0 = unsafe { xcr0() };
    // The SSE and AVX register states, then the three AVX-512 ones (opmask, upper halves,
    // upper registers), saved by the OS.
    let (ymm, zmm) = (xcr0 & 0x6 == 0x6, xcr0 & 0xe6 == 0xe6);
    let mut found = 0;
    if ymm {
        found |= AVX2;
    }
    if ymm && leaf1.ecx & (1 << 12) != 0 {
        found |= FMA;
    }
    if ymm && zmm && avx512f && avx512vl && avx512bw && avx512vnni {
        found |= VNNI;
        if avx512vbmi {
            found |= VBMI;
        }
    }
    if ymm && zmm && avx512f && found & FMA != 0 {
        found |= AVX512F;
    }
    found
}

/// XCR0, the register states the OS saves.
///
/// # Safety
/// The CPU must support XGETBV (CPUID.1:ECX.OSXSAVE).
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    // SAFETY: the caller guarantees XGETBV exists; register 0 always exists with it.
    unsafe { _xgetbv(0) }
}

/// The output offset and clamp of the output stage (after [`Scale8`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutStage {
    /// Output zero point.
    pub offset: i32,
    /// Activation minimum (at least -128).
    pub min: i32,
    /// Activation maximum (at most 127).
    pub max: i32,
}

/// The last steps of the output stage, after [`Scale8`]: the output offset added, the clamp,
/// as int8.
#[target_feature(enable = "avx2")]
#[inline]
fn requantize_tail(v: __m256i, st: &OutStage) -> [i8; 8] {
    let v = _mm256_add_epi32(v, _mm256_set1_epi32(st.offset));
    let v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(st.min)), _mm256_set1_epi32(st.max));
    pack8(v)
}

/// The output stage's last steps where it runs on the sums in their registers (`avx2_dw`,
/// [`conv_block_out`]): the output offset added in int32 (wrapping, as TFLite's add), then
/// saturating packs to int8 and the activation clamp there. A value outside int16 or int8
/// saturates to the end of its side, past every clamp bound on that side, so the packs and
/// the clamp give TFLite's clamp of the int32 value.
#[derive(Clone, Copy)]
pub(crate) struct Narrow {
    offset: __m256i,
    min: __m128i,
    max: __m128i,
}

impl Narrow {
    /// The steps for output offset `offset` and clamp `act` (within int8).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn new(offset: i32, act: ActivationRange) -> Narrow {
        Narrow {
            offset: _mm256_set1_epi32(offset),
            min: _mm_set1_epi8(act.min as i8),
            max: _mm_set1_epi8(act.max as i8),
        }
    }

    /// `v` plus the output offset, lane by lane.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn offset(&self, v: __m256i) -> __m256i {
        _mm256_add_epi32(v, self.offset)
    }

    /// Sixteen offset values as int16 lanes, in order, to clamped int8.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn sixteen(&self, v: __m256i) -> __m128i {
        self.clamp(_mm_packs_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v)))
    }

    /// Eight offset values as two halves of four int32, in order, to clamped int8.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn eight(&self, lo: __m128i, hi: __m128i) -> [i8; 8] {
        let v = _mm_packs_epi32(lo, hi);
        let v = self.clamp(_mm_packs_epi16(v, v));
        (_mm_cvtsi128_si64(v) as u64).to_le_bytes().map(|b| b as i8)
    }

    /// The activation clamp of int8 lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn clamp(&self, v: __m128i) -> __m128i {
        _mm_min_epi8(_mm_max_epi8(v, self.min), self.max)
    }
}

/// The 16 int8 of `v` into `out`.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn store_i8x16(v: __m128i, out: &mut [i8; 16]) {
    // SAFETY: `out` is a valid, exclusive reference to 16 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
}

/// The first `out.len()` (at most 16) int8 of `v` into `out`: all 16 with one store, fewer
/// (a run's last channels) through a copy.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn store_i8_upto16(v: __m128i, out: &mut [i8]) {
    match out.as_chunks_mut::<16>().0 {
        [whole, ..] => store_i8x16(v, whole),
        [] => {
            let mut bytes = [0i8; 16];
            store_i8x16(v, &mut bytes);
            out.copy_from_slice(&bytes[..out.len()]);
        }
    }
}

/// TFLite's `MultiplyByQuantizedMultiplier` (double rounding; see `crate::quant`) of eight
/// int32 lanes, each with its own multiplier and shift (`-31..=30`), with what depends on
/// those alone worked out once (for the rows of a column of channels, or a whole add).
#[derive(Clone, Copy)]
pub(crate) struct Scale8 {
    multiplier: __m256i,
    /// The odd lanes' multipliers in the even lanes (for `VPMULDQ`).
    multiplier_odd: __m256i,
    left: __m256i,
    right: __m256i,
    /// `2^right - 1`, and half of it.
    mask: __m256i,
    half: __m256i,
    /// Whether a multiplier is `i32::MIN`, the one that can overflow.
    pub(crate) may_overflow: bool,
}

impl Scale8 {
    /// The stage of `multiplier` and `shift` (`-31..=30`).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn new(multiplier: __m256i, shift: __m256i) -> Scale8 {
        let zero = _mm256_setzero_si256();
        let right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
        let one = _mm256_set1_epi32(1);
        let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
        let min = _mm256_cmpeq_epi32(multiplier, _mm256_set1_epi32(i32::MIN));
        Scale8 {
            multiplier,
            multiplier_odd: _mm256_shuffle_epi32::<0xF5>(multiplier),
            left: _mm256_max_epi32(shift, zero),
            right,
            mask,
            half: _mm256_srai_epi32::<1>(mask),
            may_overflow: _mm256_movemask_epi8(min) != 0,
        }
    }

    /// The stage of the first eight channels of `multiplier` and `shift`, those past their
    /// end (a last partial eight) with zero scales.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn of(multiplier: &[i32], shift: &[i32]) -> Scale8 {
        Scale8::new(load_i32x8_padded(multiplier), load_i32x8_padded(shift))
    }

    /// [`Scale8::apply`], with the fix for `i32::MIN` where this stage needs it (a branch per
    /// eight lanes, where a loop over many of them takes `FIX` once).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn apply_checked(&self, acc: __m256i) -> __m256i {
        if self.may_overflow { self.apply::<true>(acc) } else { self.apply::<false>(acc) }
    }

    /// The stage of eight lanes; `FIX` must be set where [`Scale8::may_overflow`] is.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn apply<const FIX: bool>(&self, acc: __m256i) -> __m256i {
        // The left shift wraps, as `wrapping_mul(1 << left)` does.
        self.apply_shifted::<FIX>(_mm256_sllv_epi32(acc, self.left))
    }

    /// [`Scale8::apply`] after its left shift, by itself where every shift is at most 0.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn apply_shifted<const FIX: bool>(&self, x: __m256i) -> __m256i {
        // Rounding doubling high multiply: bits 31..62 of `x * m + 2^30` (the arithmetic shift
        // of that sum by 31, equal to gemmlowp's nudge-then-truncate for either sign), from
        // the even lanes' and odd lanes' 64-bit products (the odd lanes moved down by a
        // shuffle: after a 64-bit shift, LLVM emulated a full 64-bit multiply).
        let nudge = _mm256_set1_epi64x(1 << 30);
        let even = _mm256_add_epi64(_mm256_mul_epi32(x, self.multiplier), nudge);
        let odd =
            _mm256_add_epi64(_mm256_mul_epi32(_mm256_shuffle_epi32::<0xF5>(x), self.multiplier_odd), nudge);
        let mut high =
            _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<31>(even), _mm256_slli_epi64::<1>(odd));
        if FIX {
            // The one overflow, i32::MIN * i32::MIN, gave i32::MIN; flipping every bit
            // saturates it.
            let min = _mm256_set1_epi32(i32::MIN);
            let overflow =
                _mm256_and_si256(_mm256_cmpeq_epi32(x, min), _mm256_cmpeq_epi32(self.multiplier, min));
            high = _mm256_xor_si256(high, overflow);
        }
        // Rounding divide by 2^right, ties away from zero.
        let remainder = _mm256_and_si256(high, self.mask);
        let threshold = _mm256_sub_epi32(self.half, _mm256_cmpgt_epi32(_mm256_setzero_si256(), high));
        _mm256_sub_epi32(_mm256_srav_epi32(high, self.right), _mm256_cmpgt_epi32(remainder, threshold))
    }
}

/// Eight int32 lanes within int8, as int8.
#[target_feature(enable = "avx2")]
#[inline]
fn pack8(v: __m256i) -> [i8; 8] {
    // Within int8 now, so the saturating packs are exact: lane 0's four values, then lane 1's.
    let v = _mm256_packs_epi32(v, v);
    let v = _mm256_packs_epi16(v, v);
    let both = _mm_unpacklo_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    (_mm_cvtsi128_si64(both) as u64).to_le_bytes().map(|b| b as i8)
}

/// Eight int32 from an array of them.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn load_i32x8(v: &[i32; 8]) -> __m256i {
    // SAFETY: `v` is a valid reference to 32 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// The first eight int32 of `v`, zeros past its end. Eight or more are loaded straight from
/// the slice: a vector load of values just copied in smaller stores waits for them (store
/// forwarding fails), which had cost a fully connected layer, one row per column of the
/// output stage, more than the stage itself.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i32x8_padded(v: &[i32]) -> __m256i {
    match v.as_chunks::<8>().0 {
        [first, ..] => load_i32x8(first),
        [] => {
            let mut padded = [0i32; 8];
            padded[..v.len()].copy_from_slice(v);
            load_i32x8(&padded)
        }
    }
}

/// 32 int8 from an array of them.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn load_i8x32(v: &[i8; 32]) -> __m256i {
    // SAFETY: as `load_i32x8`.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// The 32 bytes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn store_u8x32(v: __m256i, out: &mut [u8; 32]) {
    // SAFETY: `out` is a valid, exclusive reference to 32 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// [`super::InnerLoops::requantize_rows`] eight channels at a time: each column's stage
/// ([`Scale8`]) worked out once for all rows (a last partial column padded).
#[target_feature(enable = "avx2")]
pub(crate) fn requantize_rows(acc: &[i32], stage: &OutputStage<'_>, output: &mut [i8], stride: usize) {
    let width = stage.multiplier.len();
    if width == 0 {
        return;
    }
    let st = OutStage { offset: stage.offset, min: stage.act.min, max: stage.act.max };
    let rows = acc.len() / width;
    for c in (0..width).step_by(8) {
        let scale = Scale8::of(&stage.multiplier[c..], &stage.shift[c..]);
        let column = (width, c, rows);
        if scale.may_overflow {
            requantize_column::<true>(acc, column, &scale, &st, (output, stride));
        } else {
            requantize_column::<false>(acc, column, &scale, &st, (output, stride));
        }
    }
}

/// Column `c` (up to eight channels) of [`requantize_rows`]' `rows` rows of `width`.
#[target_feature(enable = "avx2")]
#[inline]
fn requantize_column<const FIX: bool>(
    acc: &[i32],
    (width, c, rows): (usize, usize, usize),
    scale: &Scale8,
    st: &OutStage,
    (output, stride): (&mut [i8], usize),
) {
    let k = (width - c).min(8);
    for r in 0..rows {
        let (acc, out) = (&acc[r * width + c..], &mut output[r * stride + c..]);
        if k == 8 {
            // Whole columns without the copies (calls to `memcpy` for a variable length).
            let v = scale.apply::<FIX>(load_i32x8(&acc.as_chunks::<8>().0[0]));
            out.as_chunks_mut::<8>().0[0] = requantize_tail(v, st);
        } else {
            let v = scale.apply::<FIX>(load_i32x8_padded(&acc[..k]));
            out[..k].copy_from_slice(&requantize_tail(v, st)[..k]);
        }
    }
}

/// Lays out a run's filters for [`conv_block`] (see [`super::InnerLoops::pack_filters`]): per
/// group of eight channels, per pair of values k, k + 1, each channel's two values side by
/// side (one 256-bit vector, channels in order); channels past `n` and values past
/// `per_filter` are 0. Needs `packed.len() >= n.next_multiple_of(8) * stride`.
///
/// Sixteen values of eight channels at a time go through an 8x8 transpose of their pairs
/// (16-bit units); per call, this layout had cost a third of the convolutions' own time.
#[target_feature(enable = "avx2")]
pub(crate) fn pack_filters(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
    let packed = &mut packed[..n.next_multiple_of(8) * stride];
    let whole = per_filter / 16;
    for (g, group) in packed.chunks_exact_mut(8 * stride).enumerate() {
        // Only the pairs past the whole sixteens are zeroed first (all of the buffer had
        // cost a seventh of a 256-channel pointwise convolution of nine pixels).
        group[128 * whole..].fill(0);
        let mut rows: [Option<&[i8]>; 8] = [None; 8];
        for (j, row) in rows.iter_mut().enumerate().take(n.saturating_sub(8 * g)) {
            *row = Some(&filter[(8 * g + j) * per_filter..][..per_filter]);
        }
        for q in 0..whole {
            // (A loop, not `map`: the closure would not take this function's target features.)
            let mut r = [_mm_setzero_si128(); 8];
            for (r, row) in r.iter_mut().zip(rows) {
                if let Some(row) = row {
                    *r = load_i8x16(&row[16 * q..].as_chunks::<16>().0[0]);
                }
            }
            for (i, v) in transpose_pairs(r).into_iter().enumerate() {
                store_i16x16(
                    _mm256_cvtepi8_epi16(v),
                    &mut group[16 * (8 * q + i)..].as_chunks_mut::<16>().0[0],
                );
            }
        }
        // The last `per_filter % 16` values, a pair at a time: pair `i` of channel `j` is
        // two values at `16 i + 2 j`.
        for (j, row) in rows.iter().enumerate() {
            let Some(row) = row else { break };
            for (k, &w) in row.iter().enumerate().skip(16 * whole) {
                group[16 * (k / 2) + 2 * j + k % 2] = i16::from(w);
            }
        }
    }
}

/// The 8x8 transpose of 16-bit units: `out[i]` holds unit `i` of each of `r[0..8]`.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose_pairs(r: [__m128i; 8]) -> [__m128i; 8] {
    let t: [__m128i; 8] = core::array::from_fn(|k| {
        let (a, b) = (r[k / 2 * 2], r[k / 2 * 2 + 1]);
        if k % 2 == 0 { _mm_unpacklo_epi16(a, b) } else { _mm_unpackhi_epi16(a, b) }
    });
    // u[0..4]: units 0-1, 2-3, 4-5, 6-7 of rows 0..4; u[4..8] the same of rows 4..8.
    let u: [__m128i; 8] = core::array::from_fn(|k| {
        let (half, k) = (k / 4, k % 4);
        let (a, b) = (t[4 * half + k / 2], t[4 * half + k / 2 + 2]);
        if k % 2 == 0 { _mm_unpacklo_epi32(a, b) } else { _mm_unpackhi_epi32(a, b) }
    });
    core::array::from_fn(|i| {
        let (a, b) = (u[i / 2], u[4 + i / 2]);
        if i % 2 == 0 { _mm_unpacklo_epi64(a, b) } else { _mm_unpackhi_epi64(a, b) }
    })
}

/// Sixteen int16 from an array of them.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i16x16(v: &[i16; 16]) -> __m256i {
    // SAFETY: `v` is a valid reference to 32 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// The sixteen int16 lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn store_i16x16(v: __m256i, out: &mut [i16; 16]) {
    // SAFETY: `out` is a valid, exclusive reference to 32 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// [`super::InnerLoops::conv_block`] on 256-bit vectors, with the filters as [`pack_filters`]
/// lays them out: output channels across the lanes, so nothing is summed across lanes. Per
/// pair of values, each pixel's two go to every lane (`VPBROADCASTD`) and one `VPMADDWD`
/// multiplies them with eight channels' two filter values each; four pixels by 16 channels
/// keep eight sums in registers (a last group of eight, four). Short patches (a pointwise
/// layer's eight channels, an RGB 3x3 filter's 27 values) cost no reduction at the end, as
/// they did along the patch. Exact modulo 2^32 for any int16, as the SSE2 loop.
#[target_feature(enable = "avx2")]
pub(crate) fn conv_block(patches: &[i16], stride: usize, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
    // One check for every read below, through raw pointers: a bounds check per load kept the
    // loop's pointers on the stack.
    assert!(stride.is_multiple_of(8) && patches.len() >= 4 * stride);
    let x = patches.as_ptr();
    let pixels = core::array::from_fn(|p| x.wrapping_add(p * stride));
    // SAFETY: each pixel's `stride` values (even) lie within `patches` (the assertion), read
    // as one row of `stride / 2` pairs.
    unsafe { tiles(pixels, (0, 1, stride / 2), (packed, stride), bias, acc) };
}

/// [`super::InnerLoops::conv_block_out`] on 256-bit vectors: [`conv_block`]'s tiles, each
/// through the output stage in the registers its sums are in ([`tiles_out`]).
#[target_feature(enable = "avx2")]
pub(crate) fn conv_block_out(
    (patches, stride, packed, bias): (&[i16], usize, &[i16], &[i32]),
    stage: &OutputStage<'_>,
    (output, output_stride, pixels): (&mut [i8], usize, usize),
) {
    let n = bias.len();
    assert!(stride.is_multiple_of(8) && patches.len() >= 4 * stride && pixels <= 4);
    assert!(stage.multiplier.len() == n && stage.shift.len() == n);
    assert!(pixels == 0 || n == 0 || (pixels - 1) * output_stride + n <= output.len());
    let x = patches.as_ptr();
    let rows = core::array::from_fn(|p| x.wrapping_add(p * stride));
    // SAFETY: as `conv_block`'s; the output rows were checked just above.
    unsafe { tiles_out(rows, (packed, stride), bias, stage, (output, output_stride, pixels)) };
}

/// [`tiles`] of one row of pairs per pixel (`stride / 2`), each group of eight channels' sums
/// plus their bias through the output stage ([`Scale8`], worked out per tile: laid out once
/// per run it had to live in the caller) and [`Narrow`], 16 channels of a pixel packed and
/// stored at once.
///
/// # Safety
/// The CPU has AVX2; every pixel's `stride` values are readable; `output` holds each of the
/// `pixels` rows of `n` outputs `output_stride` apart.
#[target_feature(enable = "avx2")]
unsafe fn tiles_out(
    pixels: [*const i16; 4],
    (packed, stride): (&[i16], usize),
    bias: &[i32],
    stage: &OutputStage<'_>,
    (output, output_stride, np): (&mut [i8], usize, usize),
) {
    let n = bias.len();
    let groups = n.div_ceil(8);
    let w = packed[..groups * 8 * stride].as_ptr();
    let pairs = stride / 2;
    let narrow = Narrow::new(stage.offset, stage.act);
    // The stage and bias of eight channels from `c`.
    let prepare =
        |c: usize| (Scale8::of(&stage.multiplier[c..], &stage.shift[c..]), load_i32x8_padded(&bias[c..]));
    // Eight channels' sums of one pixel through the stage, offset, as int32.
    let stage8 = |v: __m256i, (scale, bias): &(Scale8, __m256i)| {
        narrow.offset(scale.apply_checked(_mm256_add_epi32(v, *bias)))
    };
    let mut g = 0;
    while g < groups {
        let two = g + 1 < groups;
        let (w0, w1) = (w.wrapping_add(g * 8 * stride), w.wrapping_add((g + 1) * 8 * stride));
        let mut v = [[_mm256_setzero_si256(); 2]; 4];
        // SAFETY: the pixels' `pairs` pairs (the caller's promise); group `g`'s pairs lie
        // within its `8 * stride` values, within `packed`, and group `g + 1`'s where `two`.
        unsafe {
            if two {
                block_sums::<2>(pixels, [w0, w1], pairs, &mut v);
            } else {
                block_sums::<1>(pixels, [w0, w1], pairs, &mut v);
            }
        }
        let c = 8 * g;
        let first = prepare(c);
        let second = if two { prepare(c + 8) } else { first };
        for (p, v) in v.iter().enumerate().take(np) {
            let out = &mut output[p * output_stride + c..];
            let lo = stage8(v[0], &first);
            if two {
                // Channels c..c + 16: int16 in order after the lanes' shuffle, then int8.
                let hi = stage8(v[1], &second);
                let v = narrow.sixteen(_mm256_permute4x64_epi64::<0b1101_1000>(_mm256_packs_epi32(lo, hi)));
                store_i8_upto16(v, &mut out[..(n - c).min(16)]);
            } else {
                let bytes = narrow.eight(_mm256_castsi256_si128(lo), _mm256_extracti128_si256::<1>(lo));
                let k = (n - c).min(8);
                out[..k].copy_from_slice(&bytes[..k]);
            }
        }
        g += 2;
    }
}

/// [`super::InnerLoops::conv_direct`] on 256-bit vectors, as [`conv_block`] with each pixel's
/// filter rows read in place, `row` apart in `x`, over filters laid out by [`pack_filters`]
/// with stride `rows * taps`.
#[target_feature(enable = "avx2")]
pub(crate) fn conv_direct(
    x: &[i16],
    (bases, row, rows, taps): ([usize; 4], usize, usize, usize),
    packed: &[i16],
    bias: &[i32],
    acc: &mut [i32],
) {
    // One check for every read below: each pixel's last filter row ends within `x`.
    let far = bases.iter().max().copied().unwrap_or(0) + rows.saturating_sub(1) * row + taps;
    assert!(taps.is_multiple_of(2) && (rows == 0 || far <= x.len()));
    let pixels = bases.map(|b| x.as_ptr().wrapping_add(b));
    // SAFETY: pixel `p`'s filter row `fy < rows` is `taps` values (`taps / 2` pairs) at
    // `bases[p] + fy * row`, within `x` (the assertion).
    unsafe { tiles(pixels, (row, rows, taps / 2), (packed, rows * taps), bias, acc) };
}

/// The tiles of [`conv_block`] and [`conv_direct`]: four pixels, each `rows` rows of `pairs`
/// pairs of values (`pixels[p] + fy * row`), by every group of eight channels of `packed`
/// (each group's filters `8 * stride` values, `stride = rows * 2 * pairs`); sums plus the
/// bias into `acc` for the block's `acc.len() / bias.len()` pixels.
///
/// # Safety
/// The CPU has AVX2; every pixel's rows are readable as said.
#[target_feature(enable = "avx2")]
unsafe fn tiles(
    pixels: [*const i16; 4],
    (row, rows, pairs): (usize, usize, usize),
    (packed, stride): (&[i16], usize),
    bias: &[i32],
    acc: &mut [i32],
) {
    let n = bias.len();
    if n == 0 {
        return;
    }
    let rows_out = acc.len() / n;
    let groups = n.div_ceil(8);
    let w = packed[..groups * 8 * stride].as_ptr();
    let mut g = 0;
    while g < groups {
        // Two groups at a time where two remain.
        let two = g + 1 < groups;
        let (w0, w1) = (w.wrapping_add(g * 8 * stride), w.wrapping_add((g + 1) * 8 * stride));
        let mut v = [[_mm256_setzero_si256(); 2]; 4];
        for fy in 0..rows {
            let x = pixels.map(|x| x.wrapping_add(fy * row));
            let at = 16 * pairs * fy;
            let w = [w0.wrapping_add(at), w1.wrapping_add(at)];
            // SAFETY: the pixels' row `fy` holds `pairs` pairs (the caller's promise); group
            // `g`'s pairs `pairs * fy..pairs * (fy + 1)` lie within its `8 * stride` values
            // (`stride = rows * 2 * pairs`), within `packed`, and group `g + 1`'s where `two`.
            unsafe {
                if two {
                    block_sums::<2>(x, w, pairs, &mut v);
                } else {
                    block_sums::<1>(x, w, pairs, &mut v);
                }
            }
        }
        for (half, c) in [8 * g, 8 * g + 8].into_iter().enumerate().take(if two { 2 } else { 1 }) {
            let k = (n - c).min(8);
            let mut b = [0i32; 8];
            b[..k].copy_from_slice(&bias[c..][..k]);
            let b = load_i32x8(&b);
            for (p, v) in v.iter().enumerate().take(rows_out) {
                let sums = _mm256_add_epi32(v[half], b);
                let out = &mut acc[p * n + c..][..k];
                match out.as_chunks_mut::<8>().0 {
                    [out] => store_i32x8(sums, out),
                    // The run's last 1..=7 channels.
                    _ => {
                        let mut lanes = [0i32; 8];
                        store_i32x8(sums, &mut lanes);
                        out.copy_from_slice(&lanes[..k]);
                    }
                }
            }
        }
        g += 2;
    }
}

/// Adds to `v` the sums of four pixels' `pairs` pairs of values (from `x[p]`) by `B` groups of
/// eight channels' pairs of filter values (`w[0]`, then `w[1]`, 16 values a pair).
///
/// # Safety
/// `x[p]` points to `2 * pairs` readable values; each of the first `B` of `w` to `16 * pairs`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_sums<const B: usize>(
    x: [*const i16; 4],
    w: [*const i16; 2],
    pairs: usize,
    v: &mut [[__m256i; 2]; 4],
) {
    for i in 0..pairs {
        // SAFETY: pair `i < pairs` of a group is 16 values at `16 i` (the caller's promise);
        // `loadu` has no alignment requirement.
        let wv: [__m256i; B] =
            core::array::from_fn(|j| unsafe { _mm256_loadu_si256(w[j].add(16 * i).cast()) });
        for (v, x) in v.iter_mut().zip(x) {
            // SAFETY: values `2 i, 2 i + 1` of the pixel's row (the caller's promise);
            // `read_unaligned` has no alignment requirement.
            let x = _mm256_set1_epi32(unsafe { x.add(2 * i).cast::<i32>().read_unaligned() });
            for j in 0..B {
                v[j] = _mm256_add_epi32(v[j], _mm256_madd_epi16(x, wv[j]));
            }
        }
    }
}

/// `acc[f] + Σ filters[f][i] * (input[i] + offset)` over `input` (each filter at least as
/// long): 16 values per step, sign-extended to int16 (`VPMOVSXBW`), the input's once for all
/// `N` filters with the offset added, one `VPMADDWD` per filter; the last `len % 16` values
/// in scalar. The fully connected layer's loop where the CPU has AVX2 but no VNNI; exact
/// modulo 2^32 as the SSE2 loop.
#[target_feature(enable = "avx2")]
pub(crate) fn dot_n<const N: usize>(
    input: &[i8],
    filters: [&[i8]; N],
    offset: i32,
    acc: [i32; N],
) -> [i32; N] {
    let n = input.len();
    // One check for every read below, through raw pointers (a check per load kept the
    // loop's pointers on the stack).
    assert!(filters.iter().all(|f| f.len() >= n));
    let (x, w) = (input.as_ptr(), filters.map(|f| f.as_ptr()));
    // int8 zero points keep the offset in -127..=128.
    let off = _mm256_set1_epi16(offset as i16);
    let mut sums = [_mm256_setzero_si256(); N];
    let steps = n / 16;
    for i in 0..steps {
        // SAFETY: values `16 i..16 i + 16 <= n` of the input and of each filter (at least `n`
        // long: the assertion); `loadu` has no alignment requirement.
        let xv =
            _mm256_add_epi16(_mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(x.add(16 * i).cast()) }), off);
        for (sum, w) in sums.iter_mut().zip(w) {
            // SAFETY: as the input's load.
            let wv = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(w.add(16 * i).cast()) });
            *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(xv, wv));
        }
    }
    let done = 16 * steps;
    let mut out = acc;
    for ((o, sum), f) in out.iter_mut().zip(sums).zip(filters) {
        let mut lanes = [0i32; 8];
        store_i32x8(sum, &mut lanes);
        let total = lanes.iter().fold(*o, |a, &l| a.wrapping_add(l));
        *o = input[done..]
            .iter()
            .zip(&f[done..n])
            .fold(total, |a, (&x, &w)| a.wrapping_add(i32::from(w) * (i32::from(x) + offset)));
    }
    out
}

/// [`super::InnerLoops::dot_run`] eight channels at a time: per step of 16 values, the
/// input's sign-extended once (`VPMOVSXBW`, the offset added) for eight filters' (one
/// `VPMADDWD` each), the eight sums reduced across lanes together by a tree of `VPHADDD`
/// into one vector with the bias. The last `depth % 16` values are one more step against the
/// input's last values zero-padded to 16, where the loads stay within `filters` (past a
/// row's end they read the next row's values, times zero); else, and for the last `n % 8`
/// channels, through [`dot_n`]. Per group of four through `dot4`, the group's setup and
/// reduction had cost a layer of depth 128 as much as its products.
#[target_feature(enable = "avx2")]
pub(crate) fn dot_run(input: &[i8], filters: &[i8], offset: i32, bias: &[i32], acc: &mut [i32]) {
    let (n, depth) = (acc.len(), input.len());
    // One check for every read below, through raw pointers.
    assert!(filters.len() >= n * depth && bias.len() >= n);
    let (x, w) = (input.as_ptr(), filters.as_ptr());
    let off = _mm256_set1_epi16(offset as i16);
    let (steps, done) = (depth / 16, depth / 16 * 16);
    // The last values with the offset added (int8 zero points keep it in -127..=128), zero
    // past the input.
    let mut last = [0i16; 16];
    super::widen(&input[done..], offset as i16, &mut last);
    let last = load_i16x16(&last);
    let mut j = 0;
    while j + 8 <= n {
        let mut rows = [w; 8];
        for (f, row) in rows.iter_mut().enumerate() {
            // SAFETY: row `j + f < n` starts within `filters` (the assertion).
            *row = unsafe { w.add((j + f) * depth) };
        }
        let mut sums = [_mm256_setzero_si256(); 8];
        for i in 0..steps {
            // SAFETY: values `16 i..16 i + 16 <= depth` of the input and of filter rows
            // `j..j + 8 <= n`, each `depth` long (the assertion); `loadu` has no alignment
            // requirement.
            let xv =
                _mm256_add_epi16(_mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(x.add(16 * i).cast()) }), off);
            for (sum, row) in sums.iter_mut().zip(rows) {
                // SAFETY: as the input's load.
                let wv = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(row.add(16 * i).cast()) });
                *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(xv, wv));
            }
        }
        // The last row's last load ends 16 values past its row's `done`.
        let tail = done < depth && (j + 7) * depth + done + 16 <= filters.len();
        if tail {
            for (sum, row) in sums.iter_mut().zip(rows) {
                // SAFETY: bytes `done..done + 16` from each row start lie within `filters` (the
                // test just above, for the last and furthest row).
                let wv = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(row.add(done).cast()) });
                *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(last, wv));
            }
        }
        // [s0 s1 s2 s3 | the same] halves of the sums' lanes, then the halves added.
        let h = |a: usize| _mm256_hadd_epi32(sums[a], sums[a + 1]);
        let (lo, hi) = (_mm256_hadd_epi32(h(0), h(2)), _mm256_hadd_epi32(h(4), h(6)));
        let total = _mm256_add_epi32(
            _mm256_permute2x128_si256::<0x20>(lo, hi),
            _mm256_permute2x128_si256::<0x31>(lo, hi),
        );
        let total = _mm256_add_epi32(total, load_i32x8(&bias[j..].as_chunks::<8>().0[0]));
        let out = &mut acc[j..].as_chunks_mut::<8>().0[0];
        store_i32x8(total, out);
        if !tail {
            for (f, a) in out.iter_mut().enumerate() {
                let row = &filters[(j + f) * depth..][..depth];
                *a = input[done..]
                    .iter()
                    .zip(&row[done..])
                    .fold(*a, |a, (&x, &w)| a.wrapping_add(i32::from(w) * (i32::from(x) + offset)));
            }
        }
        j += 8;
    }
    for (c, a) in acc.iter_mut().enumerate().skip(j) {
        *a = dot_n(input, [&filters[c * depth..][..depth]], offset, [bias[c]])[0];
    }
}

/// [`super::InnerLoops::depthwise_rows`] 16 channels at a time, over the SSE2 loop's filter
/// layout (`pack_depthwise`: per block of eight channels, per pair of taps, channels 0..4
/// then 4..8 of the block, each tap pair interleaved): the staged inputs of taps `2k` and
/// `2k + 1` interleaved per 128-bit half (`VPUNPCKLWD`/`VPUNPCKHWD`), so one `VPMADDWD`
/// takes channels 0..4 and 8..12 of the 16, the other 4..8 and 12..16, each with two blocks'
/// filter halves side by side; reordered once per pixel. A last eight channels go on
/// 128-bit vectors, the last `n % 8` one at a time. Exact modulo 2^32 as the SSE2 loop.
#[target_feature(enable = "avx2")]
pub(crate) fn depthwise_rows(g: &DepthwiseRows<'_>, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
    let (n, taps) = (bias.len(), g.filter.h * g.filter.w);
    if n == 0 || taps == 0 {
        return;
    }
    let pairs = taps.div_ceil(2);
    let at = g.tap_offsets(n);
    let pixels = acc.len() / n;
    // One check for the staged values read below, through raw pointers: pixel `i`'s channel
    // `j < n` of tap `t` is at `i * stride * n + at[t] + j`, the last tap's furthest.
    let far = at[..taps].iter().max().copied().unwrap_or(0);
    assert!(pixels == 0 || (pixels - 1) * g.stride * n + far + n <= g.values.len());
    let packed = &packed[..n.div_ceil(8) * pairs * 16];
    let x = g.values.as_ptr();
    let block = |c: usize| &packed[c / 8 * pairs * 16..][..pairs * 16];
    let mut c = 0;
    while c + 16 <= n {
        let (w0, w1) = (block(c).as_ptr(), block(c + 8).as_ptr());
        let (b0, b1) =
            (load_i32x8(&bias[c..].as_chunks::<8>().0[0]), load_i32x8(&bias[c + 8..].as_chunks::<8>().0[0]));
        let (b_lo, b_hi) =
            (_mm256_permute2x128_si256::<0x20>(b0, b1), _mm256_permute2x128_si256::<0x31>(b0, b1));
        for (i, acc) in acc.chunks_exact_mut(n).enumerate() {
            let row = i * g.stride * n + c;
            // SAFETY: channels `c..c + 16 <= n` of tap `t` of pixel `i`: within `values` (the
            // assertion); `loadu` has no alignment requirement.
            let load = |t: usize| unsafe { _mm256_loadu_si256(x.add(row + at[t]).cast()) };
            let (mut lo, mut hi) = (b_lo, b_hi);
            for k in 0..pairs {
                let (a, b) = (load(2 * k), load(2 * k + 1));
                // SAFETY: pair `k < pairs` of a block is 16 values at `16 k`, within the
                // block's `16 * pairs`.
                let (wl, wh) = unsafe {
                    (
                        _mm256_loadu2_m128i(w1.add(16 * k).cast(), w0.add(16 * k).cast()),
                        _mm256_loadu2_m128i(w1.add(16 * k + 8).cast(), w0.add(16 * k + 8).cast()),
                    )
                };
                lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), wl));
                hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), wh));
            }
            let (out, _) = acc[c..][..16].as_chunks_mut::<8>();
            store_i32x8(_mm256_permute2x128_si256::<0x20>(lo, hi), &mut out[0]);
            store_i32x8(_mm256_permute2x128_si256::<0x31>(lo, hi), &mut out[1]);
        }
        c += 16;
    }
    if c + 8 <= n {
        let w = block(c).as_ptr();
        let (b, _) = bias[c..].as_chunks::<4>();
        let (b_lo, b_hi) = (load_i32x4(&b[0]), load_i32x4(&b[1]));
        for (i, acc) in acc.chunks_exact_mut(n).enumerate() {
            let row = i * g.stride * n + c;
            // SAFETY: as the 16 channels' loads, for channels `c..c + 8 <= n`.
            let load = |t: usize| unsafe { _mm_loadu_si128(x.add(row + at[t]).cast()) };
            let (mut lo, mut hi) = (b_lo, b_hi);
            for k in 0..pairs {
                let (a, b) = (load(2 * k), load(2 * k + 1));
                // SAFETY: as the 16 channels' filter loads.
                let (wl, wh) = unsafe {
                    (_mm_loadu_si128(w.add(16 * k).cast()), _mm_loadu_si128(w.add(16 * k + 8).cast()))
                };
                lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), wl));
                hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), wh));
            }
            let (halves, _) = acc[c..][..8].as_chunks_mut::<4>();
            store_i32x4(lo, &mut halves[0]);
            store_i32x4(hi, &mut halves[1]);
        }
        c += 8;
    }
    g.last_channels(packed, bias, acc, &at, c);
}

/// The eight int32 lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn store_i32x8(v: __m256i, out: &mut [i32; 8]) {
    // SAFETY: `out` is a valid, exclusive reference to 32 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// Eight int8 from an array of them, sign-extended to int32.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i8x8_as_i32(v: &[i8; 8]) -> __m256i {
    // SAFETY: `v` is a valid reference to 8 readable bytes, what `loadl_epi64` reads (any
    // alignment).
    _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(v.as_ptr().cast()) })
}

/// [`crate::add`] (`SUB` false) or [`crate::sub`] of whole groups of eight values (the caller
/// does the rest), for parameters [`AddParams::vector_exact`] accepts: inputs rescaled with
/// wrapping lanes, which cannot overflow there, so the results equal the scalar stage's. The
/// three rescalings ([`Scale8`]) are worked out once, and their fix for a multiplier of
/// `i32::MIN` runs only where one has it (in the loop, they had cost a residual add of
/// ResNet-8 a fifth of its instructions).
#[target_feature(enable = "avx2")]
pub(crate) fn add_sub<const SUB: bool>(p: &AddParams, x: &[[i8; 8]], y: &[[i8; 8]], out: &mut [[i8; 8]]) {
    let scales = [
        Scale8::new(_mm256_set1_epi32(p.input_multiplier[0]), _mm256_set1_epi32(p.input_shift[0])),
        Scale8::new(_mm256_set1_epi32(p.input_multiplier[1]), _mm256_set1_epi32(p.input_shift[1])),
        Scale8::new(_mm256_set1_epi32(p.output_multiplier), _mm256_set1_epi32(p.output_shift)),
    ];
    if scales.iter().any(|s| s.may_overflow) {
        add_sub_with::<SUB, true>(p, &scales, (x, y), out);
    } else {
        add_sub_with::<SUB, false>(p, &scales, (x, y), out);
    }
}

/// [`add_sub`]'s loop over its rescalings `scales` (inputs, output); `FIX` as
/// [`Scale8::apply`] takes it.
#[target_feature(enable = "avx2")]
#[inline]
fn add_sub_with<const SUB: bool, const FIX: bool>(
    p: &AddParams,
    scales: &[Scale8; 3],
    (x, y): (&[[i8; 8]], &[[i8; 8]]),
    out: &mut [[i8; 8]],
) {
    let offset = [_mm256_set1_epi32(p.input_offset[0]), _mm256_set1_epi32(p.input_offset[1])];
    let left = _mm_cvtsi32_si128(p.left_shift);
    // Clamping the rescaled sum to ±1024 before the offset (within ±128) keeps the clamped
    // result of the scalar stage's saturating addition.
    let (lo, hi) = (_mm256_set1_epi32(-1024), _mm256_set1_epi32(1024));
    let st = OutStage { offset: p.output_offset, min: p.activation.min, max: p.activation.max };
    for ((x, y), out) in x.iter().zip(y).zip(out) {
        let xv = _mm256_sll_epi32(_mm256_add_epi32(load_i8x8_as_i32(x), offset[0]), left);
        let yv = _mm256_sll_epi32(_mm256_add_epi32(load_i8x8_as_i32(y), offset[1]), left);
        // `vector_exact`: the input shifts are at most 0, so their stages shift nothing left.
        let xs = scales[0].apply_shifted::<FIX>(xv);
        let ys = scales[1].apply_shifted::<FIX>(yv);
        let raw = if SUB { _mm256_sub_epi32(xs, ys) } else { _mm256_add_epi32(xs, ys) };
        let v = scales[2].apply::<FIX>(raw);
        let v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
        *out = requantize_tail(v, &st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::InnerLoops;
    use crate::arch::portable::Portable;
    use crate::testutil::Lcg;

    #[test]
    fn output_stage_matches_scalar() {
        if !has_avx2() {
            std::println!("skipped: this CPU lacks AVX2");
            return;
        }
        let mut rng = Lcg(7);
        let edges = [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX];
        for round in 0..20_000 {
            let st = OutStage { offset: rng.range(-128, 127), min: -128, max: 127 };
            let pick = |rng: &mut Lcg, i: usize| {
                if round % 4 == 0 {
                    edges[(rng.next() as usize + i) % edges.len()]
                } else {
                    rng.next() as i32
                }
            };
            let acc: [i32; 8] = core::array::from_fn(|i| pick(&mut rng, i));
            let mult: [i32; 8] = core::array::from_fn(|i| pick(&mut rng, i + 3));
            let shift: [i32; 8] = core::array::from_fn(|_| rng.range(-31, 30));
            // SAFETY: `has_avx2` said the CPU has AVX2.
            let scale = unsafe { Scale8::new(load_i32x8(&mult), load_i32x8(&shift)) };
            // SAFETY: as above.
            let got = unsafe { requantize_tail(scale.apply::<true>(load_i32x8(&acc)), &st) };
            // Without the overflow's fix where no multiplier needs it.
            // SAFETY: as above.
            let unfixed = unsafe { requantize_tail(scale.apply::<false>(load_i32x8(&acc)), &st) };
            assert_eq!(scale.may_overflow, mult.contains(&i32::MIN));
            for i in 0..8 {
                let want = Portable::requantize(acc[i], mult[i], shift[i], st.offset, ActivationRange::INT8);
                assert_eq!(got[i], want, "acc {} mult {} shift {}", acc[i], mult[i], shift[i]);
                if !scale.may_overflow {
                    assert_eq!(unfixed[i], want, "acc {} mult {} shift {}", acc[i], mult[i], shift[i]);
                }
            }
        }
    }

    /// `conv_block_out` (the stage on the tiles' registers) against `conv_block` then the
    /// scalar output stage: every channel count's groups and their last partial eight, one
    /// to four pixels, output rows wider than the channels, every multiplier sign and size
    /// (`i32::MIN` among them, met by a sum of `i32::MIN`: the first group takes the fix for
    /// it, the others not), shifts at both ends, biases near int32's ends (the offset's add
    /// wrapping) and a clamp.
    #[test]
    fn block_out_matches_conv_block_and_the_scalar_stage() {
        if !has_avx2() {
            return std::eprintln!("skipped: this CPU lacks AVX2");
        }
        let mut rng = Lcg(11);
        let act = ActivationRange::new(-100, 120).unwrap();
        for n in [1, 7, 8, 9, 16, 17, 24, 40, 64] {
            for (pixels, per_filter) in [(4usize, 8usize), (3, 24), (1, 40), (2, 3)] {
                let stride = per_filter.next_multiple_of(8);
                let patches: std::vec::Vec<i16> =
                    (0..4 * stride).map(|_| rng.range(-255, 255) as i16).collect();
                let mut filter = rng.bytes(n * per_filter);
                // Channel 0 sums to i32::MIN (its bias), its multiplier's: the one product
                // that overflows.
                filter[..per_filter].fill(0);
                let mut packed = std::vec![0i16; n.next_multiple_of(8) * stride];
                // SAFETY: `has_avx2` said the CPU has AVX2.
                unsafe { pack_filters(&filter, per_filter, stride, n, &mut packed) };
                let mut bias: std::vec::Vec<i32> =
                    (0..n).map(|j| [i32::MAX - 9, i32::MIN + 9, -77, 1000, 5][(j + n) % 5]).collect();
                bias[0] = i32::MIN;
                let mults = [i32::MIN, i32::MAX, -(1 << 30), 1 << 30, 1, -1, 0x5555_5555, 0x4000_1234, 3];
                // `i32::MIN` only in the first group, so that the others run without the fix.
                let multiplier: std::vec::Vec<i32> =
                    (0..n).map(|j| if j < 8 { mults[j % 9] } else { mults[1 + j % 8] }).collect();
                let shift: std::vec::Vec<i32> = (0..n).map(|j| [-31, 30, 0, -7, 2, -1, -12][j % 7]).collect();
                let stage = OutputStage { multiplier: &multiplier, shift: &shift, offset: -5, act };
                let width = n + 3;
                let mut want = std::vec![0i8; pixels * width];
                let mut acc = std::vec![0i32; pixels * n];
                // SAFETY: as above.
                unsafe { conv_block(&patches, stride, &packed, &bias, &mut acc) };
                Portable::requantize_rows(&acc, &stage, &mut want, width);
                let mut got = std::vec![0i8; pixels * width];
                // SAFETY: as above.
                unsafe {
                    conv_block_out((&patches, stride, &packed, &bias), &stage, (&mut got, width, pixels))
                };
                assert_eq!(got, want, "{n} channels, {pixels} pixels, {per_filter} values");
            }
        }
    }
}
