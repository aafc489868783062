//! int8 kernels on 512-bit AVX-512 registers (F, BW, VL and VNNI), taken at run time where the
//! CPU has them ([`has_vnni`]); elsewhere the SSE2 and AVX2 loops run, with the same results.
//!
//! - Fully connected ([`fully_connected`]): the filter read in place, 16 output channels at a
//!   time, 64 values of a row per `VPDPBUSD` against the input made unsigned, the 16 sums
//!   reduced across lanes together; each channel's filter sum folded into its bias per call.
//!   Weights laid out ahead of time go to `vnni_fc` instead.
//! - Depthwise convolution ([`depthwise_conv2d`], depth multiplier 1): 64 channels at a time.
//!   Each quad of filter taps is four 64-byte loads of input values, made unsigned and
//!   interleaved by bytes and then by pairs of bytes (`unpack_quads`), so that each 32-bit
//!   lane holds one channel's four taps; `VPDPBUSD` multiplies them with the quad's filter
//!   values (laid out once per call by the same interleaving) and adds each channel's four
//!   products into its int32 sum. The lanes stay in that order through the output stage
//!   (whose constants are laid out so too), and saturating packs put them back. Input rows
//!   are staged with their padding and their columns split by the column stride, so that
//!   every filter tap reads a whole output row's values contiguously: a row goes as one
//!   span, 64 values at a time whatever the channel count.
//! - The output stage: TFLite's per-channel `MultiplyByQuantizedMultiplier` on 16 lanes, its
//!   two roundings one floor division of each lane's 64-bit product (`Group`), with each
//!   channel's constants worked out once per call; it leaves out multipliers of `i32::MIN`
//!   (whose doubling multiply can overflow), for which the kernels take the other loops.
//! - int8 add and subtract (`crate::add`, `crate::sub`), 16 values at a time; on long operands
//!   where the CPU has VBMI, 64 at a time by looking each operand's rescaled values up in
//!   tables of their bytes (`add_sub_lookup`).
//!
//! The input offset is not added per multiply: `Σ (x + offset)·w = Σ x·w + offset·Σ w` (or
//! with `x + 128` for `VPDPBUSD`'s unsigned operand), so each channel's bias takes the
//! difference once per call, and taps in the padding read the input zero point (whose
//! `x + offset` is 0). Sums wrap modulo 2^32 as every other path's do, so the results are
//! bit-exact with them.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::avx2::{has_avx2, has_vbmi, has_vnni};
use crate::add::AddParams;
use crate::depthwise::DepthwiseParams;
use crate::error::DspError;
use crate::filled::Filled;
use crate::fully_connected::FullyConnectedParams;
use crate::prepack::check_fully_connected;
use crate::quant::{PerChannel, check_per_channel};
use crate::shape::{Hw, origin};

/// Most filter taps of [`depthwise_conv2d`]'s loop (larger filters take the SSE2 one).
const MAX_TAPS: usize = 64;
/// Channels per run of the depthwise loop: their filters laid out and output stage worked out
/// once (the layout 16 KiB of stack).
pub(crate) const RUN: usize = 256;
/// Channels per step of the depthwise loop.
const BLOCK: usize = 64;

/// Fully connected layer with per-channel weights (TFLite's `FullyConnectedPerChannel`) on the
/// best loops for the CPU: AVX-512 VNNI where it has them, else [`super::x86`]'s. The results
/// are the same. See [`FullyConnectedParams`] for the layouts.
pub fn fully_connected(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    fully_connected_prepacked(p, input, (filter, bias, None), quant, output)
}

/// [`fully_connected`] with the filter and bias also laid out ahead of time by
/// [`crate::prepack::pack_fully_connected`] (`packed`), which the VNNI loop
/// (`vnni_fc`) and, on AVX2 without VNNI, the AVX2 loop (`avx2_fc`, for
/// rows of at most 4,096 values) then read instead of the filter; other loops read `filter`
/// and `bias`. An error if `packed` is not the layer's layout's length (or the layer has none);
/// its contents are trusted to be the layout of `filter` and `bias`.
pub fn fully_connected_prepacked(
    p: &FullyConnectedParams,
    input: &[i8],
    (filter, bias, packed): (&[i8], Option<&[i32]>, Option<&[u8]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    // The arguments are checked here where a layout comes with them or the VNNI loops may
    // run; else the SSE2/AVX2 kernel checks them (as in `run_time_choice!`).
    let vnni = has_vnni() && p.input_depth > 0 && p.output_depth > 0;
    if vnni || packed.is_some() {
        check_per_channel(p, input, filter, bias, &quant, output)?;
    }
    let packed = match packed {
        Some(packed) => Some((check_fully_connected(p, packed)?, packed)),
        None => None,
    };
    if vnni && !quant.multiplier.contains(&i32::MIN) {
        match packed {
            // SAFETY: `has_vnni` said the CPU has the target features of `fully_connected`.
            Some(laid) => unsafe { super::vnni_fc::fully_connected(p, input, laid, quant, output) },
            // SAFETY: as above, those of `fully_connected_rows`.
            None => unsafe { fully_connected_rows(p, input, (filter, bias), quant, output) },
        }
        return Ok(());
    }
    if let Some(laid) = packed
        && has_avx2()
        && p.input_depth.div_ceil(4) <= super::avx2_fc::MAX_QUADS
    {
        // SAFETY: the CPU has AVX2 (checked just above); the arguments and the layout's
        // length were checked above (a layout came with them).
        unsafe { super::avx2_fc::fully_connected(p, input, laid, quant, output) };
        return Ok(());
    }
    super::x86::fully_connected(p, input, filter, bias, quant, output)
}

/// Depthwise convolution with per-channel weights (TFLite's `DepthwiseConvPerChannel`) on the
/// best loops for the CPU: AVX-512 where it has them and the depth multiplier is 1 (with at
/// most 64 filter taps), else AVX2's (`avx2_dw`) where it has those, the depth multiplier is
/// 1 and the channels come in eights (at most 32 taps), else [`super::x86`]'s. The results
/// are the same. See [`DepthwiseParams`] for the layouts.
pub fn depthwise_conv2d(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    // The CPU first: elsewhere, the fallback checks the arguments itself (checking them here
    // too, and scanning the multipliers, had cost an int8 autoencoder's small layers 4% of
    // their time).
    if has_vnni() {
        check_per_channel(p, input, filter, bias, &quant, output)?;
        let taps = p.window.filter.h * p.window.filter.w;
        if p.depth_multiplier == 1
            && taps <= MAX_TAPS
            && p.input.c > 0
            && !quant.multiplier.contains(&i32::MIN)
        {
            // SAFETY: `has_vnni` said the CPU has the target features of `depthwise`.
            unsafe { depthwise(p, input, filter, bias, quant, output) };
            return Ok(());
        }
    } else if has_avx2() {
        check_per_channel(p, input, filter, bias, &quant, output)?;
        if super::avx2_dw::fits(p) {
            // SAFETY: the CPU has AVX2 (`has_avx2`); the arguments were checked just above.
            unsafe { super::avx2_dw::depthwise(p, input, filter, bias, quant, output) };
            return Ok(());
        }
    }
    super::x86::depthwise_conv2d(p, input, filter, bias, quant, output)
}

/// The fully connected loop, for arguments `fully_connected_prepacked` has checked (nonzero
/// depths). The filter is read in place, row by row: 16 output channels at a time, each a
/// row of 64 filter values per `VPDPBUSD` against the input row's values made unsigned
/// (`x + 128`), the 16 sums reduced across lanes together ([`reduce16`]). Each channel's
/// filter sum, times `offset − 128`, is folded into its bias per run of channels:
/// `Σ (x + offset)·w = Σ (x + 128)·w + (offset − 128)·Σ w`, modulo 2^32 as the other paths.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn fully_connected_rows(
    p: &FullyConnectedParams,
    input: &[i8],
    (filter, bias): (&[i8], Option<&[i32]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (depth, oc_n) = (p.input_depth, p.output_depth);
    let offset = -p.input_zero_point;
    let act = (p.output_zero_point, p.activation.min, p.activation.max);
    let mut stage = Requantize::new();
    // Per group of 16 channels: the bias with the unsigned inputs' correction.
    let mut folded = Filled::<[i32; 16], { RUN / 16 }>::new();
    for c0 in (0..oc_n).step_by(RUN) {
        let n = (oc_n - c0).min(RUN);
        let rows = &filter[c0 * depth..][..n * depth];
        stage.fill(&quant, c0, n, n);
        let factor = _mm512_set1_epi32(offset.wrapping_sub(128));
        for (g, folded) in folded.reset(n.div_ceil(16), [0; 16]).iter_mut().enumerate() {
            let k = (n - 16 * g).min(16);
            let filter_sums = group_sums(&rows[16 * g * depth..], depth, k, None);
            let b = bias.map_or(_mm512_setzero_si512(), |b| load_i32x16_partial(&b[c0 + 16 * g..][..k]));
            store_i32x16(_mm512_add_epi32(b, _mm512_mullo_epi32(filter_sums, factor)), folded);
        }
        for (x, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(oc_n)) {
            for g in (0..n).step_by(16) {
                let k = (n - g).min(16);
                let acc = group_sums(&rows[g * depth..], depth, k, Some(x));
                let acc = _mm512_add_epi32(acc, load_i32x16(&folded.get()[g / 16], 0));
                store_i8x16(stage.apply(acc, g, act), &mut out[c0 + g..][..k]);
            }
        }
    }
}

/// The sums of `count` (at most 16) filter rows (`depth` values each, from the first of
/// `rows`) times the input row `x` made unsigned, or times 1 where `x` is `None` (the rows'
/// own sums): lane `r` holds row `r`'s; lanes past `count` are not to be used.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn group_sums(rows: &[i8], depth: usize, count: usize, x: Option<&[i8]>) -> __m512i {
    let mut acc = [_mm512_setzero_si512(); 16];
    let flip = _mm512_set1_epi8(-128);
    // Where each row starts; rows past `count` repeat the first (their sums are not used): no
    // branch in the loops, whose accumulators then stay in registers.
    let mut at = [0usize; 16];
    for (r, at) in at.iter_mut().enumerate().take(count) {
        *at = r * depth;
    }
    // One check for every load below: each reads within its row, and the rows lie in `rows`.
    assert!(count >= 1 && count * depth <= rows.len() && x.is_none_or(|x| x.len() >= depth));
    let whole = depth / 64;
    for k in 0..whole {
        let xu = match x {
            Some(x) => _mm512_xor_si512(load_i8x64(&x.as_chunks::<64>().0[k]), flip),
            None => _mm512_set1_epi8(1),
        };
        for r in 0..16 {
            // SAFETY: `at[r] + 64 * k + 64 <= at[r] + depth <= rows.len()` (the assertion);
            // `loadu` has no alignment requirement.
            let w = unsafe { _mm512_loadu_si512(rows.as_ptr().add(at[r] + 64 * k).cast()) };
            acc[r] = _mm512_dpbusd_epi32(acc[r], xu, w);
        }
    }
    if !depth.is_multiple_of(64) {
        // Lanes past the rows' ends: zero filter values (times 128 or 1).
        let from = 64 * whole;
        let xu = match x {
            Some(x) => _mm512_xor_si512(load_i8x64_partial(&x[from..depth]), flip),
            None => _mm512_set1_epi8(1),
        };
        for r in 0..16 {
            let w = load_i8x64_partial(&rows[at[r] + from..at[r] + depth]);
            acc[r] = _mm512_dpbusd_epi32(acc[r], xu, w);
        }
    }
    reduce16(acc)
}

/// 64 int8 from an array of them.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_i8x64(v: &[i8; 64]) -> __m512i {
    // SAFETY: `v` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
}

/// Lane `j` of the result: the sum of `v[j]`'s 16 lanes (modulo 2^32), by interleaving and
/// adding pairs of vectors: 16 → 8 → 4 within 128-bit lanes, then across them.
#[target_feature(enable = "avx512f")]
#[inline]
fn reduce16(v: [__m512i; 16]) -> __m512i {
    // (Loops, not `array::from_fn`: a closure with this function's target features cannot be
    // inlined into `from_fn`, which lacks them, so each lane group was a call.)
    // Per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3] of each pair a, b.
    let mut t = [_mm512_setzero_si512(); 8];
    for (i, t) in t.iter_mut().enumerate() {
        let (a, b) = (v[2 * i], v[2 * i + 1]);
        *t = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    }
    // Per 128-bit lane q: the four vectors' sums over lane q's values.
    let mut u = [_mm512_setzero_si512(); 4];
    for (i, u) in u.iter_mut().enumerate() {
        let (a, b) = (t[2 * i], t[2 * i + 1]);
        *u = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    }
    // Across the 128-bit lanes, twice.
    let (w0, w1) = (across(u[0], u[1]), across(u[2], u[3]));
    across(w0, w1)
}

/// `[a0 + a1, a2 + a3, b0 + b1, b2 + b3]` of the 128-bit lanes of `a` and `b`.
#[target_feature(enable = "avx512f")]
#[inline]
fn across(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(_mm512_shuffle_i32x4::<0b10_00_10_00>(a, b), _mm512_shuffle_i32x4::<0b11_01_11_01>(a, b))
}

/// The first `min(v.len(), 64)` values of `v`, the other lanes zero.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn load_i8x64_partial(v: &[i8]) -> __m512i {
    let len = v.len().min(64);
    let mask = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
    // SAFETY: the masked load reads only the lanes of `mask`, the first `len`, all within `v`;
    // lanes off the mask are not accessed (and cannot fault).
    unsafe { _mm512_maskz_loadu_epi8(mask, v.as_ptr()) }
}

/// The depthwise loop, for arguments `depthwise_conv2d` has checked. Channels go in runs of
/// [`RUN`], each with its filters, biases and output stage laid out ([`Laid`]). Where a
/// layout repeating every `lcm(channels, 64)` lanes fits a run and a
/// band of padded input rows fits [`ROWS_BYTES`], whole output rows go as one span each
/// ([`depthwise_rows`]); otherwise each output pixel reads its taps ([`Taps`]), the run's
/// channels [`BLOCK`] at a time.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn depthwise(
    p: &DepthwiseParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, c_n) = (p.input, p.window, p.input.c);
    let taps = w.filter.h * w.filter.w;
    let padding = [p.input_zero_point as i8; RUN];
    let mut laid = Laid {
        packed: Filled::new(),
        folded: Filled::new(),
        stage: Requantize::new(),
        quads: taps.div_ceil(4),
        period: BLOCK,
        act: (p.output_zero_point, p.activation.min, p.activation.max),
    };
    let repeat = c_n / gcd(c_n, BLOCK) * BLOCK;
    if repeat <= RUN
        && let Some(rows) = Rows::of(p)
    {
        laid.fill(p, (filter, bias, &quant), (0, c_n), repeat);
        depthwise_rows(p, &rows, input, &laid, output);
        return;
    }
    // Each tap's distance from the first, in input values.
    let mut tap_at = [0usize; MAX_TAPS];
    for (t, at) in tap_at[..taps].iter_mut().enumerate() {
        *at = ((t / w.filter.w) * w.dilation.h * s.w + (t % w.filter.w) * w.dilation.w) * c_n;
    }
    // Output columns and rows whose taps all lie in the image.
    let inner = |out: usize, stride: usize, pad: usize, filter: usize, dilation: usize, size: usize| {
        let o = origin(out, stride, pad);
        o >= 0 && o as usize + (filter - 1) * dilation < size
    };
    let mut taps_of = Taps::new(&padding);
    for c0 in (0..c_n).step_by(RUN) {
        let n = (c_n - c0).min(RUN);
        laid.fill(p, (filter, bias, &quant), (c0, n), n);
        let mut pixel = 0;
        for b in 0..s.n {
            for oy in 0..w.output.h {
                let y0 = origin(oy, w.stride.h, w.pad.h);
                let rows_in = inner(oy, w.stride.h, w.pad.h, w.filter.h, w.dilation.h, s.h);
                for ox in 0..w.output.w {
                    let x0 = origin(ox, w.stride.w, w.pad.w);
                    if rows_in && inner(ox, w.stride.w, w.pad.w, w.filter.w, w.dilation.w, s.w) {
                        let first = ((b * s.h + y0 as usize) * s.w + x0 as usize) * c_n + c0;
                        taps_of.inside(input, first, &tap_at[..taps], n);
                    } else {
                        taps_of.clipped(input, p, (b, y0, x0), c0, n);
                    }
                    laid.run::<false>(&taps_of, &mut output[(pixel + ox) * c_n + c0..][..n]);
                }
                pixel += w.output.w;
            }
        }
    }
}

/// Bytes of the stack buffer [`depthwise_rows`] stages padded input rows in.
const ROWS_BYTES: usize = 64 * 1024;
/// Largest column stride [`depthwise_rows`] splits rows for.
const MAX_PHASES: usize = 4;

/// How [`depthwise_rows`] stages a band of input rows: each row padded (with the input zero
/// point) to the `wp` columns the outputs read, its columns split by their remainder modulo
/// the column stride (`phases`, each holding `count` columns from `start`), so that each
/// filter tap reads the same phase for every output pixel of a row, contiguously.
struct Rows {
    /// Values per padded row (`wp` columns of all channels).
    row_values: usize,
    /// Output rows per band.
    band: usize,
    /// Where each phase's columns start in a row, in columns.
    start: [usize; MAX_PHASES],
    /// Each filter tap's distance from a band's first output row's first value.
    tap_at: [usize; MAX_TAPS],
}

impl Rows {
    /// The staging of `p`'s rows, if a band of at least one output row fits [`ROWS_BYTES`]
    /// and the column stride is at most [`MAX_PHASES`].
    fn of(p: &DepthwiseParams) -> Option<Rows> {
        let (c, w) = (p.input.c, p.window);
        let (sw, Hw { w: wp, .. }) = (w.stride.w, w.padded_input());
        let row_values = wp.checked_mul(c)?;
        let needed = (w.filter.h - 1).checked_mul(w.dilation.h)? + 1;
        let fit = ROWS_BYTES.checked_div(row_values)?;
        if sw > MAX_PHASES || fit < needed {
            return None;
        }
        let band = ((fit - needed) / w.stride.h + 1).min(w.output.h);
        let mut start = [0; MAX_PHASES];
        for phase in 1..sw {
            start[phase] = start[phase - 1] + (wp - (phase - 1)).div_ceil(sw);
        }
        let mut tap_at = [0; MAX_TAPS];
        for (t, at) in tap_at[..w.filter.h * w.filter.w].iter_mut().enumerate() {
            let (ky, kx) = (t / w.filter.w * w.dilation.h, t % w.filter.w * w.dilation.w);
            *at = ky * row_values + (start[kx % sw] + kx / sw) * c;
        }
        Some(Rows { row_values, band, start, tap_at })
    }
}

/// The depthwise loop by output rows: per band of output rows, their input rows staged as
/// [`Rows`] says (made unsigned as they are copied), then each output row's `width *
/// channels` values as one span of `laid`'s lanes (laid out for the channel each lane meets).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn depthwise_rows(p: &DepthwiseParams, rows: &Rows, input: &[i8], laid: &Laid, output: &mut [i8]) {
    let (s, w, c) = (p.input, p.window, p.input.c);
    let (sw, hp) = (w.stride.w, w.padded_input().h);
    // Staged made unsigned (`x + 128`, the sign bit flipped) as `VPDPBUSD` reads them, once
    // per value rather than once per tap that reads it; the padding is the zero point so
    // flipped.
    let zero_point = (p.input_zero_point as i8) ^ i8::MIN;
    let padding = [zero_point; RUN];
    let mut staged = Filled::<i8, ROWS_BYTES>::new();
    let band_input = |n: usize| (n - 1) * w.stride.h + (w.filter.h - 1) * w.dilation.h + 1;
    let width = w.output.w * c;
    for b in 0..s.n {
        for oy0 in (0..w.output.h).step_by(rows.band) {
            let band = (w.output.h - oy0).min(rows.band);
            let first_row = oy0 * w.stride.h;
            let n_rows = band_input(band).min(hp - first_row);
            // Each value written once: the padding (rows and columns outside the image) with
            // the zero point, the rest flipped from the input (zeroing whole bands first had
            // cost an int8 DS-CNN 1% of its time).
            let stage = |staged: &mut [MaybeUninit<i8>]| {
                let pad = MaybeUninit::new(zero_point);
                for (r, row) in staged.chunks_exact_mut(rows.row_values).enumerate() {
                    let iy = (first_row + r) as isize - w.pad.h as isize;
                    if iy < 0 || iy as usize >= s.h {
                        row.fill(pad);
                        continue;
                    }
                    let src = &input[(b * s.h + iy as usize) * s.w * c..][..s.w * c];
                    // Padded column x holds input column x - pad.w; phase x % sw, column x / sw.
                    let (x0, x1) = (w.pad.w, (w.pad.w + s.w).min(row.len() / c));
                    if sw == 1 {
                        let (left, rest) = row.split_at_mut(x0 * c);
                        let (inside, right) = rest.split_at_mut((x1 - x0) * c);
                        left.fill(pad);
                        flip_bytes(&src[..inside.len()], inside);
                        right.fill(pad);
                        continue;
                    }
                    // Phase by phase: no division per column.
                    row.fill(pad);
                    for (phase, &start) in rows.start[..sw].iter().enumerate() {
                        let first = x0 + (phase + sw - x0 % sw) % sw;
                        let mut at = (start + first / sw) * c;
                        for x in (first..x1).step_by(sw) {
                            flip_bytes(&src[(x - x0) * c..][..c], &mut row[at..at + c]);
                            at += c;
                        }
                    }
                }
            };
            // SAFETY: `stage` writes every value of each of the `n_rows` whole rows: a row
            // outside the image by `fill`; with a column stride of 1, its columns before `x0`
            // and from `x1` by `fill` and the `(x1 - x0) * c` between by `flip_bytes` (which
            // writes as many as its source holds, here `inside.len()`); else by `fill` first.
            let staged = unsafe { staged.reset_with(n_rows * rows.row_values, stage) };
            let mut taps = Taps::new(&padding);
            for oy in oy0..oy0 + band {
                let first = (oy - oy0) * w.stride.h * rows.row_values;
                taps.inside(staged, first, &rows.tap_at[..w.filter.h * w.filter.w], width);
                laid.run::<true>(&taps, &mut output[((b * w.output.h + oy) * w.output.w) * c..][..width]);
            }
        }
    }
}

/// A byte type: `i8`, `u8` or an `i8` not yet written (where [`flip_bytes`] writes).
pub(super) trait Byte: Copy {}
impl Byte for i8 {}
impl Byte for u8 {}
impl Byte for MaybeUninit<i8> {}

/// The values of `src` into `dst` (as many as both hold) with each sign bit flipped (`x +
/// 128` as an unsigned byte, as `VPDPBUSD` reads it), 64 at a time, the rest in one masked
/// move (a `memcpy` call per pixel cost more than the move).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
pub(super) fn flip_bytes<B: Byte>(src: &[i8], dst: &mut [B]) {
    let n = src.len().min(dst.len());
    let sign = _mm512_set1_epi8(i8::MIN);
    let ((src, src_rest), (dst, dst_rest)) = (src[..n].as_chunks::<64>(), dst[..n].as_chunks_mut::<64>());
    for (s, d) in src.iter().zip(dst) {
        // SAFETY: `s` holds 64 readable bytes and `d` 64 writable ones (`B` is a byte type:
        // any bit pattern is valid), exclusively borrowed; `loadu` and `storeu` have no
        // alignment requirement.
        unsafe {
            _mm512_storeu_si512(
                d.as_mut_ptr().cast(),
                _mm512_xor_si512(_mm512_loadu_si512(s.as_ptr().cast()), sign),
            )
        };
    }
    // The last `n % 64` bytes (as many in both rests).
    let mask = (1u64 << src_rest.len()) - 1;
    // SAFETY: the masked load and store touch only the lanes of `mask`, the first
    // `src_rest.len()` (below 64), all within `src_rest` and `dst_rest` (`dst_rest`
    // exclusively borrowed, of a byte type); lanes off the mask are not accessed.
    unsafe {
        let v = _mm512_maskz_loadu_epi8(mask, src_rest.as_ptr());
        _mm512_mask_storeu_epi8(dst_rest.as_mut_ptr().cast(), mask, _mm512_xor_si512(v, sign));
    }
}

/// Greatest common divisor.
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// What the depthwise loop lays out per run of channels, for lanes repeating every
/// `period` (a multiple of [`BLOCK`]): per block of 64 lanes and quad of filter taps, the
/// quad's values of each lane's channel in the order [`unpack_quads`] leaves the inputs in
/// (lane `16L + 4k + j` of the block in vector `k`, 32-bit lane `4L + j`), and each lane's
/// bias (with the unsigned inputs' correction folded in) and output stage in that order.
struct Laid {
    packed: Filled<[[i8; 64]; 4], { RUN / BLOCK * MAX_TAPS / 4 }>,
    folded: Filled<i32, RUN>,
    stage: Requantize,
    /// Tap quads.
    quads: usize,
    /// Lanes before the layout repeats (a multiple of [`BLOCK`], at most [`RUN`]).
    period: usize,
    /// Output offset, activation minimum and maximum.
    act: (i32, i32, i32),
}

/// Four vectors of 16 int32, lanes `0..64` in order, in the order of [`unpack_quads`] (and
/// of [`Laid`]): lane `16L + 4k + j` to lane `16k + 4L + j`, a transpose of their 128-bit
/// quarters.
#[target_feature(enable = "avx512f")]
#[inline]
fn to_vector_lanes(v: [__m512i; 4]) -> [__m512i; 4] {
    // Quarters 0 and 1 of the first two, 2 and 3 of them; likewise of the last two.
    let (a01, a23) = (
        _mm512_shuffle_i32x4::<0b01_00_01_00>(v[0], v[1]),
        _mm512_shuffle_i32x4::<0b11_10_11_10>(v[0], v[1]),
    );
    let (b01, b23) = (
        _mm512_shuffle_i32x4::<0b01_00_01_00>(v[2], v[3]),
        _mm512_shuffle_i32x4::<0b11_10_11_10>(v[2], v[3]),
    );
    [
        _mm512_shuffle_i32x4::<0b10_00_10_00>(a01, b01),
        _mm512_shuffle_i32x4::<0b11_01_11_01>(a01, b01),
        _mm512_shuffle_i32x4::<0b10_00_10_00>(a23, b23),
        _mm512_shuffle_i32x4::<0b11_01_11_01>(a23, b23),
    ]
}

impl Laid {
    /// Lays out `lanes` (at most [`RUN`]) lanes for channels `c0..c0 + n`, lane `l` taking
    /// channel `c0 + l % n`; lanes past them up to the next block are zero.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    fn fill(
        &mut self,
        p: &DepthwiseParams,
        (filter, bias, quant): (&[i8], Option<&[i32]>, &PerChannel<'_>),
        (c0, n): (usize, usize),
        lanes: usize,
    ) {
        let (c_n, taps) = (p.input.c, p.window.filter.h * p.window.filter.w);
        self.period = lanes.next_multiple_of(BLOCK);
        let (period, blocks) = (self.period, self.period / BLOCK);
        // The filters: per quad, each tap's value per lane, interleaved per block as the
        // inputs are.
        let out = self.packed.reset(blocks * self.quads, [[0; 64]; 4]);
        let mut rows = [[0i8; RUN]; 4];
        for q in 0..self.quads {
            for (t, row) in rows.iter_mut().enumerate() {
                let tap = 4 * q + t;
                if tap >= taps {
                    row[..period].fill(0);
                    continue;
                }
                let values = &filter[tap * c_n + c0..][..n];
                for repeat in row[..lanes].chunks_mut(n) {
                    repeat.copy_from_slice(&values[..repeat.len()]);
                }
                row[lanes..period].fill(0);
            }
            for b in 0..blocks {
                let v = [0, 1, 2, 3].map(|t| load_i8x64(&rows[t].as_chunks::<BLOCK>().0[b]));
                for (dst, v) in out[b * self.quads + q].iter_mut().zip(unpack_quads(v)) {
                    store_i8x64(v, dst);
                }
            }
        }
        // Each channel's filter sum, taps outermost (rows of the filter are contiguous). (It
        // and the per-lane rows below are written only as far as the run uses them: zeroing
        // whole ones, 4 KB, cost an int8 DS-CNN about 1% of its time.)
        let mut sums = Filled::<i32, RUN>::new();
        let sums = sums.reset(n, 0);
        for tap in filter.chunks_exact(c_n).take(taps) {
            for (sum, &f) in sums.iter_mut().zip(&tap[c0..]) {
                *sum += i32::from(f);
            }
        }
        // `Σ (x + offset)·w = Σ (x + 128)·w + (offset − 128)·Σ w`: each channel's folded bias.
        let factor = (-p.input_zero_point).wrapping_sub(128);
        for (j, sum) in sums.iter_mut().enumerate() {
            *sum = bias.map_or(0, |b| b[c0 + j]).wrapping_add(factor.wrapping_mul(*sum));
        }
        // Each lane's folded bias, multiplier and shift: in lane order (whole repeats of the
        // run's channels, zeros past them), then a block at a time in registers to the order
        // of `unpack_quads` (a lane at a time, they took 40% of this function's time).
        let mut straight = [Filled::<i32, RUN>::new(), Filled::new(), Filled::new()];
        let per_channel = [&sums[..], &quant.multiplier[c0..][..n], &quant.shift[c0..][..n]];
        for (values, row) in per_channel.into_iter().zip(&mut straight) {
            for repeat in row.reset(period, 0)[..lanes].chunks_mut(n) {
                repeat.copy_from_slice(&values[..repeat.len()]);
            }
        }
        let straight = straight.each_ref().map(|row| row.get());
        let high = straight[2][..lanes].iter().all(|&s| s < 0);
        let folded = self.folded.reset(period, 0);
        let block =
            |row: &[i32], b: usize| to_vector_lanes([0, 1, 2, 3].map(|k| load_i32x16(row, 64 * b + 16 * k)));
        // Each block's four groups from one transpose of its multipliers and of its shifts.
        let groups = (0..blocks).flat_map(|b| {
            let (m, shift) = (block(straight[1], b), block(straight[2], b));
            (0..4).map(move |k| (m[k], shift[k]))
        });
        self.stage.fill_groups(blocks * 4, high, groups);
        for b in 0..blocks {
            for (k, v) in block(straight[0], b).into_iter().enumerate() {
                let (out, _) = folded[64 * b + 16 * k..][..16].as_chunks_mut::<16>();
                store_i32x16(v, &mut out[0]);
            }
        }
    }

    /// Lanes `0..taps.len` of `taps` through the sums and the output stage into `out`, block
    /// `k` with the layout's block `k % (period / 64)`: the stage's results in the order of
    /// [`unpack_quads`], which saturating packs undo, the offset added first in int32.
    /// `FLIPPED`: the taps' values are unsigned already (`x + 128`, as `VPDPBUSD` reads them).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    #[inline]
    fn run<const FLIPPED: bool>(&self, taps: &Taps<'_>, out: &mut [i8]) {
        if self.stage.high {
            self.run_in::<true, FLIPPED>(taps, out)
        } else {
            self.run_in::<false, FLIPPED>(taps, out)
        }
    }

    /// [`Laid::run`], its stage's [`Requantize::high`] being `HIGH`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    #[inline]
    fn run_in<const HIGH: bool, const FLIPPED: bool>(&self, taps: &Taps<'_>, out: &mut [i8]) {
        let len = out.len().min(taps.len);
        let (blocks, quads) = (self.period / BLOCK, self.quads);
        let (offset, min, max) = self.act;
        // Results at most `offset` stay at most `min` through the saturating packs
        // (`Group::scale_for`).
        let floor = (offset, min);
        let offset = _mm512_set1_epi32(offset);
        let (min, max) = (_mm512_set1_epi8(min as i8), _mm512_set1_epi8(max as i8));
        let (packed, folded) = (self.packed.get(), self.folded.get());
        let mut b = 0;
        for x0 in (0..len).step_by(BLOCK) {
            let sums = taps.quad_sums::<FLIPPED>(x0, &packed[b * quads..][..quads]);
            let lane = BLOCK * b;
            // A loop, not a closure, which LLVM left as a call.
            let mut q = sums;
            for (k, q) in q.iter_mut().enumerate() {
                let sums = _mm512_add_epi32(*q, load_i32x16(folded, lane + 16 * k));
                *q = _mm512_add_epi32(self.stage.group(lane + 16 * k).scale_in::<HIGH>(sums, floor), offset);
            }
            let v = _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
            store_i8x64_partial(_mm512_min_epi8(_mm512_max_epi8(v, min), max), &mut out[x0..len]);
            b = if b + 1 == blocks { 0 } else { b + 1 };
        }
    }
}

/// Four vectors of 64 bytes (one per filter tap of a quad) as `VPDPBUSD`'s quads: value
/// `16L + 4k + j` of each in 32-bit lane `4L + j` of vector `k`, its four taps' bytes in
/// order. Saturating packs of the four (`VPACKSSDW` of 0 and 1, of 2 and 3, then `VPACKSSWB`)
/// return lanes to their order.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn unpack_quads(v: [__m512i; 4]) -> [__m512i; 4] {
    let (low01, high01) = (_mm512_unpacklo_epi8(v[0], v[1]), _mm512_unpackhi_epi8(v[0], v[1]));
    let (low23, high23) = (_mm512_unpacklo_epi8(v[2], v[3]), _mm512_unpackhi_epi8(v[2], v[3]));
    [
        _mm512_unpacklo_epi16(low01, low23),
        _mm512_unpackhi_epi16(low01, low23),
        _mm512_unpacklo_epi16(high01, high23),
        _mm512_unpackhi_epi16(high01, high23),
    ]
}

/// Sixteen int32 as a vector constant.
const fn lanes(v: [i32; 16]) -> __m512i {
    // SAFETY: `[i32; 16]` and `__m512i` have the same size (64 bytes) and every bit pattern is
    // valid for both.
    unsafe { core::mem::transmute(v) }
}

/// Where each filter tap of one output pixel reads a run's `len` channels: in the input, or
/// in the padding's row of zero points. Invariant: each of the first `taps` pointers (and the
/// ones past them to a whole quad, copies of the last) points to `len` readable values that
/// live as long as `'a`.
struct Taps<'a> {
    at: [*const i8; MAX_TAPS + 3],
    taps: usize,
    len: usize,
    padding: &'a [i8; RUN],
}

impl<'a> Taps<'a> {
    /// No taps yet.
    fn new(padding: &'a [i8; RUN]) -> Taps<'a> {
        Taps { at: [padding.as_ptr(); MAX_TAPS + 3], taps: 0, len: 0, padding }
    }
    /// A pixel whose taps all lie in the image: tap `t` reads `input[first + tap_at[t]..]`.
    /// Panics if one of them has fewer than `len` values.
    fn inside(&mut self, input: &'a [i8], first: usize, tap_at: &[usize], len: usize) {
        let last = tap_at.iter().max().map_or(first, |&a| first + a);
        // One check for all taps: the farthest ends within `input`.
        assert!(last + len <= input.len());
        for (at, &d) in self.at.iter_mut().zip(tap_at) {
            *at = input.as_ptr().wrapping_add(first + d);
        }
        self.finish(tap_at.len(), len);
    }

    /// Any pixel, each tap checked: `(b, y0, x0)` is its first tap's position (which may lie
    /// in the padding), `c0` the run's first channel.
    fn clipped(
        &mut self,
        input: &'a [i8],
        p: &DepthwiseParams,
        (b, y0, x0): (usize, isize, isize),
        c0: usize,
        len: usize,
    ) {
        let (s, w) = (p.input, p.window);
        for fy in 0..w.filter.h {
            let iy = y0 + (fy * w.dilation.h) as isize;
            for fx in 0..w.filter.w {
                let ix = x0 + (fx * w.dilation.w) as isize;
                let inside = (0..s.h as isize).contains(&iy) && (0..s.w as isize).contains(&ix);
                self.at[fy * w.filter.w + fx] = if inside {
                    let at = ((b * s.h + iy as usize) * s.w + ix as usize) * s.c + c0;
                    input[at..][..len].as_ptr()
                } else {
                    // (Panics if `len` is over [`RUN`].)
                    self.padding[..len].as_ptr()
                };
            }
        }
        self.finish(w.filter.h * w.filter.w, len);
    }

    fn finish(&mut self, taps: usize, len: usize) {
        assert!(taps > 0 && taps <= MAX_TAPS);
        let last = self.at[taps - 1];
        self.at[taps..taps.next_multiple_of(4)].fill(last);
        (self.taps, self.len) = (taps, len);
    }

    /// One block's sums over every tap quad: values `x0..x0 + 64` of each tap's, made
    /// unsigned (`x + 128`; already so where `FLIPPED`), times the block's laid-out quads of filter values (`weights`,
    /// four vectors per quad), in the order of [`unpack_quads`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    #[inline]
    fn quad_sums<const FLIPPED: bool>(&self, x0: usize, weights: &[[[i8; 64]; 4]]) -> [__m512i; 4] {
        let k = self.len.saturating_sub(x0).min(64);
        let mask = if k == 64 { u64::MAX } else { (1u64 << k) - 1 };
        let flip = _mm512_set1_epi8(i8::MIN);
        let mut acc = [_mm512_setzero_si512(); 4];
        for (quad, w) in self.at[..4 * weights.len()].as_chunks::<4>().0.iter().zip(weights) {
            // SAFETY: each pointer points to `self.len` readable values (the invariant; the
            // quads' padding pointers copy the last tap's), and the masked loads read only
            // lanes `x0..x0 + k` with `x0 + k <= self.len`; lanes off the mask are not
            // accessed.
            let v = unsafe {
                [
                    _mm512_maskz_loadu_epi8(mask, quad[0].wrapping_add(x0)),
                    _mm512_maskz_loadu_epi8(mask, quad[1].wrapping_add(x0)),
                    _mm512_maskz_loadu_epi8(mask, quad[2].wrapping_add(x0)),
                    _mm512_maskz_loadu_epi8(mask, quad[3].wrapping_add(x0)),
                ]
            };
            let v = if FLIPPED {
                v
            } else {
                [
                    _mm512_xor_si512(v[0], flip),
                    _mm512_xor_si512(v[1], flip),
                    _mm512_xor_si512(v[2], flip),
                    _mm512_xor_si512(v[3], flip),
                ]
            };
            let d = unpack_quads(v);
            for (acc, (d, w)) in acc.iter_mut().zip(d.into_iter().zip(w)) {
                *acc = _mm512_dpbusd_epi32(*acc, d, load_i8x64(w));
            }
        }
        acc
    }
}

/// The 64 bytes of `v` into `out`.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_i8x64(v: __m512i, out: &mut [i8; 64]) {
    // SAFETY: `out` is a valid, exclusive reference to 64 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
}

/// The first `min(out.len(), 64)` bytes of `v` into `out`.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn store_i8x64_partial(v: __m512i, out: &mut [i8]) {
    let k = out.len().min(64);
    let mask = if k == 64 { u64::MAX } else { (1u64 << k) - 1 };
    // SAFETY: the masked store writes only the lanes of `mask`, the first `k`, all within
    // `out`, which is exclusively borrowed.
    unsafe { _mm512_mask_storeu_epi8(out.as_mut_ptr(), mask, v) }
}

/// A run's per-channel output stage ([`Requantize::fill`]), per group of 16 lanes (padded to
/// whole blocks): the rows of a [`Group`].
pub(crate) struct Requantize {
    groups: Filled<[[i32; 16]; GROUP_ROWS], { RUN / 16 }>,
    /// Whether every group is [`Group::high`]: one way for the whole run, which its loops can
    /// test once ([`Laid::run`]).
    high: bool,
}

/// Vectors of a [`Group`].
const GROUP_ROWS: usize = 9;

impl Requantize {
    /// Nothing filled yet.
    pub(crate) fn new() -> Requantize {
        Requantize { groups: Filled::new(), high: false }
    }

    /// Lanes `0..lanes` (at most [`RUN`]), lane `l` taking channel `c0 + l % n` of `quant`
    /// (shifts in `-31..=30`, checked); lanes past them to the next multiple of 64 scale by 0.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) fn fill(&mut self, quant: &PerChannel<'_>, c0: usize, lanes: usize, n: usize) {
        self.fill_repeating(quant, c0, lanes, (n, n));
    }

    /// [`Requantize::fill`] with the lanes repeating every `period` (at least `n`): lane `l`
    /// takes channel `c0 + l % period` where `l % period < n`, else scales by 0.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) fn fill_repeating(
        &mut self,
        quant: &PerChannel<'_>,
        c0: usize,
        lanes: usize,
        (period, n): (usize, usize),
    ) {
        // Each lane's multiplier and shift: the run's own where lanes are channels, else
        // gathered.
        let (mut m, mut shift) = (Filled::<i32, RUN>::new(), Filled::<i32, RUN>::new());
        let (m, shift) = if lanes == n && period == n {
            (&quant.multiplier[c0..][..n], &quant.shift[c0..][..n])
        } else {
            let channel = |l: usize| Some(l % period).filter(|&j| j < n).map(|j| c0 + j);
            m.set((0..lanes).map(|l| channel(l).map_or(0, |c| quant.multiplier[c])));
            shift.set((0..lanes).map(|l| channel(l).map_or(0, |c| quant.shift[c])));
            (m.get(), shift.get())
        };
        self.fill_lanes(m, shift);
    }

    /// Lanes with the given multipliers and shifts (at most [`RUN`], shifts in `-31..=30`,
    /// checked); lanes past them to the next multiple of 64 scale by 0.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) fn fill_lanes(&mut self, m: &[i32], shift: &[i32]) {
        let lanes = m.len();
        let count = lanes.next_multiple_of(BLOCK) / 16;
        let groups = (0..count).map(|g| {
            // Lanes past `lanes`: zeros (multiplier 0).
            let from = (16 * g).min(lanes);
            let to = (from + 16).min(lanes);
            (load_i32x16_partial(&m[from..to]), load_i32x16_partial(&shift[from..to]))
        });
        self.fill_groups(count, shift.iter().all(|&s| s < 0), groups);
    }

    /// `count` groups, each from its multipliers and shifts in `groups` (as many), every
    /// shift below 0 where `high` ([`Requantize::high`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    fn fill_groups(&mut self, count: usize, high: bool, groups: impl Iterator<Item = (__m512i, __m512i)>) {
        self.high = high;
        for (group, (m, shift)) in self.groups.reset(count, [[0; 16]; GROUP_ROWS]).iter_mut().zip(groups) {
            for (out, v) in group.iter_mut().zip(Group::of_lanes(m, shift, high).rows()) {
                store_i32x16(v, out);
            }
        }
    }

    /// Sixteen lanes' sums from lane `c` (a multiple of 16) through the output stage:
    /// TFLite's `MultiplyByQuantizedMultiplier` (the multipliers are not `i32::MIN`, so the
    /// doubling multiply cannot overflow), then `act` = (output offset, min, max), as int8.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    pub(crate) fn apply(&self, sums: __m512i, c: usize, act: (i32, i32, i32)) -> __m128i {
        self.group(c).apply(sums, act)
    }

    /// The stage of lanes `c..c + 16` (`c` a multiple of 16), loaded into registers for
    /// several vectors of sums.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn group(&self, c: usize) -> Group {
        debug_assert!(c.is_multiple_of(16));
        let [left, m_even, m_odd, add_e, add_o, below_e, below_o, right_e, right_o] =
            self.groups.get()[c / 16].each_ref().map(|row| load_i32x16(row, 0));
        Group {
            left,
            m: [m_even, m_odd],
            add: [add_e, add_o],
            below: [below_e, below_o],
            right: [right_e, right_o],
            high: self.high,
        }
    }
}

/// One group of 16 lanes of a [`Requantize`], in registers. TFLite's two roundings (the
/// doubling high multiply's `h = floor((x·m + 2^30) / 2^31)`, then the divide by `2^r`
/// rounding half away from zero) are one floor division of the 64-bit product, per even and
/// odd lane: `floor((x·m + 2^30 + c·2^31) / 2^(31 + r))` with `c = 2^(r-1) - [h < 0]` (0 where
/// `r` is 0), since `floor((floor(a / 2^31) + c) / 2^r) = floor((a + c·2^31) / 2^(31 + r))`;
/// and `h < 0` exactly where `x·m + 2^30 < 0`. Every term stays within ±2^63.
#[derive(Clone, Copy)]
pub(crate) struct Group {
    /// Left shifts (int32 lanes), applied first.
    left: __m512i,
    /// Multipliers of the even lanes, then of the odd lanes (each in the low half of its
    /// 64-bit lane).
    m: [__m512i; 2],
    /// Per 64-bit lane (even lanes', then odd lanes'): `2^30 + 2^(r + 30)` (`2^30` where `r`
    /// is 0).
    add: [__m512i; 2],
    /// Below which the sum with `add` means `h < 0` (`2^(r + 30)`; `i64::MIN` where `r` is 0:
    /// never).
    below: [__m512i; 2],
    /// `31 + r`; for the odd lanes `r - 1` where `high`.
    right: [__m512i; 2],
    /// Whether every lane has `r >= 1` (so no left shift): then the odd lanes' results are
    /// taken from the high halves of their 64-bit lanes (shifted by 32 less), where one blend
    /// takes them, not a permutation of both vectors.
    high: bool,
}

impl Group {
    /// The stage of up to 16 channels, given their multipliers and shifts (shifts in
    /// `-31..=30`, checked by the caller); lanes past them scale by 0.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn of(multiplier: &[i32], shift: &[i32]) -> Group {
        let (m, s) = (load_i32x16_partial(multiplier), load_i32x16_partial(shift));
        // Every given shift below 0 (lanes past them have no use for their results), tested
        // in one compare: a loop over them, in the fully connected layer's stage per block,
        // took the int8 autoencoder from 3.2 to 3.4 us.
        let given = ((1u32 << shift.len().min(16)) - 1) as u16;
        let high = _mm512_mask_cmpge_epi32_mask(given, s, _mm512_setzero_si512()) == 0;
        Group::of_lanes(m, s, high)
    }

    /// [`Group::of`] of lanes in registers, [`Group::high`] as `high` says (only where every
    /// lane that is used shifts right).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn of_lanes(m: __m512i, shift: __m512i, high: bool) -> Group {
        let zero = _mm512_setzero_si512();
        let right = _mm512_max_epi32(_mm512_sub_epi32(zero, shift), zero);
        // Per 64-bit lane from its `r` (the low half's, zero-extended).
        let lanes = |r: __m512i| {
            let rounds = _mm512_cmpgt_epi64_mask(r, zero);
            let half = _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_add_epi64(r, _mm512_set1_epi64(30)));
            let nudge = _mm512_set1_epi64(1 << 30);
            (
                _mm512_mask_add_epi64(nudge, rounds, nudge, half),
                _mm512_mask_blend_epi64(rounds, _mm512_set1_epi64(i64::MIN), half),
                _mm512_add_epi64(r, _mm512_set1_epi64(31)),
            )
        };
        let (add_e, below_e, right_e) = lanes(_mm512_and_si512(right, _mm512_set1_epi64(0xffff_ffff)));
        let (add_o, below_o, right_o) = lanes(_mm512_srli_epi64::<32>(right));
        Group {
            left: _mm512_max_epi32(shift, zero),
            m: [m, _mm512_srli_epi64::<32>(m)],
            add: [add_e, add_o],
            below: [below_e, below_o],
            right: [right_e, if high { _mm512_sub_epi64(right_o, _mm512_set1_epi64(32)) } else { right_o }],
            high,
        }
    }

    /// The vectors [`Requantize`] stores, in [`Requantize::group`]'s order.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn rows(&self) -> [__m512i; GROUP_ROWS] {
        let Group { left, m, add, below, right, .. } = *self;
        [left, m[0], m[1], add[0], add[1], below[0], below[1], right[0], right[1]]
    }

    /// [`Requantize::apply`] for this group's lanes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    pub(crate) fn apply(&self, sums: __m512i, (offset, min, max): (i32, i32, i32)) -> __m128i {
        let q = _mm512_add_epi32(self.scale_for(sums, (offset, min)), _mm512_set1_epi32(offset));
        if (min, max) == (-128, 127) {
            // The clamp is int8's whole range: one saturating narrowing.
            return _mm512_cvtsepi32_epi8(q);
        }
        let q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(min)), _mm512_set1_epi32(max));
        _mm512_cvtepi32_epi8(q)
    }

    /// TFLite's `MultiplyByQuantizedMultiplier` of the 16 lanes of `sums`, each by its own
    /// multiplier and shift.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn scale(&self, sums: __m512i) -> __m512i {
        if self.high { self.scale_with::<true, true>(sums) } else { self.scale_with::<false, true>(sums) }
    }

    /// [`Group::scale`] where an output clamp follows, with the output `offset` and the
    /// clamp's minimum `min`. Where `min >= offset` (ReLU and ReLU6 among them) every result
    /// at most 0 ends at `min`; so the lanes whose `x·m + 2^30` is negative go without their
    /// correction (`c`'s `[h < 0]`), two of the stage's slowest steps: their product is
    /// negative, so their result is at most 0 with it and without it (the numerator then
    /// stays below `2^31 + 2^(30 + r) <= 2^(31 + r)`, `r >= 1`; with `r = 0` no lane has
    /// one).
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn scale_for(&self, sums: __m512i, floor: (i32, i32)) -> __m512i {
        if self.high { self.scale_in::<true>(sums, floor) } else { self.scale_in::<false>(sums, floor) }
    }

    /// [`Group::scale_for`] for a caller that has tested [`Group::high`] (`HIGH`) once for
    /// many groups.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn scale_in<const HIGH: bool>(&self, sums: __m512i, (offset, min): (i32, i32)) -> __m512i {
        debug_assert_eq!(HIGH, self.high);
        if min >= offset { self.scale_with::<HIGH, false>(sums) } else { self.scale_with::<HIGH, true>(sums) }
    }

    /// [`Group::scale`], with the correction of negative `x·m + 2^30` where `CORRECT`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn scale_with<const HIGH: bool, const CORRECT: bool>(&self, sums: __m512i) -> __m512i {
        let one = _mm512_set1_epi64(1 << 31);
        let lane = |x: __m512i, i: usize| {
            let a = _mm512_add_epi64(_mm512_mul_epi32(x, self.m[i]), self.add[i]);
            let a = if CORRECT {
                _mm512_mask_sub_epi64(a, _mm512_cmplt_epi64_mask(a, self.below[i]), a, one)
            } else {
                a
            };
            _mm512_srav_epi64(a, self.right[i])
        };
        if HIGH {
            // The odd lanes' results are in the high halves already (no left shift here).
            return _mm512_mask_blend_epi32(0xaaaa, lane(sums, 0), lane(_mm512_srli_epi64::<32>(sums), 1));
        }
        let x = _mm512_sllv_epi32(sums, self.left);
        _mm512_permutex2var_epi32(lane(x, 0), INTERLEAVE, lane(_mm512_srli_epi64::<32>(x), 1))
    }
}

/// Lane indices taking the low halves of the even lanes' 64-bit results and the odd lanes'
/// (`VPERMT2D` numbers the second source's 16..32) back into lane order.
const INTERLEAVE: __m512i = lanes([0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30]);

/// The first `min(v.len(), 16)` values of `v`, the other lanes zero.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_i32x16_partial(v: &[i32]) -> __m512i {
    let mask = ((1u32 << v.len().min(16)) - 1) as u16;
    // SAFETY: the masked load reads only the lanes of `mask`, the first `min(v.len(), 16)`,
    // all within `v`; lanes off the mask are not accessed (and cannot fault).
    unsafe { _mm512_maskz_loadu_epi32(mask, v.as_ptr()) }
}

/// The 16 int32 lanes of `v`.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_i32x16(v: __m512i, out: &mut [i32; 16]) {
    // SAFETY: `out` is a valid, exclusive reference to 64 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
}

/// Sixteen int32 of `v` from index `from`.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn load_i32x16(v: &[i32], from: usize) -> __m512i {
    let (v, _) = v[from..][..16].as_chunks::<16>();
    // SAFETY: `v[0]` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_si512(v[0].as_ptr().cast()) }
}

/// The first `min(out.len(), 16)` lanes of `v` into `out`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
pub(crate) fn store_i8x16(v: __m128i, out: &mut [i8]) {
    let mask = ((1u32 << out.len().min(16)) - 1) as u16;
    // SAFETY: the masked store writes only the lanes of `mask`, the first
    // `min(out.len(), 16)`, all within `out`, which is exclusively borrowed.
    unsafe { _mm_mask_storeu_epi8(out.as_mut_ptr(), mask, v) }
}

/// One output pixel of int8 average pooling ([`crate::avg_pool`]), for arguments it has
/// checked: the first `out.len()` channels of each in-bounds tap (tap `t` of the row starting
/// at offset `r` of `rows` at `input[r + t * c..]`, `c` values per input pixel) summed 64
/// channels at a time in four vectors of int32 lanes, then TFLite's rounded mean `(sum ± count / 2) / count`
/// (truncating) and the clamp `act`. The division is a double's, exact here: the quotient
/// is at most 129 in magnitude, and one that is not a whole number lies at least `1 / count`
/// from one, far more than a double's rounding error at that size for any `count` below 2^40.
/// (SSE2's generic loop kept its sums on the stack, four lanes at a time: an int8 DS-CNN's
/// global pool took 0.8 us.)
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(crate) fn average_pixel(
    input: &[i8],
    rows: impl Iterator<Item = usize> + Clone,
    (taps, c, count): (usize, usize, i32),
    (min, max): (i32, i32),
    out: &mut [i8],
) {
    let half = _mm512_set1_epi32(count / 2);
    let divisor = _mm512_set1_pd(f64::from(count));
    let (min, max) = (_mm512_set1_epi32(min), _mm512_set1_epi32(max));
    // 64 channels at a time, four vectors of sums, each tap's values bounds-checked once.
    for (c0, out) in (0..out.len()).step_by(64).zip(out.chunks_mut(64)) {
        let n = out.len();
        let masks: [u16; 4] = core::array::from_fn(|k| {
            let lanes = n.saturating_sub(16 * k).min(16);
            ((1u32 << lanes) - 1) as u16
        });
        let mut sums = [_mm512_setzero_si512(); 4];
        for first in rows.clone() {
            for t in 0..taps {
                let values = &input[first + t * c + c0..][..n];
                for (k, sum) in sums.iter_mut().enumerate() {
                    // SAFETY: the masked load reads only lanes `16k..16k + 16` of `values`
                    // that lie below `n`, its length; lanes off the mask are not accessed.
                    let x = unsafe { _mm_maskz_loadu_epi8(masks[k], values.as_ptr().wrapping_add(16 * k)) };
                    *sum = _mm512_add_epi32(*sum, _mm512_cvtepi8_epi32(x));
                }
            }
        }
        for (sum, out) in sums.into_iter().zip(out.chunks_mut(16)) {
            let positive = _mm512_cmpgt_epi32_mask(sum, _mm512_setzero_si512());
            let rounded = _mm512_mask_add_epi32(_mm512_sub_epi32(sum, half), positive, sum, half);
            let quotient = |v: __m256i| _mm512_cvttpd_epi32(_mm512_div_pd(_mm512_cvtepi32_pd(v), divisor));
            let low = quotient(_mm512_castsi512_si256(rounded));
            let high = quotient(_mm512_extracti64x4_epi64::<1>(rounded));
            let mean = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high);
            store_i8x16(_mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(mean, min), max)), out);
        }
    }
}

/// Groups of 16 values from which [`add_sub`] looks them up ([`add_sub_lookup`]).
const LOOKUP_FROM: usize = 32;

/// [`crate::add`] (`SUB` false) or [`crate::sub`] of whole groups of 16 values (the caller
/// does the rest), for parameters [`AddParams::vector_exact`] accepts: the AVX2 loop's steps
/// (`super::avx2::add_sub`) on twice the lanes, each rescaling one [`Group::scale`]. There
/// every operand is within ±384·2^20 after its left shift and every rescaled sum within
/// ±2^30, and the output multiplier is not `i32::MIN`, so no doubling multiply meets
/// `i32::MIN` twice, where TFLite's saturates and the one floor division does not.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`has_vnni`] says so).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(crate) unsafe fn add_sub<const SUB: bool>(
    p: &AddParams,
    x: &[[i8; 16]],
    y: &[[i8; 16]],
    out: &mut [[i8; 16]],
) {
    // Long enough to repay working out the tables (512 rescalings), where the CPU has VBMI.
    let (x, y, out) = if x.len() >= LOOKUP_FROM && (-31..=0).contains(&p.output_shift) && has_vbmi() {
        let whole = x.len().min(y.len()).min(out.len()) / 4 * 4;
        let (x64, y64) =
            (x[..whole].as_flattened().as_chunks::<64>().0, y[..whole].as_flattened().as_chunks::<64>().0);
        let out64 = out[..whole].as_flattened_mut().as_chunks_mut::<64>().0;
        // SAFETY: the CPU has VBMI as well (`has_vbmi`).
        unsafe { add_sub_lookup::<SUB>(p, x64, y64, out64) };
        (&x[whole..], &y[whole..], &mut out[whole..])
    } else {
        (x, y, out)
    };
    let operands = operands(p);
    let stage = Group::of(&[p.output_multiplier; 16], &[p.output_shift; 16]);
    let left = _mm512_set1_epi32(p.left_shift);
    // Clamping the rescaled sum to ±1024 before the offset (within ±128) keeps the clamped
    // result of the scalar stage's saturating addition.
    let (lo, hi) = (_mm512_set1_epi32(-1024), _mm512_set1_epi32(1024));
    let (offset, min, max) = (p.output_offset, p.activation.min, p.activation.max);
    // Results at most 0 stay so through the ±1024 clamp, so at most `min` once offset
    // (`Group::scale_for`).
    let floor = (offset, min);
    let (offset, min, max) = (_mm512_set1_epi32(offset), _mm512_set1_epi32(min), _mm512_set1_epi32(max));
    for ((x, y), out) in x.iter().zip(y).zip(out) {
        let (xs, ys) = (rescale(x, &operands[0], left), rescale(y, &operands[1], left));
        let raw = if SUB { _mm512_sub_epi32(xs, ys) } else { _mm512_add_epi32(xs, ys) };
        let v = stage.scale_for(raw, floor);
        let v = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi), offset);
        let v = _mm512_min_epi32(_mm512_max_epi32(v, min), max);
        // SAFETY: `out` is a valid, exclusive reference to 16 writable bytes; `storeu` has no
        // alignment requirement.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(v)) };
    }
}

/// [`add_sub`] of whole groups of 64 values by table lookups, for output shifts `-31..=0`:
/// each operand's 256 possible rescaled values (an int8 has no more) are worked out once, as
/// four tables of their bytes (`VPERMI2B` looks 64 bytes up in 128 at once; the top bit of
/// the index picks between two such halves), and each group's four bytes per value go back
/// together as int32 lanes by unpacking; the output stage ([`Group`], exact for sums within
/// ±2^30) gives int32 lanes that saturating packs, the inverse of those unpacks, return to
/// their order, the offset (within int8, [`AddParams::vector_exact`]) added in int16 with
/// saturation (the int8 result is the same as int32's saturating addition, as the scalar
/// stage has it) and the clamp in int8.
///
/// # Safety
/// The CPU must have AVX-512 F, BW, VL and VBMI ([`super::avx2::has_vbmi`] says so).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
unsafe fn add_sub_lookup<const SUB: bool>(
    p: &AddParams,
    x: &[[i8; 64]],
    y: &[[i8; 64]],
    out: &mut [[i8; 64]],
) {
    let left = _mm512_set1_epi32(p.left_shift);
    // Operand `i`'s tables: byte `b` of the rescaled value of `v` at index `v as u8` (the
    // subtrahend's negated).
    let mut tables = Tables([[[0u8; 256]; 4]; 2]);
    for ((i, planes), operand) in tables.0.iter_mut().enumerate().zip(&operands(p)) {
        for chunk in 0..16 {
            let values: [i8; 16] = core::array::from_fn(|k| (16 * chunk + k) as u8 as i8);
            let v = rescale(&values, operand, left);
            let v = if SUB && i == 1 { _mm512_sub_epi32(_mm512_setzero_si512(), v) } else { v };
            for (b, plane) in planes.iter_mut().enumerate() {
                let bytes = _mm512_cvtepi32_epi8(_mm512_srlv_epi32(v, _mm512_set1_epi32(8 * b as i32)));
                // SAFETY: `plane[16 * chunk..]` holds 16 writable bytes (`chunk < 16`),
                // exclusively borrowed; `storeu` has no alignment requirement.
                unsafe { _mm_storeu_si128(plane[16 * chunk..][..16].as_mut_ptr().cast(), bytes) };
            }
        }
    }
    let stage = Group::of(&[p.output_multiplier; 16], &[p.output_shift; 16]);
    // Results at most 0 stay at most `min` through the saturating packs and offset
    // (`Group::scale_for`).
    let floor = (p.output_offset, p.activation.min);
    let offset = _mm512_set1_epi16(p.output_offset as i16);
    let (min, max) = (_mm512_set1_epi8(p.activation.min as i8), _mm512_set1_epi8(p.activation.max as i8));
    for ((x, y), out) in x.iter().zip(y).zip(out) {
        let (a, b) = (lookup(x, &tables.0[0]), lookup(y, &tables.0[1]));
        let sum = |k: usize| stage.scale_for(_mm512_add_epi32(a[k], b[k]), floor);
        let q = [sum(0), sum(1), sum(2), sum(3)];
        let low = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), offset);
        let high = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), offset);
        let v = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(low, high), min), max);
        // SAFETY: `out` is a valid, exclusive reference to 64 writable bytes; `storeu` has no
        // alignment requirement.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
    }
}

/// [`add_sub_lookup`]'s two operands' tables, on a 64-byte boundary so that their 512-bit
/// loads do not straddle cache lines.
#[repr(align(64))]
struct Tables([[[u8; 256]; 4]; 2]);

/// The 64 int32 values of `planes` (four tables of 256 bytes, byte `b` of each value in table
/// `b`) at the indices `v as u8`, as four vectors: value `16L + 4k + j` (lane group `L` of
/// `v`) in lane `4L + j` of vector `k`, the order `VPUNPCK*` leave them in and `VPACKSS*`
/// undo.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn lookup(v: &[i8; 64], planes: &[[u8; 256]; 4]) -> [__m512i; 4] {
    // SAFETY: `v` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    let index = unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
    let high = _mm512_movepi8_mask(index);
    let bytes = planes.each_ref().map(|plane| {
        // SAFETY: bytes `64k..64k + 64` of the 256 of `plane` are readable (`k < 4`); `loadu`
        // has no alignment requirement.
        let t: [__m512i; 4] =
            core::array::from_fn(|k| unsafe { _mm512_loadu_si512(plane[64 * k..][..64].as_ptr().cast()) });
        let low_half = _mm512_permutex2var_epi8(t[0], index, t[1]);
        let high_half = _mm512_permutex2var_epi8(t[2], index, t[3]);
        _mm512_mask_blend_epi8(high, low_half, high_half)
    });
    let (w01, w23) = (
        [_mm512_unpacklo_epi8(bytes[0], bytes[1]), _mm512_unpackhi_epi8(bytes[0], bytes[1])],
        [_mm512_unpacklo_epi8(bytes[2], bytes[3]), _mm512_unpackhi_epi8(bytes[2], bytes[3])],
    );
    [
        _mm512_unpacklo_epi16(w01[0], w23[0]),
        _mm512_unpackhi_epi16(w01[0], w23[0]),
        _mm512_unpacklo_epi16(w01[1], w23[1]),
        _mm512_unpackhi_epi16(w01[1], w23[1]),
    ]
}

/// Each operand's offset and rescaling, as [`rescale`] takes them.
#[target_feature(enable = "avx512f")]
#[inline]
fn operands(p: &AddParams) -> [(__m512i, Group); 2] {
    [0, 1].map(|i| {
        let stage = Group::of(&[p.input_multiplier[i]; 16], &[p.input_shift[i]; 16]);
        (_mm512_set1_epi32(p.input_offset[i]), stage)
    })
}

/// One operand of [`add_sub`]: 16 int8 values plus their offset, shifted left by `left`, then
/// rescaled by its multiplier and shift (`stage`, [`Group::scale`]).
#[target_feature(enable = "avx512f")]
#[inline]
fn rescale(v: &[i8; 16], (offset, stage): &(__m512i, Group), left: __m512i) -> __m512i {
    // SAFETY: `v` is a valid reference to 16 readable bytes; `loadu` has no alignment
    // requirement.
    let v = _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(v.as_ptr().cast()) });
    stage.scale(_mm512_sllv_epi32(_mm512_add_epi32(v, *offset), left))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::add::tests::params;
    use crate::depthwise::tests::check_all;
    use crate::shape::{Hw, Nhwc, Padding};
    use crate::testutil::{Geometry, Kernel, Lcg, Operands, reference_fc, window};

    #[test]
    fn depthwise_runs_blocks_and_odd_taps() {
        // Per pixel: more than one run of channels (300), a partial block, 25 taps (odd),
        // dilation 2, a column stride past `MAX_PHASES`. By rows: strides 1 to 3 (columns
        // split into phases), dilation 2, channel counts whose lanes repeat every 32 to 224.
        let cases = [
            (300, 3, 2, 1),
            (45, 5, 1, 2),
            (16, 3, 5, 1),
            (16, 1, 1, 1),
            (7, 3, 1, 1),
            (16, 3, 2, 1),
            (8, 3, 2, 2),
            (24, 3, 3, 1),
            (64, 5, 2, 1),
        ];
        for (c, f, stride, dilation) in cases {
            let w = window(Hw::new(6, 9), Hw::square(f), stride, dilation, Padding::Same).unwrap();
            let p = Geometry::new(Nhwc::new(2, 6, 9, c), w).depthwise(1);
            for (izp, ozp) in [(-128, 5), (127, -128), (3, 0)] {
                // The clamp as given, and from the output offset and just below it (at or
                // above it, results at most 0 skip a correction).
                for min in [None, Some(ozp), Some(ozp - 1)] {
                    let activation =
                        min.map_or(p.activation, |m| crate::ActivationRange::new(m.max(-128), 127).unwrap());
                    let p =
                        DepthwiseParams { input_zero_point: izp, output_zero_point: ozp, activation, ..p };
                    check_all(&p, c as u64 + 7, true).unwrap();
                }
            }
        }
    }

    /// Clamps from the output offset and just below it, on layers whose sums meet the output
    /// stage's ties (small values, power-of-two scales), against the reference loop: at or
    /// above the offset, results at most 0 go without a correction. Both of the loop's ways
    /// (whole rows at a stride of 1, pixels at a stride past `MAX_PHASES`).
    #[test]
    fn depthwise_clamps_from_the_output_offset() {
        if !has_vnni() {
            return;
        }
        let mut rng = Lcg(17);
        for (c, stride, below) in [(8, 1, 0), (8, 1, 1), (32, 1, 1), (48, 5, 0), (48, 5, 1)] {
            let w = window(Hw::new(6, 11), Hw::square(3), stride, 1, Padding::Same).unwrap();
            let p = Geometry::new(Nhwc::new(1, 6, 11, c), w).depthwise(1);
            let activation = crate::ActivationRange::new(5 - below, 127).unwrap();
            let p = DepthwiseParams { input_zero_point: 1, output_zero_point: 5, activation, ..p };
            let mut small = |n: usize| (0..n).map(|_| rng.range(-4, 4) as i8).collect::<std::vec::Vec<_>>();
            let (x, f) = (small(6 * 11 * c), small(9 * c));
            let (m, shift) = (std::vec![1 << 30; c], std::vec![-2; c]);
            let quant = PerChannel { multiplier: &m, shift: &shift };
            let want = crate::testutil::reference_depthwise(&p, &x, &f, None, quant);
            let mut got = std::vec![0i8; want.len()];
            depthwise_conv2d(&p, &x, &f, None, quant, &mut got).unwrap();
            assert_eq!(got, want, "channels {c}, stride {stride}, clamp from {}", 5 - below);
        }
    }

    #[test]
    fn fully_connected_runs_and_long_rows() {
        // More than one run of output channels (300), rows of several 64-value steps with a
        // partial last one (200), a partial last group of 16 channels.
        for (batches, depth, channels, seed) in [(2, 200, 300, 1), (1, 640, 128, 2), (3, 64, 17, 3)] {
            let ops = Operands::random(seed, batches * depth, channels * depth, channels, 1 << 20);
            let p = FullyConnectedParams {
                batches,
                input_depth: depth,
                output_depth: channels,
                input_zero_point: -3,
                output_zero_point: 9,
                activation: crate::ActivationRange::INT8,
            };
            let kernels: [Kernel<FullyConnectedParams>; 2] =
                [fully_connected, crate::arch::x86::fully_connected];
            ops.assert_bit_exact(&p, true, batches * channels, &kernels, reference_fc).unwrap();
        }
    }

    /// [`fully_connected`] over weights laid out by `pack_fully_connected` first.
    fn fully_connected_laid_out(
        p: &FullyConnectedParams,
        input: &[i8],
        filter: &[i8],
        bias: Option<&[i32]>,
        quant: PerChannel<'_>,
        output: &mut [i8],
    ) -> Result<(), DspError> {
        let layout = crate::prepack::ConvLayout::of_fully_connected(p).unwrap();
        let mut packed = std::vec![0u8; layout.len()];
        crate::prepack::pack_fully_connected(p, filter, bias, &mut packed)?;
        fully_connected_prepacked(p, input, (filter, bias, Some(&packed)), quant, output)
    }

    #[test]
    fn fully_connected_over_laid_out_weights() {
        // Rows of whole quads, odd quad counts and 1-3 values past them; 1 to 7 blocks of 16
        // channels (every remainder past groups of four blocks), partial last blocks; several
        // rows; zero points at both ends; with and without bias; a narrow clamp.
        let cases = [(1, 1, 1), (1, 2, 8), (2, 3, 17), (1, 5, 33), (1, 7, 48), (3, 9, 64)];
        let more = [(1, 64, 65), (2, 130, 100), (1, 640, 128), (1, 128, 640), (1, 8, 112)];
        for (n, &(batches, depth, channels)) in cases.iter().chain(&more).enumerate() {
            let ops = Operands::random(n as u64, batches * depth, channels * depth, channels, 1 << 20);
            for (izp, ozp, min, max) in [(-128, 127, -128, 127), (127, -128, -128, 127), (-3, 9, -20, 90)] {
                let p = FullyConnectedParams {
                    batches,
                    input_depth: depth,
                    output_depth: channels,
                    input_zero_point: izp,
                    output_zero_point: ozp,
                    activation: crate::ActivationRange::new(min, max).unwrap(),
                };
                let kernels: [Kernel<FullyConnectedParams>; 1] = [fully_connected_laid_out];
                for with_bias in [true, false] {
                    ops.assert_bit_exact(&p, with_bias, batches * channels, &kernels, reference_fc).unwrap();
                }
            }
        }
        // A layout of another layer's length is an error.
        let p = FullyConnectedParams {
            batches: 1,
            input_depth: 4,
            output_depth: 2,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: crate::ActivationRange::INT8,
        };
        let q = PerChannel { multiplier: &[1 << 30; 2], shift: &[0; 2] };
        let err = fully_connected_prepacked(&p, &[0; 4], (&[0; 8], None, Some(&[0; 64])), q, &mut [0; 2]);
        assert!(matches!(err, Err(DspError::Length { what: "packed", expected: 128, actual: 64 })));
    }

    /// The 16-lane output stage gives TFLite's `MultiplyByQuantizedMultiplier` exactly, on
    /// every shift, multipliers of every size and sign (but `i32::MIN`), sums at the extremes
    /// and near the rounding's ties, with the clamp int8's whole range (one saturating
    /// narrowing), narrower, and from around the output offset.
    #[test]
    fn output_stage_matches_the_scalar_one() {
        if !has_vnni() {
            return;
        }
        let mut rng = Lcg(11);
        let edges = [i32::MIN, i32::MIN + 1, -(1 << 30) - 1, -(1 << 30), -1, 0, 1, 1 << 30, i32::MAX];
        for round in 0..400 {
            // Every shift; in a third of the rounds, right shifts only (every `r >= 1`: the
            // odd lanes' results come from their high halves), and in another third, with
            // zeros among them.
            let shift: [i32; 16] = core::array::from_fn(|l| {
                let k = round + l as i32 * 7;
                [k % 62 - 31, -1 - k % 31, -(k % 31)][round as usize % 3]
            });
            let m: [i32; 16] = core::array::from_fn(|l| match (round + l as i32) % 4 {
                0 => rng.range(1 << 30, i32::MAX),
                1 => rng.range(1, 1 << 16),
                2 => -rng.range(1, i32::MAX),
                _ => [1 << 30, i32::MAX, 0, i32::MIN + 1][l % 4],
            });
            let sums: [i32; 16] = core::array::from_fn(|l| {
                // Near a tie of the rounding divide: a multiple of 2^(31 + r) / m, give or take.
                let r = (-shift[l]).max(0) as u32;
                match (round as usize + l) % 3 {
                    0 => edges[l % edges.len()],
                    1 => rng.next() as i32,
                    _ => (((1i64 << (31 + r).min(62)) / i64::from(m[l]).abs().max(1)) as i32)
                        .wrapping_mul(rng.range(-3, 3))
                        .wrapping_add(rng.range(-2, 2)),
                }
            });
            let quant = PerChannel { multiplier: &m, shift: &shift };
            // The clamp: int8's whole range, a narrower one, and minimums at, just below and
            // just above the offset (at or above it, results at most 0 skip a correction).
            let offset = rng.range(-128, 127);
            let near = |d: i32| ((offset + d).clamp(-128, 127), 127);
            let clamp = [(-128, 127), (-20, 90), near(0), near(-1), near(1)][round as usize % 5];
            let mut stage = Requantize::new();
            // SAFETY: `has_vnni` said the CPU has AVX-512 F, BW and VL.
            let got = unsafe {
                stage.fill(&quant, 0, 16, 16);
                let mut out = [0i8; 16];
                let v = stage.apply(_mm512_loadu_si512(sums.as_ptr().cast()), 0, (offset, clamp.0, clamp.1));
                _mm_storeu_si128(out.as_mut_ptr().cast(), v);
                out
            };
            for l in 0..16 {
                let q = crate::quant::multiply_by_quantized_multiplier(sums[l], m[l], shift[l]);
                let want = q.wrapping_add(offset).clamp(clamp.0, clamp.1) as i8;
                assert_eq!(got[l], want, "sum {} m {} shift {}", sums[l], m[l], shift[l]);
            }
        }
    }

    /// The lookup loop (long operands, output shifts `<= 0`) against the AVX2 loop: every
    /// value of each operand (the first 256 of each run), scales of both operands far apart
    /// and alike, outputs saturating and not, the clamp int8's whole range and narrower,
    /// lengths past whole groups of 64.
    #[test]
    fn add_by_lookup_matches_the_avx2_loop() {
        if !has_vbmi() {
            std::println!("skipped: this CPU lacks AVX-512 VBMI");
            return;
        }
        let mut rng = Lcg(9);
        let mut looked_up = 0;
        for round in 0..300 {
            let s = rng.scales(3, [0.001, 0.05, 0.5][round % 3], 8.0);
            let mut p = params(&mut rng, s[0], s[1], s[2]);
            if round % 4 == 0 {
                p.activation = crate::quant::ActivationRange::INT8;
            }
            if p.vector_exact() {
                looked_up += usize::from((-31..=0).contains(&p.output_shift));
                let n = 16 * (LOOKUP_FROM + rng.next() as usize % 40);
                check_add(&mut rng, &p, n, round);
            }
        }
        assert!(looked_up > 100, "{looked_up} rounds took the lookups");
    }

    /// The 16-lane loop (operands too short for the lookups) against the AVX2 loop.
    #[test]
    fn add_matches_the_avx2_loop() {
        if !has_vnni() {
            std::println!("skipped: this CPU lacks AVX-512 VNNI");
            return;
        }
        let mut rng = Lcg(5);
        for round in 0..400 {
            let s = rng.scales(3, [0.001, 0.05][round % 2], 8.0);
            let p = params(&mut rng, s[0], s[1], s[2]);
            if p.vector_exact() {
                let n = 16 * (1 + rng.next() as usize % 8);
                check_add(&mut rng, &p, n, round);
            }
        }
    }

    /// `add_sub` of `n` values (a multiple of 16; the first 256 every int8 value, in
    /// different orders for `x` and `y`, the rest random) against the AVX2 loop, add and
    /// sub, with `p`'s clamp and with its minimum at and just below the output offset (at or
    /// above it, results at most 0 skip a correction).
    fn check_add(rng: &mut Lcg, p: &AddParams, n: usize, round: usize) {
        let (mut x, mut y) = (rng.bytes(n), rng.bytes(n));
        for (i, (x, y)) in x.iter_mut().zip(&mut y).take(256).enumerate() {
            (*x, *y) = (i as u8 as i8, (i * 167 + 13) as u8 as i8);
        }
        let (x16, y16) = (x.as_chunks::<16>().0, y.as_chunks::<16>().0);
        let (x8, y8) = (x.as_chunks::<8>().0, y.as_chunks::<8>().0);
        let (mut wide, mut narrow) = (std::vec![[0i8; 16]; n / 16], std::vec![[0i8; 8]; n / 8]);
        let max = p.activation.max;
        let near = |d: i32| crate::ActivationRange::new((p.output_offset + d).clamp(-128, max), max).unwrap();
        for (activation, sub) in
            [p.activation, near(0), near(-1)].into_iter().flat_map(|a| [(a, false), (a, true)])
        {
            let p = &AddParams { activation, ..*p };
            // SAFETY: the callers checked `has_vnni` or `has_vbmi` (which implies it): AVX-512
            // F, BW and VL, and AVX2.
            unsafe {
                if sub {
                    add_sub::<true>(p, x16, y16, &mut wide);
                    super::super::avx2::add_sub::<true>(p, x8, y8, &mut narrow);
                } else {
                    add_sub::<false>(p, x16, y16, &mut wide);
                    super::super::avx2::add_sub::<false>(p, x8, y8, &mut narrow);
                }
            }
            assert_eq!(wide.as_flattened(), narrow.as_flattened(), "sub {sub}, round {round} {p:?}");
        }
    }
}
