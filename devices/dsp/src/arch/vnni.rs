//! int8 convolution as an unsigned-by-signed byte GEMM on AVX-512 VNNI (`VPDPBUSD`), taken at
//! run time where the CPU has it; elsewhere the SSE2 loops run.
//!
//! `VPDPBUSD` adds to each int32 lane the four products of its unsigned bytes of one operand
//! and signed bytes of the other, without saturation. Inputs are made unsigned by flipping
//! their sign bit (`u = x + 128`) and the difference is folded into each channel's bias:
//! `Σ (x + offset)·w = Σ u·w + (offset − 128)·Σ w`, all modulo 2^32 as every other path
//! sums, so the results are bit-exact with them. The padding's patch byte is the input zero
//! point flipped likewise (its `x + offset` is 0).
//!
//! The filter goes in the layout of [`crate::prepack`]: blocks of 16 output channels, each a
//! row of folded biases and rows of four filter values per channel (as `VPDPBUSD` pairs them
//! with four bytes of a pixel broadcast to every lane). An importer lays it out once
//! ([`conv2d_prepacked`]); otherwise each call lays out runs of channels on the stack. The
//! image is copied as unsigned bytes with its padding, in bands of output rows whose input
//! rows fit 32 KiB, and the tiles read the filter taps in place from it: each tap's channels
//! padded to whole quads (three channels or more; without column dilation a filter row's taps
//! lie side by side and go as one run of quads), or each filter row's values straight along
//! the row (one or two channels; RGB rows are widened to quads 16 pixels at a time). Pointwise
//! and row-dilated convolutions take their patches as unsigned bytes per block of output
//! pixels, once per run. Tiles of eight pixels by 16 or 32 channels (eight channels or fewer:
//! two pixels per vector; 16 pixels by a lone block of 16 along rows read in place), or four
//! by 64, keep their sums in registers and go through
//! TFLite's per-channel requantization, 16 channels per vector, straight to the output. The
//! CPU check is `avx2::has_vnni`.

use core::arch::x86_64::*;

use super::avx2::{has_vnni, load_i8x32, store_u8x32};
use super::avx512::{RUN, Requantize, flip_bytes, store_i8x16};
use crate::conv::{ConvParams, im2col, next_pixel};
use crate::error::DspError;
use crate::filled::Filled;
use crate::prepack::{
    BLOCK, ConvLayout, ConvPacked, FILTER_BYTES, PATCH_BYTES, ROW, Reads, TILE, check_conv, folded_bias,
};

/// Output pixels per tile along an output row read in place (whole rows, so twice [`TILE`]:
/// a lone block of 16 channels keeps 16 pixels' sums in registers, not 8).
const ROW_TILE: usize = 2 * TILE;
use crate::quant::{PerChannel, check_per_channel};
use crate::shape::Hw;

/// 2-D convolution with per-channel weights (TFLite's `ConvPerChannel`) on the best inner
/// loops for the CPU: AVX-512 VNNI where it has them (and the layer has a
/// [`ConvLayout`]), else SSE2 ([`crate::x86::conv2d`]); the results are the same. See
/// [`ConvParams`] for the layouts.
pub fn conv2d(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    conv2d_prepacked(p, input, (filter, bias, None), quant, output)
}

/// [`conv2d`] with the weights also laid out ahead of time (`packed`): by
/// [`crate::prepack::pack_conv`] (filter and bias) for the VNNI loops, which then read it
/// instead of laying the filter out themselves, or by [`crate::prepack::pack_conv_pairs`]
/// (filter) for the AVX2 blocked loop without VNNI; other CPUs read `filter` and `bias`. An
/// error if `packed` is not the layer's layout's length (or the layer has none); its
/// contents are trusted to be the layout of `filter` and `bias`.
pub fn conv2d_prepacked(
    p: &ConvParams,
    input: &[i8],
    (filter, bias, packed): (&[i8], Option<&[i32]>, Option<ConvPacked<'_>>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check_per_channel(p, input, filter, bias, &quant, output)?;
    let (vnni, pairs) = match packed {
        Some(ConvPacked::Vnni(packed)) => {
            check_conv(p, packed)?;
            (Some(packed), None)
        }
        Some(ConvPacked::Pairs(pairs)) => {
            // Here too: the VNNI loops below do not read them.
            crate::conv::check_pairs(p, Some(pairs))?;
            (None, Some(pairs))
        }
        None => (None, None),
    };
    match ConvLayout::of(p) {
        // The 16-lane output stage leaves out multipliers of `i32::MIN`.
        Some(layout) if has_vnni() && !quant.multiplier.contains(&i32::MIN) => {
            match vnni {
                Some(packed) => {
                    let weights = (filter, bias, Weights::Packed(packed));
                    vnni_conv(Vnni(()), p, layout, input, weights, quant, output);
                }
                None => lay_out_and_convolve(Vnni(()), p, layout, input, (filter, bias), quant, output),
            }
            Ok(())
        }
        _ => crate::conv::run_with_pairs::<super::x86::X86>(p, input, (filter, bias, pairs), quant, output),
    }
}

/// Proof that the CPU has the target features of [`tile`] (made only where [`has_vnni`]).
#[derive(Clone, Copy)]
struct Vnni(());

/// Where [`vnni_conv`] finds the filter laid out: ahead of time, or in a buffer it lays each
/// run of channels out in first.
enum Weights<'a> {
    Packed(&'a [u8]),
    LayHere(&'a mut Filled<[u8; ROW], { FILTER_BYTES / ROW }>),
}

/// [`vnni_conv`] laying the filter out per call, in a buffer of this function's own: out of
/// line, so that the usual caller (weights laid out at import) does not carry its 128 KB on
/// its stack, whose probe, a store to each 4 KB page on every call, had cost an int8 DS-CNN
/// 1% of its time.
#[inline(never)]
fn lay_out_and_convolve(
    cpu: Vnni,
    p: &ConvParams,
    layout: ConvLayout,
    input: &[i8],
    (filter, bias): (&[i8], Option<&[i32]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let mut laid = Filled::new();
    vnni_conv(cpu, p, layout, input, (filter, bias, Weights::LayHere(&mut laid)), quant, output);
}

/// The convolution (arguments checked by `conv2d_prepacked`). Not itself compiled for VNNI,
/// so that the gathering code (generic, shared with the SSE2 path) inlines.
fn vnni_conv(
    cpu: Vnni,
    p: &ConvParams,
    layout: ConvLayout,
    input: &[i8],
    (filter, bias, mut source): (&[i8], Option<&[i32]>, Weights<'_>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let per_filter = w.filter.h * w.filter.w * s.c;
    let total = s.n * w.output.h * w.output.w;
    let pad = (p.input_zero_point as i8 as u8) ^ 0x80;
    let (quads, block_rows) = (layout.quads, layout.block_rows());

    // The image goes in bands of output rows, as many as their padded input rows fit
    // `PATCH_BYTES` (at least one: `ConvLayout::of` checked).
    let Hw { h: hp, w: wp } = w.padded_input();
    let band_input = |rows: usize| (rows - 1) * w.stride.h + (w.filter.h - 1) * w.dilation.h + 1;
    // Read in place: filter taps per filter row (one for whole rows), quads per tap.
    // (`ConvLayout::of` checked the padded rows' size.)
    let in_place = match layout.reads {
        Reads::Gathered => None,
        // A filter row's taps lie side by side (no column dilation): one run of quads.
        Reads::Taps { icq } if w.dilation.w == 1 => Some((1, w.filter.w * icq)),
        Reads::Taps { icq } => Some((w.filter.w, icq)),
        Reads::Rows { per_row } => Some((1, per_row)),
    };
    let row_bytes = layout.reads.row_bytes(s.c, wp).unwrap_or(0).max(1);
    let cp = layout.reads.pixel_bytes(s.c);
    let band =
        ((PATCH_BYTES / row_bytes).saturating_sub(band_input(1)) / w.stride.h + 1).min(w.output.h).max(1);
    let stride = 4 * quads;
    // Pixels per block of gathered patches, whole tiles.
    let block = (PATCH_BYTES / stride / TILE * TILE).min(total.next_multiple_of(TILE));
    // Channels per run: as many blocks as the stack's layout holds when laid out per call, at
    // most the output stage's `RUN`.
    let run_len = match source {
        Weights::Packed(_) => RUN,
        Weights::LayHere(_) => (FILTER_BYTES / (ROW * block_rows) * BLOCK).min(RUN),
    };
    // Not zeroed whole: each call writes only what it uses, which for the small layers of
    // tiny-ML models is a fraction of these.
    let mut patches = Filled::<u8, PATCH_BYTES>::new();
    let mut stage = Requantize::new();
    let act = (p.output_zero_point, p.activation.min, p.activation.max);
    // Zeros past each patch (never written: multiplied by zero filter values).
    let patches = patches
        .reset(if in_place.is_some() { band_input(band).min(hp) * row_bytes } else { block * stride }, 0);
    for c0 in (0..oc_n).step_by(run_len) {
        let n = (oc_n - c0).min(run_len);
        let rows = n.div_ceil(BLOCK) * block_rows;
        let weights: &[[u8; ROW]] = match &mut source {
            Weights::Packed(packed) => &packed.as_chunks::<ROW>().0[c0 / BLOCK * block_rows..][..rows],
            Weights::LayHere(laid) => {
                let laid = laid.reset(rows, [0; ROW]);
                let run_bias = bias.map(|b| &b[c0..][..n]);
                pack(cpu, p, layout, (&filter[c0 * per_filter..][..n * per_filter], run_bias), laid);
                laid
            }
        };
        // A run of at most eight channels takes two pixels per vector (`tile_pairs`), its
        // output stage repeated in both halves.
        let (lanes, period) = if n <= BLOCK / 2 { (BLOCK, BLOCK / 2) } else { (n, n) };
        // SAFETY: `cpu` proves the CPU has AVX-512 F, BW and VL (`has_vnni`).
        unsafe { stage.fill_repeating(&quant, c0, lanes, (period, n)) };
        let run = Run { weights, quads, stage: &stage, act, channels: n, stride: oc_n };
        if let Some((row_taps, tap_quads)) = in_place {
            // Each image once, as unsigned bytes with its padding, which the tiles read in
            // place: no patches. Where each filter tap (or filter row) starts, in bytes from
            // the first.
            let mut taps = [0usize; crate::prepack::MAX_TAPS];
            for (t, at) in taps[..w.filter.h * row_taps].iter_mut().enumerate() {
                let (fy, fx) = (t / row_taps, t % row_taps);
                *at = fy * w.dilation.h * row_bytes + fx * w.dilation.w * cp;
            }
            let taps = &taps[..w.filter.h * row_taps];
            let per_image = w.output.h * w.output.w;
            for b in 0..s.n {
                let image = &input[b * s.h * s.w * s.c..][..s.h * s.w * s.c];
                for oy0 in (0..w.output.h).step_by(band) {
                    let band_rows = (w.output.h - oy0).min(band);
                    let first_row = oy0 * w.stride.h;
                    let padded = &mut patches[..band_input(band_rows).min(hp - first_row) * row_bytes];
                    pad_image(cpu, p, image, (first_row, wp, cp, row_bytes), pad, padded);
                    // Tiles along each output row: pixels a column stride apart.
                    let step = w.stride.w * cp;
                    for r in 0..band_rows {
                        let row = &padded[r * w.stride.h * row_bytes..];
                        let first = b * per_image + (oy0 + r) * w.output.w;
                        for t in (0..w.output.w).step_by(ROW_TILE) {
                            let valid = (w.output.w - t).min(ROW_TILE);
                            let tile_in = TileIn { bytes: &row[t * step..], step, taps, tap_quads };
                            run.tile_row(cpu, &tile_in, &mut output[(first + t) * oc_n + c0..], valid);
                        }
                    }
                }
            }
            continue;
        }
        let mut pixel = (0, 0, 0);
        for first in (0..total).step_by(block) {
            let np = (total - first).min(block);
            // Rows past the last pixel (a partial tile) hold stale values, whose sums are not
            // stored.
            let patches = &mut patches[..np.next_multiple_of(TILE) * stride];
            if w.is_pointwise() {
                let rows = &input[first * s.c..][..np * s.c];
                if stride == s.c {
                    flip(cpu, rows, patches);
                } else {
                    for (patch, x) in patches.chunks_exact_mut(stride).zip(rows.chunks_exact(s.c)) {
                        flip(cpu, x, &mut patch[..s.c]);
                    }
                }
            } else {
                for patch in patches.chunks_exact_mut(stride).take(np) {
                    im2col(p, input, pixel, &mut patch[..per_filter], pad, |x| (x as u8) ^ 0x80);
                    pixel = next_pixel(p, pixel);
                }
            }
            for t in (0..np).step_by(TILE) {
                let tile_in =
                    TileIn { bytes: &patches[t * stride..], step: stride, taps: &[0], tap_quads: quads };
                run.tile_row(cpu, &tile_in, &mut output[(first + t) * oc_n + c0..], (np - t).min(TILE));
            }
        }
    }
}

/// Rows of one image as unsigned bytes (sign bit flipped) in a window `wp` pixels wide
/// starting at the padding's left edge and padded row `first_row` (`padded` holds whole rows
/// of `row_bytes`), each pixel's channels padded to `cp` bytes; positions outside the image,
/// and the bytes past a row's pixels, are `pad`.
fn pad_image(
    cpu: Vnni,
    p: &ConvParams,
    image: &[i8],
    (first_row, wp, cp, row_bytes): (usize, usize, usize, usize),
    pad: u8,
    padded: &mut [u8],
) {
    let (s, w, c) = (p.input, p.window, p.input.c);
    for (y, row) in padded.chunks_exact_mut(row_bytes).enumerate() {
        let iy = (first_row + y) as isize - w.pad.h as isize;
        if iy < 0 || iy as usize >= s.h {
            row.fill(pad);
            continue;
        }
        // Columns x of the window hold input column x - pad.w where that is in the image.
        let x0 = w.pad.w.min(wp);
        let x1 = (w.pad.w + s.w).min(wp);
        row[..x0 * cp].fill(pad);
        row[x1 * cp..].fill(pad);
        if x0 < x1 {
            let src = &image[(iy as usize * s.w) * c..][..(x1 - x0) * c];
            if cp == c {
                flip(cpu, src, &mut row[x0 * c..x1 * c]);
            } else if c == 3 {
                // RGB, the common case, a quad per pixel (the padding byte meets a zero filter
                // value).
                let (dst, _) = row[x0 * 4..x1 * 4].as_chunks_mut::<4>();
                let (src, _) = src.as_chunks::<3>();
                // SAFETY: `cpu` proves the CPU has AVX-512 F and BW (`has_vnni`).
                let done = unsafe { rgb_quads(cpu, src, dst, pad) };
                for (d, x) in dst.iter_mut().zip(src).skip(done) {
                    *d = [x[0] as u8 ^ 0x80, x[1] as u8 ^ 0x80, x[2] as u8 ^ 0x80, pad];
                }
            } else {
                // Channels padded to `cp` bytes likewise, a quad at a time (`fill` would call
                // `memset` per pixel).
                for (dst, x) in row[x0 * cp..x1 * cp].chunks_exact_mut(cp).zip(src.chunks_exact(c)) {
                    for (q, d) in dst.as_chunks_mut::<4>().0.iter_mut().enumerate() {
                        *d = core::array::from_fn(|k| x.get(4 * q + k).map_or(pad, |&v| v as u8 ^ 0x80));
                    }
                }
            }
        }
    }
}

/// RGB pixels as quads of unsigned bytes (sign bits flipped) and `pad`, 16 at a time: 48
/// bytes loaded, their double words moved so that each 128-bit lane holds its four pixels'
/// twelve bytes, spread to quads (`VPSHUFB`, zero in each fourth byte), then one XOR flips
/// the values and writes the padding byte. Returns how many pixels it did (whole groups of
/// 16); the caller does the rest.
#[target_feature(enable = "avx512f,avx512bw")]
fn rgb_quads(_: Vnni, src: &[[i8; 3]], dst: &mut [[u8; 4]], pad: u8) -> usize {
    let n = src.len().min(dst.len()) / 16 * 16;
    let words = _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0);
    // Byte 4p + e of each lane from byte 3p + e, for e < 3; -1 (zero) for the fourth.
    let spread = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
    let flip = _mm512_set1_epi32(i32::from_le_bytes([0x80, 0x80, 0x80, pad]));
    for (s, d) in src[..n].chunks_exact(16).zip(dst[..n].chunks_exact_mut(16)) {
        // SAFETY: `s` holds 16 pixels of 3 bytes: the masked load reads its 48 bytes only;
        // `d` holds 16 quads, 64 writable bytes, exclusively borrowed; no alignment needed.
        unsafe {
            let v = _mm512_maskz_loadu_epi8((1 << 48) - 1, s.as_ptr().cast());
            let q = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(words, v), spread);
            _mm512_storeu_si512(d.as_mut_ptr().cast(), _mm512_xor_si512(q, flip));
        }
    }
    n
}

/// Where a tile's pixels read their patch values: pixel `r`'s from byte `r * step` of
/// `bytes`, filter tap `t`'s `tap_quads` quads starting at byte `taps[t]` from there (one tap
/// of the whole patch for gathered patches; one per filter tap, or filter row, when read in
/// place from a padded image). A partial tile's missing pixels read its last one.
struct TileIn<'a> {
    bytes: &'a [u8],
    step: usize,
    taps: &'a [usize],
    tap_quads: usize,
}

impl TileIn<'_> {
    /// Where pixels `first..first + R` start, those past the `valid` ones (at least one) at
    /// the last valid one. Checked once for every read a tile makes: from each pointer, every
    /// tap's `tap_quads` quads lie within `bytes`.
    #[inline]
    fn pixels<const R: usize>(&self, first: usize, valid: usize) -> [*const u8; R] {
        let reach = self.taps.iter().max().map_or(0, |&t| t + 4 * self.tap_quads);
        assert!(valid >= 1 && (first + valid.min(R) - 1) * self.step + reach <= self.bytes.len());
        core::array::from_fn(|r| self.bytes.as_ptr().wrapping_add((first + r.min(valid - 1)) * self.step))
    }
}

/// A run of output channels, laid out: its weights (whole blocks of [`ConvLayout`] rows), its
/// output stage, and where outputs go.
struct Run<'a> {
    weights: &'a [[u8; ROW]],
    quads: usize,
    stage: &'a Requantize,
    /// Output offset, activation minimum and maximum.
    act: (i32, i32, i32),
    /// Channels of the run.
    channels: usize,
    /// Output channels in all (bytes between output pixels).
    stride: usize,
}

impl Run<'_> {
    /// The run's channels of `valid` output pixels (at most [`ROW_TILE`]), the first at `out`:
    /// blocks of channels four, two or one at a time, a lone block 16 pixels at a time.
    fn tile_row(&self, cpu: Vnni, x: &TileIn<'_>, out: &mut [i8], valid: usize) {
        let (blocks, rows) = (self.channels.div_ceil(BLOCK), 1 + self.quads);
        if self.channels <= BLOCK / 2 {
            for first in (0..valid).step_by(TILE) {
                // SAFETY: `cpu` proves the CPU has `tile_pairs`'s target features.
                unsafe { tile_pairs(x, first, &self.weights[..rows], self, out, valid - first) };
            }
            return;
        }
        let mut b = 0;
        while b < blocks {
            let width = match blocks - b {
                4.. => 4,
                2 | 3 => 2,
                _ => 1,
            };
            let w = &self.weights[b * rows..][..width * rows];
            let c = BLOCK * b;
            let _ = cpu;
            // SAFETY: `cpu` proves the CPU has `tile`'s target features.
            unsafe {
                match width {
                    4 => {
                        // The last one or two pixels alone: a narrow row (DS-CNN's are five
                        // wide) would otherwise multiply three or two pixels for nothing.
                        let mut first = 0;
                        while first < valid {
                            let rest = valid - first;
                            match rest {
                                1 => tile::<1, 4>(x, first, w, self, c, out, rest),
                                2 => tile::<2, 4>(x, first, w, self, c, out, rest),
                                _ => tile::<4, 4>(x, first, w, self, c, out, rest),
                            }
                            first += rest.min(4);
                        }
                    }
                    2 => {
                        for first in (0..valid).step_by(8) {
                            tile::<8, 2>(x, first, w, self, c, out, valid - first);
                        }
                    }
                    _ if valid > TILE => tile::<16, 1>(x, 0, w, self, c, out, valid),
                    _ => tile::<8, 1>(x, 0, w, self, c, out, valid),
                }
            }
            b += width;
        }
    }
}

/// `R` pixels (rows `first..first + R` of `x`) by `B` blocks of 16 channels (`w`, whole
/// blocks, the first for run channel `c`): the sums over all patch values kept in registers,
/// then the output stage, the first `valid` pixels stored (pixel `r` at `out[(first + r) *
/// stride + c..]`).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
#[allow(clippy::too_many_arguments)]
fn tile<const R: usize, const B: usize>(
    x: &TileIn<'_>,
    first: usize,
    w: &[[u8; ROW]],
    run: &Run<'_>,
    c: usize,
    out: &mut [i8],
    valid: usize,
) {
    let (n, block_rows) = (x.tap_quads, 1 + run.quads);
    // One check for every load below: the quads read lie in each block (and, `pixels`, in
    // each pixel's bytes).
    assert!(w.len() == B * block_rows && x.taps.len() * n <= run.quads && first + R <= ROW_TILE);
    let px = x.pixels::<R>(first, valid);
    let mut acc = [[_mm512_setzero_si512(); B]; R];
    for j in 0..B {
        let bias = load_row(&w[j * block_rows]);
        for row in acc.iter_mut() {
            row[j] = bias;
        }
    }
    let wp = w.as_ptr();
    let mut k = 1;
    for &tap in x.taps {
        for q in 0..n {
            let mut wv = [_mm512_setzero_si512(); B];
            for (j, wv) in wv.iter_mut().enumerate() {
                // SAFETY: `k <= taps * n <= quads`, so row `j * block_rows + k` lies in `w` (the
                // assertion); `loadu` has no alignment requirement.
                *wv = unsafe { _mm512_loadu_si512(wp.add(j * block_rows + k).cast()) };
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `TileIn::pixels` checked that from each pointer every tap's quads,
                // `tap + 4q + 4` bytes at most, lie in `x.bytes`; an unaligned read.
                let v = unsafe { px[r].add(tap + 4 * q).cast::<i32>().read_unaligned() };
                let xv = _mm512_set1_epi32(v);
                for j in 0..B {
                    acc[j] = _mm512_dpbusd_epi32(acc[j], xv, wv[j]);
                }
            }
            k += 1;
        }
    }
    for j in 0..B {
        let cj = c + BLOCK * j;
        let width = run.channels.saturating_sub(cj).min(BLOCK);
        let stage = run.stage.group(cj);
        for (r, acc) in acc.iter().enumerate().take(valid) {
            let at = (first + r) * run.stride + cj;
            store_i8x16(stage.apply(acc[j], run.act), &mut out[at..at + width]);
        }
    }
}

/// [`tile`] for a run of at most eight channels, two pixels per vector: pixel `2i` in lanes
/// 0..8 and pixel `2i + 1` in lanes 8..16, against the block's filters and biases repeated in
/// both halves (the run's output stage was filled so), half the multiplies and output stages
/// of one pixel per vector.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn tile_pairs(x: &TileIn<'_>, first: usize, w: &[[u8; ROW]], run: &Run<'_>, out: &mut [i8], valid: usize) {
    const PAIRS: usize = TILE / 2;
    let (n, block_rows) = (x.tap_quads, 1 + run.quads);
    assert!(w.len() == block_rows && x.taps.len() * n <= run.quads && run.channels <= BLOCK / 2);
    let px = x.pixels::<TILE>(first, valid);
    // Lanes 0..8 of a row in both halves.
    let twice = |row: __m512i| _mm512_shuffle_i64x2::<0b01_00_01_00>(row, row);
    let mut acc = [twice(load_row(&w[0])); PAIRS];
    let mut k = 1;
    for &tap in x.taps {
        for q in 0..n {
            let wv = twice(load_row(&w[k]));
            for (i, acc) in acc.iter_mut().enumerate() {
                // SAFETY: as in `tile` (`TileIn::pixels`); unaligned reads.
                let (a, b) = unsafe {
                    let at = tap + 4 * q;
                    (
                        px[2 * i].add(at).cast::<i32>().read_unaligned(),
                        px[2 * i + 1].add(at).cast::<i32>().read_unaligned(),
                    )
                };
                let xv = _mm512_mask_set1_epi32(_mm512_set1_epi32(a), 0xFF00, b);
                *acc = _mm512_dpbusd_epi32(*acc, xv, wv);
            }
            k += 1;
        }
    }
    let (stage, width) = (run.stage.group(0), run.channels);
    for (i, acc) in acc.iter().enumerate().take(valid.div_ceil(2)) {
        let v = stage.apply(*acc, run.act);
        let at = (first + 2 * i) * run.stride;
        store_i8x16(v, &mut out[at..at + width]);
        if 2 * i + 1 < valid {
            let at = at + run.stride;
            store_i8x16(_mm_srli_si128::<8>(v), &mut out[at..at + width]);
        }
    }
}

/// The 64 bytes of a row as a vector.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_row(row: &[u8; ROW]) -> __m512i {
    // SAFETY: `row` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_si512(row.as_ptr().cast()) }
}

/// The input bytes as unsigned patch bytes (sign bit flipped), as many as both hold, 64 at
/// a time (the loop LLVM made of a plain one took 16, this file's callers not being compiled
/// for AVX-512).
fn flip(cpu: Vnni, src: &[i8], dst: &mut [u8]) {
    let _ = cpu;
    // SAFETY: `cpu` proves the CPU has AVX-512 F and BW (`has_vnni`).
    unsafe { flip_bytes(src, dst) }
}

/// Lays out a run of `n` channels (`filter` and `bias` from the run's first) as
/// [`ConvLayout`] says, into `out` (whole blocks, zeroed). Where the layout's quads run
/// straight along each filter row, whole groups of eight channels have their first values, 32
/// per channel at a time, transposed in registers ([`transpose_group`]), and the rest go
/// four bytes at a time; other layouts (taps of three channels padded to quads) go value by
/// value ([`ConvLayout::pack_run`]).
fn pack(
    cpu: Vnni,
    p: &ConvParams,
    layout: ConvLayout,
    (filter, bias): (&[i8], Option<&[i32]>),
    out: &mut [[u8; ROW]],
) {
    let per_filter = p.window.filter.h * p.window.filter.w * p.input.c;
    let n = filter.len() / per_filter;
    if layout.reads != Reads::Gathered && !p.input.c.is_multiple_of(4) {
        layout.pack_run(p, filter, bias, n, out);
        return;
    }
    let (quads, rows) = (layout.quads, layout.block_rows());
    let chunks = per_filter / 32;
    for (g, group) in filter.chunks_exact(8 * per_filter).enumerate() {
        let quads_of = &mut out[g / 2 * rows + 1..][..8 * chunks];
        let _ = cpu;
        // SAFETY: `cpu` proves the CPU has AVX2.
        unsafe { transpose_group(group, per_filter, chunks, quads_of, g % 2) };
    }
    let whole_groups = n / 8;
    for (c, row) in filter.chunks_exact(per_filter).enumerate() {
        let (block, lane) = (c / BLOCK, 4 * (c % BLOCK));
        let from = if c / 8 < whole_groups { 8 * chunks } else { 0 };
        let (head, tail_rows) = out[block * rows..][..rows].split_at_mut(1);
        let dst = &mut tail_rows[from..quads];
        let (whole, tail) = row[4 * from..].as_chunks::<4>();
        for (d, x) in dst.iter_mut().zip(whole) {
            d[lane..lane + 4].copy_from_slice(&x.map(|x| x as u8));
        }
        for (i, &x) in tail.iter().enumerate() {
            dst[whole.len()][lane + i] = x as u8;
        }
        let folded = folded_bias(bias.map_or(0, |b| b[c]), p.input_zero_point, row);
        head[0][lane..lane + 4].copy_from_slice(&folded.to_le_bytes());
    }
}

/// The first `32 * chunks` values of eight filter rows (`rows`, `per_filter` apart) laid out
/// as [`pack`] does, into half `half` (bytes `32 * half..`) of each of `out`'s rows: per 32
/// values, an 8x8 transposition of 4-byte words.
#[target_feature(enable = "avx2")]
fn transpose_group(rows: &[i8], per_filter: usize, chunks: usize, out: &mut [[u8; ROW]], half: usize) {
    for (i, out) in out.as_chunks_mut::<8>().0.iter_mut().enumerate().take(chunks) {
        let mut r = [_mm256_setzero_si256(); 8];
        for (j, r) in r.iter_mut().enumerate() {
            let (v, _) = rows[j * per_filter + 32 * i..][..32].as_chunks::<32>();
            *r = load_i8x32(&v[0]);
        }
        // Pairs of rows interleaved by words, then by double words, then the halves swapped:
        // word q of each row gathered in vector q.
        let t = [0, 2, 4, 6]
            .map(|j| (_mm256_unpacklo_epi32(r[j], r[j + 1]), _mm256_unpackhi_epi32(r[j], r[j + 1])));
        let mut u = [_mm256_setzero_si256(); 8];
        for (h, pair) in [0, 2].into_iter().enumerate() {
            let (a, b) = (t[pair], t[pair + 1]);
            u[4 * h] = _mm256_unpacklo_epi64(a.0, b.0);
            u[4 * h + 1] = _mm256_unpackhi_epi64(a.0, b.0);
            u[4 * h + 2] = _mm256_unpacklo_epi64(a.1, b.1);
            u[4 * h + 3] = _mm256_unpackhi_epi64(a.1, b.1);
        }
        for q in 0..4 {
            let lo = &mut out[q].as_chunks_mut::<32>().0[half];
            store_u8x32(_mm256_permute2x128_si256::<0x20>(u[q], u[q + 4]), lo);
            let hi = &mut out[q + 4].as_chunks_mut::<32>().0[half];
            store_u8x32(_mm256_permute2x128_si256::<0x31>(u[q], u[q + 4]), hi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepack::pack_conv;
    use crate::quant::ActivationRange;
    use crate::shape::{Nhwc, Window};
    use crate::testutil::Lcg;
    use std::vec;
    use std::vec::Vec;

    /// A layer over `window` with random zero points, inputs, filters, biases and output
    /// stages.
    struct Layer {
        p: ConvParams,
        x: Vec<i8>,
        f: Vec<i8>,
        bias: Vec<i32>,
        m: Vec<i32>,
        shift: Vec<i32>,
    }

    impl Layer {
        fn random(rng: &mut Lcg, input: Nhwc, oc: usize, window: Window) -> Layer {
            let p = ConvParams {
                input,
                output_channels: oc,
                window,
                input_zero_point: rng.range(-128, 127),
                output_zero_point: rng.range(-128, 127),
                activation: ActivationRange::INT8,
            };
            let x = rng.bytes(input.elements().unwrap());
            let f = rng.bytes(oc * window.filter.h * window.filter.w * input.c);
            let bias = (0..oc).map(|_| rng.range(-5000, 5000)).collect();
            let m = (0..oc).map(|_| rng.range(1 << 30, i32::MAX)).collect();
            let shift = (0..oc).map(|_| rng.range(-10, 1)).collect();
            Layer { p, x, f, bias, m, shift }
        }

        fn quant(&self) -> PerChannel<'_> {
            PerChannel { multiplier: &self.m, shift: &self.shift }
        }

        /// Zeroed outputs.
        fn output(&self) -> Vec<i8> {
            vec![0; self.p.output_shape().elements().unwrap()]
        }
    }

    /// Laid out per call, laid out ahead of time, and the SSE2 loops agree, on layers of each
    /// path: padded RGB taps (rows of more than 16 pixels, runs of at most eight channels
    /// taking pixels in pairs), quads of eight channels, filter rows of one or two channels,
    /// pointwise with and without whole quads, channel runs past one block and past `RUN`.
    #[test]
    fn layouts_agree_with_the_sse2_loops() {
        if !has_vnni() {
            return;
        }
        let mut rng = Lcg(7);
        let cases = [
            (Nhwc::new(1, 9, 9, 3), 8, Hw::square(3), 2, 1),
            (Nhwc::new(1, 6, 37, 3), 5, Hw::square(3), 2, 1),
            (Nhwc::new(2, 7, 6, 8), 40, Hw::square(3), 1, 1),
            (Nhwc::new(1, 10, 10, 1), 17, Hw::new(3, 2), 1, 0),
            (Nhwc::new(1, 9, 30, 1), 8, Hw::square(3), 2, 1),
            (Nhwc::new(2, 7, 21, 2), 12, Hw::new(3, 5), 2, 1),
            (Nhwc::new(1, 5, 5, 6), 33, Hw::square(1), 1, 0),
            (Nhwc::new(1, 3, 3, 64), 300, Hw::square(1), 1, 0),
            (Nhwc::new(1, 6, 6, 5), 16, Hw::square(5), 1, 2),
        ];
        for (input, oc, filter, stride, pad) in cases {
            let out_hw = |size: usize, f: usize| (size + 2 * pad - f) / stride + 1;
            let output = Hw::new(out_hw(input.h, filter.h), out_hw(input.w, filter.w));
            let window = Window {
                filter,
                stride: Hw::square(stride),
                dilation: Hw::square(1),
                pad: Hw::square(pad),
                output,
            };
            let layer = Layer::random(&mut rng, input, oc, window);
            let (p, x, f, bias, quant) = (&layer.p, &layer.x, &layer.f, &layer.bias, layer.quant());
            let (mut want, mut per_call, mut ahead) = (layer.output(), layer.output(), layer.output());
            super::super::x86::conv2d(p, x, f, Some(bias), quant, &mut want).unwrap();
            conv2d(p, x, f, Some(bias), quant, &mut per_call).unwrap();
            let mut packed = vec![0u8; ConvLayout::of(p).unwrap().len()];
            pack_conv(p, f, Some(bias), &mut packed).unwrap();
            let vnni = Some(ConvPacked::Vnni(&packed));
            conv2d_prepacked(p, x, (f, Some(bias), vnni), quant, &mut ahead).unwrap();
            assert_eq!(per_call, want, "{input:?} -> {oc}");
            assert_eq!(ahead, want, "{input:?} -> {oc}");
            // A layout of the wrong length is an error, not a guess.
            let short = Some(ConvPacked::Vnni(&packed[1..]));
            assert!(conv2d_prepacked(p, x, (f, Some(bias), short), quant, &mut ahead).is_err());
        }
    }

    /// The AVX2 blocked loop over filter pairs laid out ahead of time agrees with the same
    /// loop laying them out per call, and the portable layout is the loop's own, on layers it
    /// takes: pointwise with a last partial group, several runs of 64 channels, runs of 24
    /// (600-value filters), a column-dilated 3x3 and rows too wide to stage (gathered
    /// patches). Layers the direct loop takes have no such layout.
    #[test]
    fn filter_pairs_laid_out_ahead_agree_with_the_avx2_loop() {
        if has_vnni() || !super::super::avx2::has_avx2() {
            return std::eprintln!("skipped: this CPU does not take the AVX2 loops");
        }
        let mut rng = Lcg(11);
        let cases = [
            (Nhwc::new(1, 5, 5, 6), 33, Hw::square(1), Hw::square(1), 0),
            (Nhwc::new(2, 3, 3, 64), 300, Hw::square(1), Hw::square(1), 0),
            (Nhwc::new(1, 2, 3, 600), 50, Hw::square(1), Hw::square(1), 0),
            (Nhwc::new(1, 9, 9, 5), 20, Hw::square(3), Hw::new(1, 2), 1),
            (Nhwc::new(1, 4, 400, 16), 9, Hw::square(3), Hw::square(1), 1),
        ];
        for (input, oc, filter, dilation, pad) in cases {
            let out_hw = |size: usize, f: usize, d: usize| size + 2 * pad - (f - 1) * d;
            let output =
                Hw::new(out_hw(input.h, filter.h, dilation.h), out_hw(input.w, filter.w, dilation.w));
            let window = Window { filter, stride: Hw::square(1), dilation, pad: Hw::square(pad), output };
            let layer = Layer::random(&mut rng, input, oc, window);
            let (p, x, f, bias, quant) = (&layer.p, &layer.x, &layer.f, &layer.bias, layer.quant());
            let len = crate::prepack::conv_pairs_len(p).expect("the blocked loop takes the layer");
            let mut pairs = vec![0i16; len];
            crate::prepack::pack_conv_pairs(p, f, &mut pairs).unwrap();
            let (per_filter, stride) = (filter.h * filter.w * input.c, len / oc.next_multiple_of(8));
            let mut own = vec![0i16; len];
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { super::super::avx2::pack_filters(f, per_filter, stride, oc, &mut own) };
            assert_eq!(pairs, own, "{input:?} -> {oc}");
            let (mut want, mut ahead) = (layer.output(), layer.output());
            super::super::x86::conv2d(p, x, f, Some(bias), quant, &mut want).unwrap();
            let packed = Some(ConvPacked::Pairs(&pairs));
            conv2d_prepacked(p, x, (f, Some(bias), packed), quant, &mut ahead).unwrap();
            assert_eq!(ahead, want, "{input:?} -> {oc}");
            let short = Some(ConvPacked::Pairs(&pairs[1..]));
            assert!(conv2d_prepacked(p, x, (f, Some(bias), short), quant, &mut ahead).is_err());
        }
        // A 3x3 layer the direct loop takes: no pairs, and laying them out is an error.
        let window = Window {
            filter: Hw::square(3),
            stride: Hw::square(1),
            dilation: Hw::square(1),
            pad: Hw::square(1),
            output: Hw::square(8),
        };
        let p = Layer::random(&mut rng, Nhwc::new(1, 8, 8, 4), 8, window).p;
        assert_eq!(crate::prepack::conv_pairs_len(&p), None);
        assert!(crate::prepack::pack_conv_pairs(&p, &[0; 288], &mut [0; 512]).is_err());
    }
}
