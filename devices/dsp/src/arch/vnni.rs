//! int8 convolution as an unsigned-by-signed byte GEMM on AVX-512 VNNI (`VPDPBUSD`), taken at
//! run time where the CPU has it; elsewhere the SSE2 loops run.
//!
//! `VPDPBUSD` adds to each int32 lane the four products of its unsigned bytes of one operand
//! and signed bytes of the other, without saturation. Inputs are made unsigned by flipping
//! their sign bit (`u = x + 128`) and the difference is folded into each channel's bias once
//! per call: `Σ (x + offset)·w = Σ u·w + (offset − 128)·Σ w`, all modulo 2^32 as every other
//! path sums, so the results are bit-exact with them. The padding's patch byte is the input
//! zero point flipped likewise (its `x + offset` is 0).
//!
//! Per call, a run of output channels has its filters laid out in blocks of eight channels
//! (per four patch values, 32 bytes: four of each channel, as `VPDPBUSD` pairs them with four
//! bytes of a pixel broadcast to every lane). An image of three or more channels is copied
//! as unsigned bytes with its padding, in bands of output rows whose input rows fit 32 KiB
//! (each pixel's channels padded to whole quads, the filter laid out to match), and the tiles
//! read every filter tap in place from it; other
//! convolutions gather their patches (im2col) as unsigned bytes, per block of output pixels,
//! once for the whole run. Tiles of four pixels by up to 64 channels keep their sums in
//! registers (pairs of blocks in 512-bit registers, 16 channels each) and go through the
//! output stage (TFLite's per-channel requantization, 16 channels per AVX-512 vector; eight
//! per AVX2 vector for a last odd block, and for runs with a multiplier of `i32::MIN`)
//! straight to the output. The CPU check is `avx2::has_vnni`.

use core::arch::x86_64::*;

use super::avx2::{
    OutStage, has_vnni, load_i8x32, load_i32x8, load_u8x32, requantize8, store_i32x8, store_u8x32,
};
use super::avx512::{Requantize, load_i32x16, store_i8x16};
use crate::conv::{ConvParams, im2col, next_pixel};
use crate::error::DspError;
use crate::filled::Filled;
use crate::quant::{PerChannel, check_per_channel};
use crate::shape::Hw;

/// Patch bytes of one block of output pixels (32 KiB of stack).
const PATCH_BYTES: usize = 32 * 1024;
/// Laid-out filter bytes of one run of channels (64 KiB of stack).
const FILTER_BYTES: usize = 64 * 1024;
/// Most output channels per run (a multiple of 32).
const CHANNEL_RUN: usize = 256;
/// Output pixels per tile.
const TILE: usize = 4;

/// 2-D convolution with per-channel weights (TFLite's `ConvPerChannel`) on the best inner
/// loops for the CPU: AVX-512 VNNI where it has them (and the patches fit the stack buffers,
/// at least four in 32 KiB), else SSE2 ([`crate::x86::conv2d`]); the results are the same.
/// See [`ConvParams`] for the layouts.
pub fn conv2d(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check_per_channel(p, input, filter, bias, &quant, output)?;
    let per_filter = p.window.filter.h * p.window.filter.w * p.input.c;
    let quads = per_filter.div_ceil(4);
    let fits = quads > 0 && TILE * 4 * quads <= PATCH_BYTES && 8 * 4 * quads <= FILTER_BYTES;
    if p.output_channels > 0 && fits && has_vnni() {
        vnni_conv(Vnni(()), p, input, filter, bias, quant, output);
        return Ok(());
    }
    super::x86::conv2d(p, input, filter, bias, quant, output)
}

/// Proof that the CPU has the target features of [`tile`] (made only where [`has_vnni`]).
#[derive(Clone, Copy)]
struct Vnni(());

/// The convolution (arguments checked by `conv2d`, patches fitting the buffers). Not itself
/// compiled for VNNI, so that the gathering code (generic, shared with the SSE2 path) inlines.
fn vnni_conv(
    cpu: Vnni,
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (s, w, oc_n) = (p.input, p.window, p.output_channels);
    let taps = w.filter.h * w.filter.w;
    let per_filter = taps * s.c;
    let total = s.n * w.output.h * w.output.w;
    let offset = -p.input_zero_point;
    let pad = (p.input_zero_point as i8 as u8) ^ 0x80;
    let pointwise = w.is_pointwise();

    // The filter's taps read in place from each image, padded, where that fits the buffers:
    // each pixel's channels padded to whole quads (`icq` of them: three channels take four
    // bytes; one or two stay with gathered patches, which padding would make four or two
    // times longer).
    // The image goes in bands of output rows, as many as their padded input rows fit
    // `PATCH_BYTES` (at least one).
    let Hw { h: hp, w: wp } = w.padded_input();
    let icq = s.c.div_ceil(4);
    let band_input = |rows: usize| (rows - 1) * w.stride.h + (w.filter.h - 1) * w.dilation.h + 1;
    let row_bytes =
        wp.checked_mul(4 * icq).filter(|&b| b > 0 && b.saturating_mul(band_input(1)) <= PATCH_BYTES);
    let implicit =
        !pointwise && s.c >= 3 && taps <= MAX_TAPS && row_bytes.is_some() && 32 * taps * icq <= FILTER_BYTES;
    let row_bytes = row_bytes.unwrap_or(1);
    let band =
        ((PATCH_BYTES / row_bytes).saturating_sub(band_input(1)) / w.stride.h + 1).min(w.output.h).max(1);
    // Quads per filter: per tap for the padded image, else of the whole patch.
    let quads = if implicit { taps * icq } else { per_filter.div_ceil(4) };
    let stride = 4 * quads;
    // Pixels per block, whole tiles (at least one, as `conv2d` checked).
    let block = (PATCH_BYTES / stride / TILE * TILE).min(total.next_multiple_of(TILE));
    let run_len = (FILTER_BYTES / (32 * quads) * 8).min(CHANNEL_RUN);
    // Not zeroed whole: each call writes only what it uses, which for the small layers of
    // tiny-ML models is a fraction of these.
    let mut patches = Filled::<u8, PATCH_BYTES>::new();
    let mut packed = Filled::<[u8; 32], { FILTER_BYTES / 32 }>::new();
    let mut stage = Stage { bias: [0; CHANNEL_RUN], multiplier: [0; CHANNEL_RUN], shift: [0; CHANNEL_RUN] };
    // The output stage for 512-bit tiles, which need no multiplier of `i32::MIN`.
    let mut wide = Requantize::new();
    let wide_ok = !quant.multiplier.contains(&i32::MIN);
    let out_stage = OutStage { offset: p.output_zero_point, min: p.activation.min, max: p.activation.max };
    // Zeros past each patch (never written: multiplied by zero filter values).
    let patches =
        patches.reset(if implicit { band_input(band).min(hp) * row_bytes } else { block * stride }, 0);
    let mut sums = [0i32; 8];
    for c0 in (0..oc_n).step_by(run_len) {
        let n = (oc_n - c0).min(run_len);
        let blocks = n.div_ceil(8);
        let packed = packed.reset(blocks * quads, [0; 32]);
        let run_filter = &filter[c0 * per_filter..][..n * per_filter];
        if implicit && !s.c.is_multiple_of(4) {
            pack_padded_taps(run_filter, per_filter, (s.c, icq, quads), packed);
        } else {
            pack_filters(cpu, run_filter, per_filter, quads, packed);
        }
        for j in 0..blocks * 8 {
            let c = c0 + j;
            if j % 8 == 0 {
                // SAFETY: `cpu` proves the CPU has `block_sums`'s target features.
                sums = unsafe { block_sums(&packed[j / 8 * quads..][..quads]) };
            }
            (stage.bias[j], stage.multiplier[j], stage.shift[j]) = if j < n {
                let sum = sums[j % 8];
                let b = bias.map_or(0, |b| b[c]);
                (b.wrapping_add((offset - 128).wrapping_mul(sum)), quant.multiplier[c], quant.shift[c])
            } else {
                (0, 0, 0)
            };
        }
        if wide_ok {
            let _ = cpu;
            // SAFETY: `cpu` proves the CPU has AVX-512 F, BW and VL (`has_vnni`).
            unsafe { wide.fill(&quant, c0, n, n) };
        }
        let wide = wide_ok.then_some(&wide);
        let run =
            Run { packed, blocks, stage: &stage, wide, out_stage: &out_stage, channels: n, stride: oc_n };
        if implicit {
            // Each image once, as unsigned bytes with its padding, which the tiles read in
            // place: no patches.
            let mut taps = [0usize; MAX_TAPS];
            for fy in 0..w.filter.h {
                for fx in 0..w.filter.w {
                    taps[fy * w.filter.w + fx] = (fy * w.dilation.h * wp + fx * w.dilation.w) * icq;
                }
            }
            let taps = &taps[..w.filter.h * w.filter.w];
            let per_image = w.output.h * w.output.w;
            for b in 0..s.n {
                let image = &input[b * s.h * s.w * s.c..][..s.h * s.w * s.c];
                for oy0 in (0..w.output.h).step_by(band) {
                    let band_rows = (w.output.h - oy0).min(band);
                    let first_row = oy0 * w.stride.h;
                    let padded = &mut patches[..band_input(band_rows).min(hp - first_row) * row_bytes];
                    pad_image(p, image, (first_row, wp, 4 * icq), pad, padded);
                    let (padded, _) = padded.as_chunks::<4>();
                    let base =
                        |i: usize| ((i / w.output.w) * w.stride.h * wp + (i % w.output.w) * w.stride.w) * icq;
                    let pixels = band_rows * w.output.w;
                    let first = b * per_image + oy0 * w.output.w;
                    for t in (0..pixels).step_by(TILE) {
                        let rows = (pixels - t).min(TILE);
                        // A partial tile repeats its last pixel, whose copies are not stored.
                        let at = [0, 1, 2, 3].map(|r| &padded[base(t + r.min(rows - 1))..]);
                        let tile_in = TileIn { rows: at, taps, tap_quads: icq };
                        run.tile_row(cpu, &tile_in, &mut output[(first + t) * oc_n + c0..], rows);
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
            if pointwise {
                let rows = &input[first * s.c..][..np * s.c];
                for (patch, x) in patches.chunks_exact_mut(stride).zip(rows.chunks_exact(s.c)) {
                    flip(x, &mut patch[..s.c]);
                }
            } else {
                for patch in patches.chunks_exact_mut(stride).take(np) {
                    im2col(p, input, pixel, &mut patch[..per_filter], pad, |x| (x as u8) ^ 0x80);
                    pixel = next_pixel(p, pixel);
                }
            }
            let (patch_quads, _) = patches.as_chunks::<4>();
            for t in (0..np).step_by(TILE) {
                let at = [0, 1, 2, 3].map(|r| &patch_quads[(t + r) * quads..][..quads]);
                let tile_in = TileIn { rows: at, taps: &[0], tap_quads: quads };
                run.tile_row(cpu, &tile_in, &mut output[(first + t) * oc_n + c0..], (np - t).min(TILE));
            }
        }
    }
}

/// Most filter taps (height times width) of the implicit path.
const MAX_TAPS: usize = 64;

/// Rows of one image as unsigned bytes (sign bit flipped) in a window `wp` wide starting at
/// the padding's left edge and padded row `first_row` (`padded` holds whole rows), each
/// pixel's channels padded to `cp`; positions outside the image are `pad`.
fn pad_image(
    p: &ConvParams,
    image: &[i8],
    (first_row, wp, cp): (usize, usize, usize),
    pad: u8,
    padded: &mut [u8],
) {
    let (s, w, c) = (p.input, p.window, p.input.c);
    for (y, row) in padded.chunks_exact_mut(wp * cp).enumerate() {
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
                flip(src, &mut row[x0 * c..x1 * c]);
            } else if c == 3 {
                // RGB, the common case, a quad per pixel (the padding byte meets a zero filter
                // value).
                let (dst, _) = row[x0 * 4..x1 * 4].as_chunks_mut::<4>();
                for (d, x) in dst.iter_mut().zip(src.as_chunks::<3>().0) {
                    *d = [x[0] as u8 ^ 0x80, x[1] as u8 ^ 0x80, x[2] as u8 ^ 0x80, pad];
                }
            } else {
                // Channels padded to `cp` quads likewise, a quad at a time (`fill` would call
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

/// Where a tile's four pixels read their patch values: pixel `r`'s from `rows[r]`, filter tap
/// `t`'s `tap_quads` quads starting at quad `taps[t]` (one tap of the whole patch for gathered
/// patches; one per filter tap when read in place from a padded image).
struct TileIn<'a> {
    rows: [&'a [[u8; 4]]; TILE],
    taps: &'a [usize],
    tap_quads: usize,
}

/// A run of output channels, laid out: its filters, per-channel stage, and where outputs go.
struct Run<'a> {
    packed: &'a [[u8; 32]],
    blocks: usize,
    stage: &'a Stage,
    /// The output stage of [`tile512`], where the run may take it.
    wide: Option<&'a Requantize>,
    out_stage: &'a OutStage,
    /// Channels of the run.
    channels: usize,
    /// Output channels in all (bytes between output pixels).
    stride: usize,
}

impl Run<'_> {
    /// The run's channels of `rows` output pixels (at most [`TILE`]), the first at `out`.
    fn tile_row(&self, cpu: Vnni, tile_in: &TileIn<'_>, out: &mut [i8], rows: usize) {
        let quads = self.packed.len() / self.blocks;
        let mut b = 0;
        while b < self.blocks {
            if let Some(wide) = self.wide.filter(|_| self.blocks - b >= 2) {
                // Pairs of blocks, 16 channels per 512-bit vector.
                let width = match (self.blocks - b) / 2 {
                    4.. => 4,
                    2 | 3 => 2,
                    _ => 1,
                };
                let filters = &self.packed[b * quads..][..2 * width * quads];
                let to = TileOut {
                    out: &mut *out,
                    stride: self.stride,
                    rows,
                    first_channel: 8 * b,
                    channels: self.channels,
                };
                let stages = (self.stage, wide, self.out_stage);
                // SAFETY: `cpu` proves the CPU has `tile512`'s target features.
                unsafe {
                    match width {
                        4 => tile512::<4>(tile_in, filters, stages, to),
                        2 => tile512::<2>(tile_in, filters, stages, to),
                        _ => tile512::<1>(tile_in, filters, stages, to),
                    }
                }
                b += 2 * width;
                continue;
            }
            let width = match self.blocks - b {
                4.. => 4,
                2 | 3 => 2,
                _ => 1,
            };
            let filters = &self.packed[b * quads..][..width * quads];
            let to = TileOut {
                out: &mut *out,
                stride: self.stride,
                rows,
                first_channel: 8 * b,
                channels: self.channels,
            };
            let _ = cpu;
            // SAFETY: `cpu` proves the CPU has `tile`'s target features.
            unsafe {
                match width {
                    4 => tile::<4>(tile_in, filters, self.stage, self.out_stage, to),
                    2 => tile::<2>(tile_in, filters, self.stage, self.out_stage, to),
                    _ => tile::<1>(tile_in, filters, self.stage, self.out_stage, to),
                }
            }
            b += width;
        }
    }
}

/// Lays out the filters of a run (rows of `per_filter = taps * ic` int8) as [`pack_filters`]
/// does, but with each tap's `ic` values padded to `icq` quads, as the padded image's pixels
/// are: tap `t`'s values in quads `t * icq..` of the filter's `quads`. `packed` holds zeros.
fn pack_padded_taps(
    filter: &[i8],
    per_filter: usize,
    (ic, icq, quads): (usize, usize, usize),
    packed: &mut [[u8; 32]],
) {
    for (c, row) in filter.chunks_exact(per_filter).enumerate() {
        let (block, lane) = (c / 8, 4 * (c % 8));
        let dst = &mut packed[block * quads..][..quads];
        for (t, tap) in row.chunks_exact(ic).enumerate() {
            for (i, &x) in tap.iter().enumerate() {
                dst[t * icq + i / 4][lane + i % 4] = x as u8;
            }
        }
    }
}

/// The input bytes as unsigned patch bytes (sign bit flipped).
#[inline]
fn flip(src: &[i8], dst: &mut [u8]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = (x as u8) ^ 0x80;
    }
}

/// Lays out the filters of a run (rows of `per_filter` int8) in blocks of eight channels: per
/// block, per four filter values `4q..4q + 4`, 32 bytes: those four values of each channel.
/// Values past `per_filter` and channels past the run are left as they are (zeros). Whole
/// blocks' first values, 32 per channel at a time, are transposed in registers
/// ([`transpose_block`]); the rest four bytes at a time.
fn pack_filters(cpu: Vnni, filter: &[i8], per_filter: usize, quads: usize, packed: &mut [[u8; 32]]) {
    let chunks = per_filter / 32;
    let whole_blocks = filter.len() / per_filter / 8;
    for (block, rows) in filter.chunks_exact(8 * per_filter).enumerate() {
        let _ = cpu;
        // SAFETY: `cpu` proves the CPU has AVX2.
        unsafe { transpose_block(rows, per_filter, chunks, &mut packed[block * quads..][..8 * chunks]) };
    }
    for (c, row) in filter.chunks_exact(per_filter).enumerate() {
        let (block, lane) = (c / 8, 4 * (c % 8));
        // Quads the transposition did not write.
        let from = if block < whole_blocks { 8 * chunks } else { 0 };
        let dst = &mut packed[block * quads..][from..quads];
        let (whole, tail) = row[4 * from..].as_chunks::<4>();
        for (d, x) in dst.iter_mut().zip(whole) {
            d[lane..lane + 4].copy_from_slice(&x.map(|x| x as u8));
        }
        for (i, &x) in tail.iter().enumerate() {
            dst[whole.len()][lane + i] = x as u8;
        }
    }
}

/// The first `32 * chunks` values of eight filter rows (`rows`, `per_filter` apart) laid out
/// as [`pack_filters`] does: per 32 values, an 8x8 transposition of 4-byte words.
#[target_feature(enable = "avx2")]
fn transpose_block(rows: &[i8], per_filter: usize, chunks: usize, out: &mut [[u8; 32]]) {
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
        for (h, half) in [0, 2].into_iter().enumerate() {
            let (a, b) = (t[half], t[half + 1]);
            u[4 * h] = _mm256_unpacklo_epi64(a.0, b.0);
            u[4 * h + 1] = _mm256_unpackhi_epi64(a.0, b.0);
            u[4 * h + 2] = _mm256_unpacklo_epi64(a.1, b.1);
            u[4 * h + 3] = _mm256_unpackhi_epi64(a.1, b.1);
        }
        for q in 0..4 {
            store_u8x32(_mm256_permute2x128_si256::<0x20>(u[q], u[q + 4]), &mut out[q]);
            store_u8x32(_mm256_permute2x128_si256::<0x31>(u[q], u[q + 4]), &mut out[q + 4]);
        }
    }
}

/// Each channel's sum of filter values, from a block laid out by [`pack_filters`] (its zeros
/// add nothing): `VPDPBUSD` of ones.
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
fn block_sums(block: &[[u8; 32]]) -> [i32; 8] {
    let ones = _mm256_set1_epi8(1);
    let mut sum = _mm256_setzero_si256();
    for q in block {
        sum = _mm256_dpbusd_epi32(sum, ones, load_u8x32(q));
    }
    let mut out = [0i32; 8];
    store_i32x8(sum, &mut out);
    out
}

/// Per-channel values of a run, padded with zeros to whole blocks of eight: the bias with the
/// unsigned inputs' correction, and the requantization.
struct Stage {
    bias: [i32; CHANNEL_RUN],
    multiplier: [i32; CHANNEL_RUN],
    shift: [i32; CHANNEL_RUN],
}

/// Where a tile's outputs go: `rows` pixels `stride` bytes apart from `out`, channels
/// `first_channel..` of the run's `channels`.
struct TileOut<'a> {
    out: &'a mut [i8],
    stride: usize,
    rows: usize,
    first_channel: usize,
    channels: usize,
}

/// Eight per-channel values starting at channel `from` of a run.
#[target_feature(enable = "avx2")]
#[inline]
fn lanes(values: &[i32; CHANNEL_RUN], from: usize) -> __m256i {
    let (v, _) = values[from..][..8].as_chunks::<8>();
    load_i32x8(&v[0])
}

/// Four pixels by `B` blocks of eight channels: the sums over all patch values, kept in
/// registers, then the output stage, stored.
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
#[inline]
fn tile<const B: usize>(
    tile_in: &TileIn<'_>,
    filters: &[[u8; 32]],
    stage: &Stage,
    out_stage: &OutStage,
    to: TileOut<'_>,
) {
    let quads = filters.len() / B;
    let mut w = [&filters[..0]; B];
    for (j, w) in w.iter_mut().enumerate() {
        *w = &filters[j * quads..][..quads];
    }
    let mut acc = [[_mm256_setzero_si256(); B]; TILE];
    for j in 0..B {
        let b = lanes(&stage.bias, to.first_channel + 8 * j);
        for row in acc.iter_mut() {
            row[j] = b;
        }
    }
    let n = tile_in.tap_quads;
    for (t, &tap) in tile_in.taps.iter().enumerate() {
        let mut x = [&tile_in.rows[0][..0]; TILE];
        for (x, row) in x.iter_mut().zip(&tile_in.rows) {
            *x = &row[tap..][..n];
        }
        let mut wt = [&w[0][..0]; B];
        for (wt, w) in wt.iter_mut().zip(&w) {
            *wt = &w[t * n..][..n];
        }
        for q in 0..n {
            let mut wq = [_mm256_setzero_si256(); B];
            for j in 0..B {
                wq[j] = load_u8x32(&wt[j][q]);
            }
            for r in 0..TILE {
                let x = _mm256_set1_epi32(i32::from_le_bytes(x[r][q]));
                for j in 0..B {
                    acc[r][j] = _mm256_dpbusd_epi32(acc[r][j], x, wq[j]);
                }
            }
        }
    }
    for j in 0..B {
        let c = to.first_channel + 8 * j;
        let m = lanes(&stage.multiplier, c);
        let s = lanes(&stage.shift, c);
        let width = to.channels.saturating_sub(c).min(8);
        for (r, row) in acc.iter().enumerate().take(to.rows) {
            let bytes = requantize8(row[j], m, s, out_stage);
            let out = &mut to.out[r * to.stride + c..];
            if width == 8 {
                // A whole block without a `memcpy` call for a variable length.
                out.as_chunks_mut::<8>().0[0] = bytes;
            } else {
                out[..width].copy_from_slice(&bytes[..width]);
            }
        }
    }
}

/// Four pixels by `B` pairs of blocks (16 channels per 512-bit vector, the pair's two
/// blocks of eight side by side): [`tile`] on twice the lanes, with the output stage of
/// [`Requantize`] (the run's multipliers are not `i32::MIN`).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn tile512<const B: usize>(
    tile_in: &TileIn<'_>,
    filters: &[[u8; 32]],
    (stage, wide, out_stage): (&Stage, &Requantize, &OutStage),
    to: TileOut<'_>,
) {
    let quads = filters.len() / (2 * B);
    let mut w = [(&filters[..0], &filters[..0]); B];
    for (j, w) in w.iter_mut().enumerate() {
        *w = (&filters[2 * j * quads..][..quads], &filters[(2 * j + 1) * quads..][..quads]);
    }
    let mut acc = [[_mm512_setzero_si512(); B]; TILE];
    for j in 0..B {
        let b = load_i32x16(&stage.bias, to.first_channel + 16 * j);
        for row in acc.iter_mut() {
            row[j] = b;
        }
    }
    let n = tile_in.tap_quads;
    for (t, &tap) in tile_in.taps.iter().enumerate() {
        let mut x = [&tile_in.rows[0][..0]; TILE];
        for (x, row) in x.iter_mut().zip(&tile_in.rows) {
            *x = &row[tap..][..n];
        }
        let mut wt = [(&w[0].0[..0], &w[0].1[..0]); B];
        for (wt, w) in wt.iter_mut().zip(&w) {
            *wt = (&w.0[t * n..][..n], &w.1[t * n..][..n]);
        }
        for q in 0..n {
            let mut wq = [_mm512_setzero_si512(); B];
            for j in 0..B {
                let (lo, hi) = (load_u8x32(&wt[j].0[q]), load_u8x32(&wt[j].1[q]));
                wq[j] = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
            }
            for r in 0..TILE {
                let x = _mm512_set1_epi32(i32::from_le_bytes(x[r][q]));
                for j in 0..B {
                    acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, wq[j]);
                }
            }
        }
    }
    let act = (out_stage.offset, out_stage.min, out_stage.max);
    for j in 0..B {
        let c = to.first_channel + 16 * j;
        let width = to.channels.saturating_sub(c).min(16);
        for (r, row) in acc.iter().enumerate().take(to.rows) {
            let out = &mut to.out[r * to.stride + c..];
            store_i8x16(wide.apply(row[j], c, act), &mut out[..width]);
        }
    }
}
