//! float32 convolution, depthwise convolution and fully connected layers on AVX2 with FMA
//! (convolution tiles of 16 channels and more on AVX-512F where the CPU has it), taken at run
//! time where the CPU has them (`hostrt_dsp::has_avx2_fma`); otherwise, and for shapes
//! outside what these loops take, the portable kernels run.
//!
//! A convolution reads each image once into a zero-padded copy on the stack, in bands of
//! output rows whose input rows fit it, so that every filter tap of every output pixel reads
//! in bounds (a pointwise one reads its image in place). A depthwise convolution reads its
//! image in place, in blocks of output pixels that read the same taps inside the image: the
//! pixels at the edges skip the taps outside. Then:
//! - convolution: tiles of up to twelve sums in registers, six output pixels by 32 output
//!   channels or twelve by 16 on 512-bit registers; on 256-bit ones six, five or four pixels
//!   by 16 (whichever wastes least on the band's pixels) or eight by 8; every tile of a band
//!   for one block of channels in one call; per filter tap and input channel, one broadcast
//!   input value times the filter's row of output channels (`[kh, kw, in, out]`: contiguous,
//!   read in place or as laid out ahead of time, or, for a filter beyond 32 KiB read by four
//!   tiles or more, copied a block of channels at a time into a panel on the stack);
//! - depthwise (multiplier 1): per 32 channels on 512-bit registers (then 16, then eight on
//!   256-bit ones), eight output pixels of a block at a time over its taps.
//!
//! The fully connected layer reads its input in place: per row, up to 64 outputs in
//! registers while the filter's rows stream past.
//!
//! Sums run over the taps and input channels in the reference order, from 0, and the bias is
//! added last, as TensorFlow Lite's reference kernels do; fused multiply-adds round once
//! where those round twice (within the float tolerance of docs/models.md).

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use hostrt_dsp::Window;

/// A float convolution's operands, checked by the caller: `input` `[n, h, w, c]`, `filter`
/// `[kh, kw, c, out]` (convolution) or `[1, kh, kw, out]` (depthwise, `out == c`), `bias`
/// `[out]`, the activation clamp `[lo, hi]`.
pub(crate) struct FloatConv<'a> {
    pub input: &'a [f32],
    pub dims: [usize; 4],
    pub filter: &'a [f32],
    pub bias: &'a [f32],
    pub out_channels: usize,
    pub window: Window,
    pub lo: f32,
    pub hi: f32,
    /// The filter laid out ahead of time in blocks of channels (`crate::panels`), if the
    /// program carries it: read in place of the panels copied per call.
    pub packed: Option<&'a [f32]>,
}

/// Floats of the padded image rows of a band (128 KiB of stack: three rows of a 48-pixel-wide
/// image of 96 channels, as in a MobileNetV2 at 96x96, fit; wider images fall back to the
/// portable loops).
const PADDED: usize = 32768;
/// Most filter taps.
const MAX_TAPS: usize = 64;

/// The stack buffer of a padded image, on a cache line: with channels in whole sixteens,
/// every 512-bit load of it is then one line, not two.
#[repr(align(64))]
struct PaddedBuf([MaybeUninit<f32>; PADDED]);

/// Output pixels per convolution tile of 32 channels (two of them make one of 16 channels).
const TILE: usize = 6;

/// A band of padded input rows: its floats, columns per row, and the offset of each filter
/// tap's values from an output pixel's first value.
struct Padded<'a> {
    values: &'a [f32],
    width: usize,
    taps: &'a [usize],
}

impl FloatConv<'_> {
    /// Output pixels per image.
    fn per_image(&self) -> usize {
        self.window.output.h * self.window.output.w
    }

    /// Whether the CPU and the shape suit these loops: whole groups of eight channels, at most
    /// [`MAX_TAPS`] taps, and (when `padded`) the padded input rows of one output row within
    /// [`PADDED`] floats.
    fn fits(&self, padded: bool) -> bool {
        let w = self.window;
        self.out_channels.is_multiple_of(8)
            && self.out_channels > 0
            && w.filter.h * w.filter.w <= MAX_TAPS
            && (!padded || self.band_rows() > 0)
            && hostrt_dsp::has_avx2_fma()
    }

    /// Output rows per band: as many as the padded input rows they read fit [`PADDED`] (0 when
    /// not even one does).
    fn band_rows(&self) -> usize {
        let w = self.window;
        let wp = self.window.padded_input().w;
        let Some(row) = wp.checked_mul(self.dims[3]).filter(|&r| r > 0) else { return 0 };
        let rows = PADDED / row;
        let first = (w.filter.h - 1) * w.dilation.h + 1;
        if rows < first { 0 } else { ((rows - first) / w.stride.h + 1).min(w.output.h) }
    }

    /// The padded input rows (zeros in the padding) that output rows `band0..band0 + rows` of
    /// image `b` read, into `buf`, and the taps' offsets into `taps`.
    fn pad<'b>(
        &self,
        (b, band0, rows): (usize, usize, usize),
        buf: &'b mut [MaybeUninit<f32>],
        taps: &'b mut [usize; MAX_TAPS],
    ) -> Padded<'b> {
        let [_, h, w, c] = self.dims;
        let win = self.window;
        let wp = self.window.padded_input().w;
        let hb = (rows - 1) * win.stride.h + (win.filter.h - 1) * win.dilation.h + 1;
        let buf = &mut buf[..hb * wp * c];
        let image = &self.input[b * h * w * c..][..h * w * c];
        // Columns x0..x1 of the padded image are input columns 0..x1 - x0.
        let x0 = win.pad.w.min(wp);
        let x1 = (win.pad.w + w).min(wp);
        // A small band is zeroed in one call, then its rows copied: DS-CNN's first layer pads
        // 58 rows of 12 values, and a call per padding run cost more than the writes.
        let small = buf.len() <= SMALL_BAND;
        if small {
            write_zeros(buf);
        }
        let pad_with_zeros = |run: &mut [MaybeUninit<f32>]| {
            if !small {
                write_zeros(run)
            }
        };
        for (y, row) in buf.chunks_exact_mut(wp * c).enumerate() {
            let iy = (band0 * win.stride.h + y).wrapping_sub(win.pad.h);
            if iy >= h {
                pad_with_zeros(row);
                continue;
            }
            pad_with_zeros(&mut row[..x0 * c]);
            pad_with_zeros(&mut row[x1 * c..]);
            write_copy(&mut row[x0 * c..x1 * c], &image[iy * w * c..][..(x1 - x0) * c]);
        }
        for fy in 0..win.filter.h {
            for fx in 0..win.filter.w {
                taps[fy * win.filter.w + fx] = (fy * win.dilation.h * wp + fx * win.dilation.w) * c;
            }
        }
        // SAFETY: every element of `buf` was written just above; `MaybeUninit<f32>` has the
        // layout of `f32`.
        let values = unsafe { &*(buf as *const [MaybeUninit<f32>] as *const [f32]) };
        Padded { values, width: wp, taps: &taps[..win.filter.h * win.filter.w] }
    }

    /// The first values of output pixels `i..i + N` (of a band) in the band's padded rows, the
    /// last repeated past pixel `i + n - 1`. A pointwise convolution's pixels follow one
    /// another; otherwise one division, then steps along the rows, without branches: where a
    /// row ends varies from tile to tile, and mispredicting it cost more than the rest.
    #[inline(always)]
    fn bases<const N: usize>(&self, padded: &Padded<'_>, i: usize, n: usize) -> [usize; N] {
        let (w, c) = (self.window, self.dims[3]);
        if w.is_pointwise() {
            return core::array::from_fn(|k| (i + k.min(n.saturating_sub(1))) * c);
        }
        let (oy, mut ox) = (i / w.output.w, i % w.output.w);
        // From a pixel to the next in its row, and from one past a row's end to the next
        // row's first pixel (a step back when strides skip the padded row's last columns).
        let step = w.stride.w * c;
        let jump = (w.stride.h * padded.width).wrapping_sub(w.output.w * w.stride.w).wrapping_mul(c);
        let mut base = (oy * w.stride.h * padded.width + ox * w.stride.w) * c;
        let mut bases = [0; N];
        for (k, at) in bases.iter_mut().enumerate() {
            *at = base;
            let more = usize::from(k + 1 < n);
            ox += more;
            let wrap = usize::from(ox == w.output.w);
            ox -= wrap * w.output.w;
            base = base.wrapping_add(more * step).wrapping_add(wrap.wrapping_mul(jump));
        }
        bases
    }
}

/// Floats of a padded band that [`FloatConv::pad`] zeroes whole before it copies the rows
/// in (16 KiB).
const SMALL_BAND: usize = 4096;

/// Writes zeros (0.0) into all of `dst` (`memset`: an element loop here ran on 16-byte
/// moves).
fn write_zeros(dst: &mut [MaybeUninit<f32>]) {
    // SAFETY: writes `dst.len()` elements at `dst`, which is exclusively borrowed; all-zero
    // bytes are the float 0.0.
    unsafe { core::ptr::write_bytes(dst.as_mut_ptr(), 0, dst.len()) }
}

/// Writes `src` into `dst` (of the same length; `memcpy`, as [`write_zeros`]). A short run
/// (a padded row of a first layer's one channel) is two copies of a fixed size that overlap
/// in the middle, inlined, where a call cost more than the copy.
fn write_copy(dst: &mut [MaybeUninit<f32>], src: &[f32]) {
    assert_eq!(dst.len(), src.len());
    match src.len() {
        16..=32 => return copy_ends::<16>(dst, src),
        8..=15 => return copy_ends::<8>(dst, src),
        4..=7 => return copy_ends::<4>(dst, src),
        _ => {}
    }
    // SAFETY: both hold `src.len()` elements (the assertion); `dst` is exclusively borrowed,
    // so the two do not overlap; `MaybeUninit<f32>` has the layout of `f32`.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<f32>(), src.len()) }
}

/// Writes `src` into `dst`, both `K..=2K` long: its first `K` values, then its last `K`.
#[inline(always)]
fn copy_ends<const K: usize>(dst: &mut [MaybeUninit<f32>], src: &[f32]) {
    let n = src.len();
    let (Some(head), Some(tail)) = (src.first_chunk::<K>(), src.last_chunk::<K>()) else {
        // (Shorter than `K`: not called so, but every value is still written.)
        dst.iter_mut().zip(src).for_each(|(d, &v)| *d = MaybeUninit::new(v));
        return;
    };
    for (d, &v) in dst[..K].iter_mut().zip(head) {
        *d = MaybeUninit::new(v);
    }
    for (d, &v) in dst[n - K..].iter_mut().zip(tail) {
        *d = MaybeUninit::new(v);
    }
}

/// Computes output rows `first..` into a run of whole rows: what a convolution hands a
/// splitter, which calls it once per run (`split(out, (row_len, granule), rows)`: runs of
/// whole granules of rows but the last, so that no run ends in a tile of its own).
pub(crate) type RowRuns<'a> = &'a (dyn Fn(usize, &mut [f32]) + Sync);

/// The convolution, if [`FloatConv::fits`]; `false` leaves `out` to the portable loops.
pub(crate) fn conv(
    p: &FloatConv<'_>,
    out: &mut [f32],
    split: impl FnOnce(&mut [f32], (usize, usize), RowRuns<'_>),
) -> bool {
    conv_on(p, out, hostrt_dsp::has_avx512f(), split)
}

/// [`conv`] on 512-bit registers (`wide`, where the CPU has AVX-512F) or 256-bit ones.
fn conv_on(
    p: &FloatConv<'_>,
    out: &mut [f32],
    wide: bool,
    split: impl FnOnce(&mut [f32], (usize, usize), RowRuns<'_>),
) -> bool {
    if !p.fits(!p.window.is_pointwise()) {
        return false;
    }
    let wide = wide && hostrt_dsp::has_avx512f();
    // Output rows (of every image, `out_channels` values per pixel) in runs, each run its
    // bands: `split` may hand runs to other threads.
    let row_len = p.window.output.w * p.out_channels;
    split(out, (row_len, granule(2 * TILE, p.window.output.w)), &|first, rows| {
        conv_rows(p, first, rows, wide)
    });
    true
}

/// The fewest rows of `width` pixels that make whole tiles of `tile` pixels.
fn granule(tile: usize, width: usize) -> usize {
    let (mut a, mut b) = (tile, width.max(1));
    while b != 0 {
        (a, b) = (b, a % b);
    }
    tile / a
}

/// The bands of output rows `first..first + count` (counted over the whole batch) of images
/// `height` rows high: at most `band` rows each, never across two images, as `(image, its
/// first row, rows, rows of the run before it)`.
fn bands(
    height: usize,
    band: usize,
    first: usize,
    count: usize,
) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let (mut row, end) = (first, first + count);
    core::iter::from_fn(move || {
        if row >= end || height == 0 || band == 0 {
            return None;
        }
        let (b, y) = (row / height, row % height);
        let rows = (height - y).min(band).min(end - row);
        let item = (b, y, rows, row - first);
        row += rows;
        Some(item)
    })
}

/// Output rows `first..` (counted over the whole batch) into `out`, whole rows of them. A
/// pointwise convolution reads its image in place, as one band; others read padded bands
/// from a buffer on the stack, which only they set up (probing 128 KiB of stack per call
/// was a pointwise layer's largest cost outside its tiles).
fn conv_rows(p: &FloatConv<'_>, first: usize, out: &mut [f32], wide: bool) {
    let w = p.window;
    let row_len = (w.output.w * p.out_channels).max(1);
    if !w.is_pointwise() {
        return conv_rows_padded(p, first, out, wide);
    }
    let (c, per_image) = (p.dims[3], p.per_image());
    for (b, band0, rows, before) in bands(w.output.h, w.output.h, first, out.len() / row_len) {
        let from = (b * per_image + band0 * w.output.w) * c;
        let (pixels, x) = (rows * w.output.w, &p.input[from..][..rows * w.output.w * c]);
        let padded = Padded { values: x, width: w.output.w, taps: &[0] };
        conv_band(p, &padded, pixels, &mut out[before * row_len..][..rows * row_len], wide);
    }
}

/// A band's tiles for one register width: `$name::<B, R>(p, (padded, runs, pixels),
/// (weights, part), c0, out)` computes output channels `c0..c0 + LANES * B` of the band's
/// `pixels` (read through `runs`, the filter's values from `weights`), `R` pixels at a time,
/// all in one call, and returns `LANES * B`. Per filter row, one broadcast input value times
/// the row's channels, `R * B` sums in registers, the bias added last. A [`Part`] that is not
/// the first continues the sums stored in `out`; one that is not the last stores them as
/// they are, without bias and clamp. (One call per tile, with its own slices and checks,
/// cost a small layer, eight input channels, more than its sums.)
///
/// # Safety
/// The CPU has the target features.
macro_rules! band_tiles {
    ($(#[$doc:meta])* $name:ident, $features:literal, $lanes:literal, $vec:ty, $zero:ident, $splat:ident,
     $fma:ident, $load:ident, $loadu:ident, $add:ident, $min:ident, $max:ident, $storeu:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $name<const B: usize, const R: usize>(
            p: &FloatConv<'_>,
            (padded, runs, pixels): (&Padded<'_>, &[Run], usize),
            (weights, part): (Weights<'_>, Part),
            c0: usize,
            out: &mut [f32],
        ) -> usize {
            let co = p.out_channels;
            if pixels == 0 {
                return $lanes * B;
            }
            // One check for every read and store below: the last pixel's reads lie furthest
            // (bases grow), to the end of the last run (runs grow); the filter's rows,
            // `weights.stride` apart, to the end of the run that reaches furthest into them.
            let last = runs.last().map_or(0, |r| r.at + r.len);
            let rows_read = runs.iter().map(|r| r.filter + r.len).max().unwrap_or(0);
            let [far] = p.bases::<1>(padded, pixels - 1, 1);
            assert!(far + last <= padded.values.len() && out.len() >= pixels * co && c0 + $lanes * B <= co);
            assert!(weights.col + $lanes * B <= weights.stride);
            assert!(weights.values.len() >= rows_read * weights.stride && p.bias.len() >= co);
            let (lo, hi) = ($splat(p.lo), $splat(p.hi));
            let bias: [$vec; B] = core::array::from_fn(|j| $load(&p.bias[c0 + $lanes * j..]));
            let (w, stride) = (weights.values.as_ptr().wrapping_add(weights.col), weights.stride);
            let mut t = 0;
            while t < pixels {
                let rows = (pixels - t).min(R);
                // A partial tile repeats its last pixel, whose copies are not stored.
                let bases = p.bases::<R>(padded, t, rows);
                let xr: [*const f32; R] = core::array::from_fn(|r| {
                    // SAFETY: each base is a pixel's below `pixels`, at most `far`, within
                    // `values` (the assertion).
                    unsafe { padded.values.as_ptr().add(bases[r]) }
                });
                let o = out.as_mut_ptr().wrapping_add(t * co + c0);
                let mut acc = [[$zero(); B]; R];
                if !part.first {
                    // The sums of the parts before, stored below.
                    for (r, acc) in acc.iter_mut().enumerate().take(rows) {
                        for (j, acc) in acc.iter_mut().enumerate() {
                            // SAFETY: as the stores below.
                            *acc = unsafe { $loadu(o.add(r * co + $lanes * j)) };
                        }
                    }
                }
                for run in runs {
                    for i in 0..run.len {
                        // SAFETY: filter row `run.filter + i < rows_read` holds `stride`
                        // values, `col + LANES * B <= stride` of them read.
                        let wv: [$vec; B] = core::array::from_fn(|j| unsafe {
                            $loadu(w.add((run.filter + i) * stride + $lanes * j))
                        });
                        for r in 0..R {
                            // SAFETY: `base + run.at + i < far + last <= values.len()`.
                            let xv = $splat(unsafe { *xr[r].add(run.at + i) });
                            for j in 0..B {
                                acc[r][j] = $fma(xv, wv[j], acc[r][j]);
                            }
                        }
                    }
                }
                for (r, acc) in acc.iter().enumerate() {
                    if r < rows {
                        for j in 0..B {
                            // The bias last, after the last part; MAXPS and MINPS return their
                            // second operand when either is NaN: the clamp keeps a NaN, as
                            // `f32::clamp` does.
                            let v = if part.last { $min(hi, $max(lo, $add(acc[j], bias[j]))) } else { acc[j] };
                            // SAFETY: pixel `t + r < pixels`, channels `c0 + LANES * (j + 1)
                            // <= co`: within `out` (the assertion); `storeu` has no alignment
                            // requirement.
                            unsafe { $storeu(o.add(r * co + $lanes * j), v) };
                        }
                    }
                }
                t += rows;
            }
            $lanes * B
        }
    };
}

band_tiles!(
    /// [`band_tiles!`] on 256-bit registers (eight channels each).
    band_256, "avx2,fma", 8, __m256, _mm256_setzero_ps, _mm256_set1_ps, _mm256_fmadd_ps, load8,
    _mm256_loadu_ps, _mm256_add_ps, _mm256_min_ps, _mm256_max_ps, _mm256_storeu_ps
);
band_tiles!(
    /// [`band_tiles!`] on 512-bit registers (sixteen channels each).
    band_512, "avx512f,avx2,fma", 16, __m512, _mm512_setzero_ps, _mm512_set1_ps, _mm512_fmadd_ps, load16,
    _mm512_loadu_ps, _mm512_add_ps, _mm512_min_ps, _mm512_max_ps, _mm512_storeu_ps
);

/// [`conv_rows`] through padded bands.
#[inline(never)]
fn conv_rows_padded(p: &FloatConv<'_>, first: usize, out: &mut [f32], wide: bool) {
    let w = p.window;
    let row_len = (w.output.w * p.out_channels).max(1);
    let mut buf = PaddedBuf([const { MaybeUninit::<f32>::uninit() }; PADDED]);
    let mut taps = [0usize; MAX_TAPS];
    for (b, band0, rows, before) in bands(w.output.h, p.band_rows(), first, out.len() / row_len) {
        let padded = p.pad((b, band0, rows), &mut buf.0, &mut taps);
        conv_band(p, &padded, rows * w.output.w, &mut out[before * row_len..][..rows * row_len], wide);
    }
}

/// The `pixels` output pixels of a band (`padded`) into `out`.
#[inline(always)]
fn conv_band(p: &FloatConv<'_>, padded: &Padded<'_>, pixels: usize, out: &mut [f32], wide: bool) {
    let (c, co) = (p.dims[3], p.out_channels);
    let mut run_buf = [Run { at: 0, filter: 0, len: 0 }; MAX_TAPS];
    let runs = tap_runs(padded.taps, c, &mut run_buf);
    let rows_of_filter = p.filter.len() / co;
    if uses_panels(rows_of_filter, co, pixels) {
        return conv_band_panels(p, (padded, runs, pixels), out, wide);
    }
    // Per block of channels, every tile of the band in one call: 32 or 16 channels in
    // 512-bit registers where the CPU has them, else (and for a last eight) 16 or 8 in
    // 256-bit ones; twelve sums in registers or fewer. A filter laid out ahead of time is
    // read in its blocks, front to back, where in place each of its rows is a stride away
    // (a model of one 1x1 layer, 256 channels to 256 over 3x3 pixels: 16.8 us a run in
    // place, 15.8 laid out).
    let band = (padded, runs, pixels);
    let packed = p.packed.filter(|v| v.len() == p.filter.len());
    let whole = Part { first: true, last: true };
    let mut c0 = 0;
    while c0 < co {
        let weights = match packed {
            Some(v) => Weights::laid_out(v, (co, rows_of_filter), c0, 0),
            None => Weights { values: p.filter, stride: co, col: c0 },
        };
        c0 += band_block(p, band, (weights, whole), (c0, co - c0), out, wide);
    }
}

/// The tiles of output channels `c0..` (`left` of them remain) of a band in one call, as many
/// channels as [`step_at`] takes; returns that many.
#[inline(always)]
fn band_block(
    p: &FloatConv<'_>,
    band: (&Padded<'_>, &[Run], usize),
    weights: (Weights<'_>, Part),
    (c0, left): (usize, usize),
    out: &mut [f32],
    wide: bool,
) -> usize {
    // SAFETY: `fits` checked the CPU has AVX2 and FMA, `wide` that it has AVX-512F.
    unsafe {
        match (step_at(wide, left), wide) {
            (32, true) => band_512::<2, TILE>(p, band, weights, c0, out),
            (16, true) => band_512::<1, { 2 * TILE }>(p, band, weights, c0, out),
            (16, false) => match tile_rows(band.2) {
                5 => band_256::<2, 5>(p, band, weights, c0, out),
                4 => band_256::<2, 4>(p, band, weights, c0, out),
                _ => band_256::<2, TILE>(p, band, weights, c0, out),
            },
            // Eight pointers to pixels, not twelve: twelve left two of them on the stack,
            // reloaded at every filter row (a first layer of three channels to eight, 5%).
            _ => band_256::<1, 8>(p, band, weights, c0, out),
        }
    }
}

/// Pixels per 256-bit tile of 16 channels for a band of `pixels`: 6, 5 or 4, whichever
/// costs least, counting a tile as its pixels plus one for its own work outside the sums
/// (a partial tile computes all its pixels, repeating its last). A 3x3 image's nine pixels
/// take two tiles of five, not two of six; 1024 take tiles of six, though 4 divides them.
/// With eight sums or more in registers, their multiply-adds do not wait on each other.
fn tile_rows(pixels: usize) -> usize {
    [TILE, 5, 4].into_iter().min_by_key(|&r| pixels.div_ceil(r) * (r + 1)).unwrap_or(TILE)
}

/// [`conv_band`] through filter panels: per block of channels, their filter columns as
/// panels of up to 32 KiB (256 filter rows of 32 channels), each read by every tile of the
/// band; the sums go on from one panel's rows to the next's.
#[inline(never)]
fn conv_band_panels(
    p: &FloatConv<'_>,
    (padded, runs, pixels): (&Padded<'_>, &[Run], usize),
    out: &mut [f32],
    wide: bool,
) {
    let co = p.out_channels;
    let rows_of_filter = p.filter.len() / co;
    let mut panel_buf = PanelBuf([const { MaybeUninit::<f32>::uninit() }; PANEL]);
    // Weights laid out ahead of time are in the blocks of the 512-bit tiles, which the
    // 256-bit ones read 16 or 8 channels at a time (their steps never cross a block).
    let packed = p.packed.filter(|v| v.len() == p.filter.len());
    let mut c0 = 0;
    while c0 < co {
        let step = step_at(wide, co - c0);
        let part_rows = PANEL / step;
        for r0 in (0..rows_of_filter).step_by(part_rows) {
            let r1 = (r0 + part_rows).min(rows_of_filter);
            let part = Part { first: r0 == 0, last: r1 == rows_of_filter };
            let weights = match packed {
                Some(v) => Weights::laid_out(v, (co, rows_of_filter), c0, r0),
                None => panel((p.filter, co), (c0, step), (r0, r1), &mut panel_buf),
            };
            let mut part_buf = [Run { at: 0, filter: 0, len: 0 }; MAX_TAPS];
            let part_runs = runs_within(runs, (r0, r1), &mut part_buf);
            band_block(p, (padded, part_runs, pixels), (weights, part), (c0, co - c0), out, wide);
        }
        c0 += step;
    }
}

/// Output channels per tile where `left` remain: 32 or 16 in 512-bit registers where the
/// CPU has them (`wide`; the blocks of `panels`), else (and for a last eight) 16 or 8 in
/// 256-bit ones; twelve sums in registers either way: two tiles of six pixels, or one of
/// twelve.
#[inline(always)]
fn step_at(wide: bool, left: usize) -> usize {
    match left {
        left if wide => crate::panels::block_width(left),
        16.. => 16,
        _ => 8,
    }
}

/// The parts of `runs` that read filter rows `r0..r1`, their filter rows counted from `r0`
/// (as in a panel of those rows), into `buf`.
fn runs_within<'b>(runs: &[Run], (r0, r1): (usize, usize), buf: &'b mut [Run; MAX_TAPS]) -> &'b [Run] {
    let mut n = 0;
    for r in runs {
        let (from, to) = (r.filter.max(r0), (r.filter + r.len).min(r1));
        if from < to && n < MAX_TAPS {
            buf[n] = Run { at: r.at + (from - r.filter), filter: from - r0, len: to - from };
            n += 1;
        }
    }
    &buf[..n]
}

/// Whether a band of `pixels` output pixels reads the filter (`rows` rows of `co` output
/// channels) through panels: when the filter does not fit the L1 cache (32 KiB) and at
/// least four tiles of twelve pixels read each panel, which pays for the copy. Measured: the
/// ONNX transformer's `[128, 512]` and `[128, 128]` matrix products over 64 rows, 12-15%
/// faster; MobileNetV2's 1x1 convolutions of 6x6 pixels (three tiles), 6-9% slower.
fn uses_panels(rows: usize, co: usize, pixels: usize) -> bool {
    rows * co > PANEL && pixels >= 4 * 2 * TILE
}

/// A pixel's reads of one convolution, as runs of values side by side: the taps of a filter
/// row lie next to each other in the padded rows (all their channels, then the next tap's)
/// when nothing dilates them, and their filter values likewise. Each run is its offset from
/// the pixel's first value, its first filter row (tap × channels + channel) and its length.
/// A first layer of one input channel and a 10×4 filter then loops 10 times over 4 values,
/// not 40 times over 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    at: usize,
    filter: usize,
    len: usize,
}

/// The [`Run`]s of `taps` (offsets of each tap's first value, in order, at most
/// [`MAX_TAPS`]) of `c` channels each, into `buf`.
fn tap_runs<'b>(taps: &[usize], c: usize, buf: &'b mut [Run; MAX_TAPS]) -> &'b [Run] {
    let mut n = 0usize;
    for (t, &at) in taps.iter().enumerate().take(MAX_TAPS) {
        match n.checked_sub(1).map(|last| &mut buf[last]) {
            Some(r) if at == r.at + r.len => r.len += c,
            _ => {
                buf[n] = Run { at, filter: t * c, len: c };
                n += 1;
            }
        }
    }
    &buf[..n]
}

/// Where a tile reads its filter values: filter row `r` (tap × channels + channel) of the
/// tile's channels starts at `r * stride + col` of `values`. Either the filter itself
/// (`stride` its output channels, `col` the tile's first channel) or a panel of the tile's
/// channels alone ([`panel`]: `stride` the tile's width, `col` 0).
#[derive(Clone, Copy)]
struct Weights<'a> {
    values: &'a [f32],
    stride: usize,
    col: usize,
}

impl<'a> Weights<'a> {
    /// Channel `c0`'s tile in a filter of `rows` rows of `co` channels laid out ahead of time
    /// (`crate::panels::pack`), from row `r0`: the block holding `c0` (from `cb`, `width`
    /// wide) follows blocks of `cb` channels in all, each of every row.
    fn laid_out(v: &'a [f32], (co, rows): (usize, usize), c0: usize, r0: usize) -> Self {
        let (cb, width) = crate::panels::block_at(co, c0);
        Weights { values: &v[cb * rows + r0 * width..], stride: width, col: c0 - cb }
    }
}

/// Which rows of the filter a band's tiles sum: all of them (first and last), or one of
/// several parts in order ([`conv_band_panels`]), the sums stored between them. Each
/// output's sum then runs over the filter rows in the same order as in one part, so the
/// results are the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Part {
    first: bool,
    last: bool,
}

// Floats of a filter panel (32 KiB of stack, an L1 cache's worth): 256 filter rows of 32
// channels.
use crate::panels::PANEL;

/// The panel buffer, on a cache line as [`PaddedBuf`].
#[repr(align(64))]
struct PanelBuf([MaybeUninit<f32>; PANEL]);

/// Filter columns `c0..c0 + width` copied side by side into `buf`, row after row (the filter
/// as it is when they are all its columns). A tile of 32 columns of a filter `[k, 512]`
/// reads 128 bytes 2 KiB apart per filter row, a new page every other row, which the
/// prefetcher does not follow; from a panel it reads on, and every tile after the first
/// reads the panel from the L1 cache. The values are the filter's: the sums are the same.
fn panel<'a>(
    (filter, co): (&'a [f32], usize),
    (c0, width): (usize, usize),
    (r0, r1): (usize, usize),
    buf: &'a mut PanelBuf,
) -> Weights<'a> {
    let rows = r1 - r0;
    if (width >= co && r0 == 0) || rows * width > PANEL {
        return Weights { values: &filter[r0 * co..], stride: co, col: c0 };
    }
    assert!(r1 * co <= filter.len() && c0 + width <= co);
    let buf = &mut buf.0[..rows * width];
    for (row, to) in filter.chunks_exact(co).skip(r0).zip(buf.chunks_exact_mut(width)) {
        write_copy(to, &row[c0..c0 + width]);
    }
    // SAFETY: every element of `buf` was written just above: the filter has rows up to `r1`
    // (the assertion), so the loop ran over all `rows` rows of `width`; `MaybeUninit<f32>`
    // has the layout of `f32`.
    let values = unsafe { &*(buf as *const [MaybeUninit<f32>] as *const [f32]) };
    Weights { values, stride: width, col: 0 }
}

/// The first sixteen floats of `v` (which holds at least sixteen).
#[target_feature(enable = "avx512f")]
#[inline]
fn load16(v: &[f32]) -> __m512 {
    let (v, _) = v[..16].as_chunks::<16>();
    // SAFETY: `v[0]` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_ps(v[0].as_ptr()) }
}

/// Stores sixteen floats at the start of `out` (which holds at least sixteen).
#[target_feature(enable = "avx512f")]
#[inline]
fn store16(v: __m512, out: &mut [f32]) {
    let (out, _) = out[..16].as_chunks_mut::<16>();
    // SAFETY: `out[0]` is a valid, exclusive reference to 64 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm512_storeu_ps(out[0].as_mut_ptr(), v) }
}

/// The depthwise convolution (depth multiplier 1), if [`FloatConv::fits`]; `false` leaves
/// `out` to the portable loops.
pub(crate) fn depthwise(
    p: &FloatConv<'_>,
    out: &mut [f32],
    split: impl FnOnce(&mut [f32], (usize, usize), RowRuns<'_>),
) -> bool {
    depthwise_on(p, out, hostrt_dsp::has_avx512f(), split)
}

/// [`depthwise`] on 512-bit registers (`wide`, where the CPU has AVX-512F) or 256-bit ones.
fn depthwise_on(
    p: &FloatConv<'_>,
    out: &mut [f32],
    wide: bool,
    split: impl FnOnce(&mut [f32], (usize, usize), RowRuns<'_>),
) -> bool {
    if p.out_channels != p.dims[3] || !p.fits(false) {
        return false;
    }
    // Split by pixels, not rows: a 3x3 or 6x6 map has too few rows to share evenly.
    split(out, (p.dims[3], 1), &|first, pixels| depthwise_pixel_run(p, first, pixels, wide));
    true
}

/// Output pixels `first..` (counted over the whole batch) of a depthwise convolution into
/// `out`, whole pixels of them, read in place.
fn depthwise_pixel_run(p: &FloatConv<'_>, first: usize, out: &mut [f32], wide: bool) {
    // SAFETY: `fits` checked the CPU has AVX2 and FMA; `wide` with `has_avx512f`, that it
    // has AVX-512F.
    unsafe {
        if wide && hostrt_dsp::has_avx512f() {
            depthwise_in_place_512(p, first, out)
        } else {
            depthwise_in_place(p, first, out)
        }
    }
}

/// The taps `k0..k1` (of `k`, `d` apart) that output row or column `o` (stride `s`, padding
/// `pad`) reads inside an image `size` long; `k0 == k1` when none does. They are always one
/// range: the positions grow with the tap.
fn taps_inside(o: usize, (s, d, k, pad): (usize, usize, usize, usize), size: usize) -> (usize, usize) {
    let inside = |t: usize| (o * s + t * d).checked_sub(pad).is_some_and(|i| i < size);
    let k0 = (0..k).find(|&t| inside(t)).unwrap_or(k);
    let k1 = (k0..k).rev().find(|&t| inside(t)).map_or(k0, |t| t + 1);
    (k0, k1)
}

/// Output rows or columns `from..to` (of an axis `(s, d, k, pad)` over an image `size`
/// long) in runs that read the same taps inside the image: `(first, end, taps)`. Along a
/// row, typically one run per column at each edge and one for all the columns between,
/// which is found without asking each of them.
fn same_taps(
    (from, to): (usize, usize),
    axis: (usize, usize, usize, usize),
    size: usize,
) -> impl Iterator<Item = (usize, usize, (usize, usize))> {
    let (s, d, k, pad) = axis;
    // The outputs that read all `k` taps inside: from the first whose first tap is inside
    // to the last whose last tap is. No other output reads all of them.
    let lo = pad.div_ceil(s.max(1));
    let hi = (size + pad).checked_sub((k.max(1) - 1) * d + 1).map_or(0, |last| last / s.max(1) + 1);
    let mut o = from;
    core::iter::from_fn(move || {
        if o >= to {
            return None;
        }
        let start = o;
        if lo <= o && o < hi {
            o = hi.min(to);
            return Some((start, o, (0, k)));
        }
        let t = taps_inside(o, axis, size);
        o += 1;
        while o < to && o != lo && taps_inside(o, axis, size) == t {
            o += 1;
        }
        Some((start, o, t))
    })
}

/// The taps a block of output pixels reads, all inside the image: each one's offset from
/// the pixel's first tap read and its filter row (tap index), in the filter's order, so
/// both grow.
struct DwTaps {
    at: [usize; MAX_TAPS],
    filter: [usize; MAX_TAPS],
    n: usize,
}

impl DwTaps {
    /// Filter rows `ky.0..ky.1` by columns `kx.0..kx.1`, in place of the last block's taps
    /// (a new value per block copied its kilobyte of arrays each time).
    fn set(&mut self, p: &FloatConv<'_>, ky: (usize, usize), kx: (usize, usize)) {
        let (w, [_, _, iw, c]) = (p.window, p.dims);
        let mut n = 0;
        for fy in ky.0..ky.1 {
            for fx in kx.0..kx.1 {
                // `fits` bounds the filter's taps by MAX_TAPS.
                self.at[n] = ((fy - ky.0) * w.dilation.h * iw + (fx - kx.0) * w.dilation.w) * c;
                self.filter[n] = fy * w.filter.w + fx;
                n += 1;
            }
        }
        self.n = n;
    }

    /// Asserts every read of `blk`'s pixels lies in the input and the filter, over all the
    /// channels: the last pixel's first read lies furthest (the pixels' reads grow row by
    /// row), and the last tap both in the input and in the filter.
    fn check(&self, p: &FloatConv<'_>, blk: &DwBlock) {
        let (Some(&far), Some(&row)) = (self.at[..self.n].last(), self.filter[..self.n].last()) else {
            return;
        };
        let pixels = (blk.ys.1 - blk.ys.0) * (blk.xs.1 - blk.xs.0);
        let ([last], _) = block_pixels::<1>(p, blk, true, pixels.saturating_sub(1));
        let c = p.out_channels;
        assert!(last + far + c <= p.input.len() && (row + 1) * c <= p.filter.len());
    }
}

/// Output pixels that read the same taps: rows `ys.0..ys.1` by columns `xs.0..xs.1` of image
/// `b`, whose first tap read is filter row `k0.0`, column `k0.1`; the run being computed
/// starts at output pixel `first` (over the batch).
struct DwBlock {
    b: usize,
    ys: (usize, usize),
    xs: (usize, usize),
    k0: (usize, usize),
    first: usize,
}

/// Pixels `i..i + N` of `blk` (row by row): the input index of each one's first tap read (0
/// when the block reads no tap), and its output pixel in the run. One division, then steps.
#[inline(always)]
fn block_pixels<const N: usize>(
    p: &FloatConv<'_>,
    blk: &DwBlock,
    reads: bool,
    i: usize,
) -> ([usize; N], [usize; N]) {
    let (w, [_, h, iw, c]) = (p.window, p.dims);
    let cols = blk.xs.1 - blk.xs.0;
    let (mut oy, mut ox) = (blk.ys.0 + i / cols, blk.xs.0 + i % cols);
    // The first read of the block's first column in row `oy` (inside the image when the
    // block reads a tap; wrapping, and then unused, when it reads none).
    let row_base = |oy: usize| {
        let iy = (oy * w.stride.h + blk.k0.0 * w.dilation.h).wrapping_sub(w.pad.h);
        let ix = (blk.xs.0 * w.stride.w + blk.k0.1 * w.dilation.w).wrapping_sub(w.pad.w);
        (blk.b * h).wrapping_add(iy).wrapping_mul(iw).wrapping_add(ix).wrapping_mul(c)
    };
    let step = w.stride.w * c;
    let mut base = row_base(oy).wrapping_add((ox - blk.xs.0) * step);
    let mut dst = (blk.b * w.output.h + oy) * w.output.w + ox - blk.first;
    let (mut bases, mut dsts) = ([0; N], [0; N]);
    for k in 0..N {
        (bases[k], dsts[k]) = (if reads { base } else { 0 }, dst);
        if ox + 1 < blk.xs.1 {
            (ox, base, dst) = (ox + 1, base.wrapping_add(step), dst + 1);
        } else {
            (ox, oy) = (blk.xs.0, oy + 1);
            (base, dst) = (row_base(oy), dst + 1 + w.output.w - cols);
        }
    }
    (bases, dsts)
}

/// A depthwise convolution read in place for one register width: `$name(p, first, out)`
/// computes output pixels `first..` (over the batch) into `out`, whole pixels of them, row
/// by row (a run's first and last rows may be parts of rows), in blocks
/// of pixels that read the same taps inside the image (the edges skip the taps outside, as
/// TensorFlow Lite's reference kernel does), once every read of the block is checked in
/// bounds: [`DW_PIXELS`] pixels at a time (then four, two, one), each step all their
/// channels (`$pixels::<P>(p, taps, at, out)`, `at` from [`block_pixels`]).
macro_rules! depthwise_in_place {
    ($(#[$doc:meta])* $name:ident, $features:literal, $pixels:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        fn $name(p: &FloatConv<'_>, first: usize, out: &mut [f32]) {
            let (w, [_, h, iw, _]) = (p.window, p.dims);
            let (ow, oh) = (w.output.w, w.output.h);
            let pixels = out.len() / p.out_channels.max(1);
            let mut taps = DwTaps { at: [0; MAX_TAPS], filter: [0; MAX_TAPS], n: 0 };
            let (end, mut px) = (first + pixels, first);
            while px < end && ow > 0 && oh > 0 {
                // Rows `oy0..oy1` of image `b`, columns `ox0..ox1` of each: the rest of a
                // row begun, a part of a row that ends the run, or whole rows.
                let (row, ox0) = (px / ow, px % ow);
                let (b, oy0) = (row / oh, row % oh);
                let (oy1, ox1) = if ox0 > 0 || end - px < ow {
                    (oy0 + 1, ow.min(ox0 + (end - px)))
                } else {
                    (oh.min(oy0 + (end - px) / ow), ow)
                };
                let rows = (w.stride.h, w.dilation.h, w.filter.h, w.pad.h);
                let cols = (w.stride.w, w.dilation.w, w.filter.w, w.pad.w);
                for (y0, y1, ky) in same_taps((oy0, oy1), rows, h) {
                    for (x0, x1, kx) in same_taps((ox0, ox1), cols, iw) {
                        taps.set(p, ky, kx);
                        let blk = DwBlock { b, ys: (y0, y1), xs: (x0, x1), k0: (ky.0, kx.0), first };
                        taps.check(p, &blk);
                        let (pixels, reads) = ((y1 - y0) * (x1 - x0), taps.n > 0);
                        let mut i = 0;
                        while i < pixels {
                            let step = match pixels - i {
                                DW_PIXELS.. => DW_PIXELS,
                                4.. => 4,
                                2.. => 2,
                                _ => 1,
                            };
                            let (t, blk) = (&taps, &blk);
                            // SAFETY: this function has the target features of `$pixels`;
                            // every pixel of the block reads within the input and the filter
                            // over all the channels (`DwTaps::check` above).
                            unsafe {
                                match step {
                                    DW_PIXELS => $pixels(p, t, block_pixels::<DW_PIXELS>(p, blk, reads, i), out),
                                    4 => $pixels(p, t, block_pixels::<4>(p, blk, reads, i), out),
                                    2 => $pixels(p, t, block_pixels::<2>(p, blk, reads, i), out),
                                    _ => $pixels(p, t, block_pixels::<1>(p, blk, reads, i), out),
                                }
                            }
                            i += step;
                        }
                    }
                }
                px += (oy1 - oy0) * (ox1 - ox0);
            }
        }
    };
}

depthwise_in_place!(
    /// [`depthwise_in_place!`] on 256-bit registers.
    depthwise_in_place, "avx2,fma", all_channels
);
depthwise_in_place!(
    /// [`depthwise_in_place!`] on 512-bit registers.
    depthwise_in_place_512, "avx512f,avx2,fma", all_channels_512
);

/// Output pixels per step of the depthwise loops. One pixel's taps form a chain of dependent
/// multiply-adds; several pixels' sums are independent, so they do not wait on each other,
/// and each tap's filter values are loaded once for all of them.
const DW_PIXELS: usize = 8;

/// Every channel of `P` output pixels of a block on 256-bit registers, eight at a time.
/// Pixels outermost, channels inside, which measured faster than a sweep of the block per
/// block of channels (MobileNetV2 at 96x96, one thread: 432 -> 423 us).
///
/// # Safety
/// The CPU has AVX2 and FMA; every pixel's reads lie in the input and the filter over all
/// the channels ([`DwTaps::check`]).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn all_channels<const P: usize>(
    p: &FloatConv<'_>,
    taps: &DwTaps,
    at: ([usize; P], [usize; P]),
    out: &mut [f32],
) {
    for c0 in (0..p.out_channels).step_by(8) {
        // SAFETY: the caller's contract, over channels `c0..c0 + 8` of whole eights.
        unsafe { depthwise_pixels::<P, 1>(p, taps, at, c0, out) };
    }
}

/// [`all_channels`] on 512-bit registers: 32 channels at a time, then 16, then a last
/// eight on 256-bit ones.
///
/// # Safety
/// The CPU has AVX-512F, AVX2 and FMA, and the reads lie in bounds, as for [`all_channels`].
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
unsafe fn all_channels_512<const P: usize>(
    p: &FloatConv<'_>,
    taps: &DwTaps,
    at: ([usize; P], [usize; P]),
    out: &mut [f32],
) {
    let c = p.out_channels;
    let mut c0 = 0;
    // SAFETY: the caller's contract, over channels `c0..` within `c`, all three calls.
    unsafe {
        while c - c0 >= 32 {
            depthwise_pixels_512::<P, 2>(p, taps, at, c0, out);
            c0 += 32;
        }
        if c - c0 >= 16 {
            depthwise_pixels_512::<P, 1>(p, taps, at, c0, out);
            c0 += 16;
        }
        if c0 < c {
            depthwise_pixels::<P, 1>(p, taps, at, c0, out);
        }
    }
}

/// Depthwise pixels for one register width: `$name::<P, B>(p, taps, (bases, dst), c0, out)`
/// computes channels `c0..c0 + LANES * B` of `P` output pixels, pixel `k` reading tap `t`
/// at `bases[k] + taps.at[t]` of the input and storing at pixel `dst[k]` of `out`: the sums
/// over the taps in order from 0, then the bias, then the clamp. `P * B` sums in registers:
/// independent chains, each tap's filter values loaded once for all the pixels.
///
/// # Safety
/// The CPU has the target features, and every read lies in bounds: for each pixel `k` and
/// tap `t`, `bases[k] + taps.at[t] + c0 + LANES * B <= p.input.len()` and `(taps.filter[t]
/// * out_channels) + c0 + LANES * B <= p.filter.len()` ([`DwTaps::check`] over the block,
/// `c0 + LANES * B <= out_channels`).
macro_rules! depthwise_pixels {
    ($(#[$doc:meta])* $name:ident, $features:literal, $lanes:literal, $zero:ident, $splat:ident, $fma:ident,
     $load:ident, $loadu:ident, $add:ident, $min:ident, $max:ident, $store:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $name<const P: usize, const B: usize>(
            p: &FloatConv<'_>,
            taps: &DwTaps,
            (base, dst): ([usize; P], [usize; P]),
            c0: usize,
            out: &mut [f32],
        ) {
            let c = p.out_channels;
            let (at, rows) = (&taps.at[..taps.n.min(MAX_TAPS)], &taps.filter[..taps.n.min(MAX_TAPS)]);
            // Each pixel's first value, so that a load is one address mode (pointer + tap);
            // not read when there is no tap.
            let x: [*const f32; P] = core::array::from_fn(|k| p.input.as_ptr().wrapping_add(base[k] + c0));
            let mut acc = [[$zero(); B]; P];
            for (&tap, &row) in at.iter().zip(rows) {
                let mut w = [$zero(); B];
                for (j, w) in w.iter_mut().enumerate() {
                    // SAFETY: `row * c + c0 + LANES * (j + 1) <= filter.len()` (the caller's
                    // contract); `loadu` has no alignment requirement.
                    *w = unsafe { $loadu(p.filter.as_ptr().add(row * c + c0 + $lanes * j)) };
                }
                for k in 0..P {
                    for j in 0..B {
                        // SAFETY: `base[k] + c0 + tap + LANES * (j + 1) <= input.len()` (the
                        // caller's contract); `loadu` has no alignment requirement.
                        let xv = unsafe { $loadu(x[k].add(tap + $lanes * j)) };
                        acc[k][j] = $fma(xv, w[j], acc[k][j]);
                    }
                }
            }
            let (lo, hi) = ($splat(p.lo), $splat(p.hi));
            for j in 0..B {
                let bias = $load(&p.bias[c0 + $lanes * j..]);
                for (k, acc) in acc.iter().enumerate() {
                    // As `band_tiles!`: the clamp keeps a NaN.
                    let v = $min(hi, $max(lo, $add(acc[j], bias)));
                    $store(v, &mut out[dst[k] * c + c0 + $lanes * j..]);
                }
            }
        }
    };
}

depthwise_pixels!(
    /// Depthwise pixels on 256-bit registers (eight channels).
    depthwise_pixels, "avx2,fma", 8, _mm256_setzero_ps, _mm256_set1_ps, _mm256_fmadd_ps, load8,
    _mm256_loadu_ps, _mm256_add_ps, _mm256_min_ps, _mm256_max_ps, store8
);
depthwise_pixels!(
    /// Depthwise pixels on 512-bit registers (sixteen channels).
    depthwise_pixels_512, "avx512f,avx2,fma", 16, _mm512_setzero_ps, _mm512_set1_ps, _mm512_fmadd_ps,
    load16, _mm512_loadu_ps, _mm512_add_ps, _mm512_min_ps, _mm512_max_ps, store16
);

/// A float fully connected layer, `out[b][j] = clamp(Σ_k x[b][k] · filter[k][j] + bias[j])`
/// (filter `[depth, units]`), when `units` is a whole number of eights and the CPU has AVX2
/// and FMA; `false` leaves `out` to the portable loop. Per row of `x`, up to 64 outputs at
/// a time in registers while the filter's rows stream past (each weight read once per row).
/// A single row's outputs are shared out by `split` in blocks of eight.
pub(crate) fn fully_connected(
    (x, filter, bias): (&[f32], &[f32], &[f32]),
    depth: usize,
    (lo, hi): (f32, f32),
    out: &mut [f32],
    split: impl FnOnce(&mut [f32], (usize, usize), RowRuns<'_>),
) -> bool {
    let units = bias.len();
    if units == 0 || !units.is_multiple_of(8) || depth == 0 || !hostrt_dsp::has_avx2_fma() {
        return false;
    }
    let wide = hostrt_dsp::has_avx512f();
    let layer = (filter, bias, (lo, hi));
    if x.len() == depth {
        // One row: its outputs split over the threads in blocks of eight (128 on 512-bit
        // registers: each run but the last a whole number of the widest block).
        let granule = if wide { 16 } else { 1 };
        split(out, (8, granule), &|first, run| {
            // SAFETY: checked above: the CPU has AVX2 and FMA, and AVX-512F when `wide`.
            unsafe { fc_columns(x, layer, 8 * first, run, wide) }
        });
    } else {
        for (x, out) in x.chunks_exact(depth).zip(out.chunks_exact_mut(units)) {
            // SAFETY: checked above: the CPU has AVX2 and FMA, and AVX-512F when `wide`.
            unsafe { fc_columns(x, layer, 0, out, wide) };
        }
    }
    true
}

/// Outputs `from..from + out.len()` (a whole number of eights) of one row of `x`.
///
/// # Safety
/// The CPU has AVX2 and FMA, and AVX-512F when `wide`.
unsafe fn fc_columns(
    x: &[f32],
    (filter, bias, range): (&[f32], &[f32], (f32, f32)),
    from: usize,
    out: &mut [f32],
    wide: bool,
) {
    let (mut c0, end) = (from, from + out.len());
    // 128 outputs at a time in eight 512-bit registers where the CPU has them.
    while wide && end - c0 >= 128 {
        // SAFETY: the CPU has AVX-512F (`wide`: the caller's contract).
        unsafe { fc_block_512::<8>(x, filter, bias, c0, range, &mut out[c0 - from..]) };
        c0 += 128;
    }
    while c0 < end {
        // Eight vectors of outputs at a time, then four, two, one.
        let step = match end - c0 {
            64.. => 64,
            32..=63 => 32,
            16..=31 => 16,
            _ => 8,
        };
        let out = &mut out[c0 - from..];
        // SAFETY: the CPU has AVX2 and FMA (the caller's contract).
        unsafe {
            match step {
                64 => fc_block::<8>(x, filter, bias, c0, range, out),
                32 => fc_block::<4>(x, filter, bias, c0, range, out),
                16 => fc_block::<2>(x, filter, bias, c0, range, out),
                _ => fc_block::<1>(x, filter, bias, c0, range, out),
            }
        }
        c0 += step;
    }
}

/// A fully connected block for one register width: `$name::<B>(x, filter, bias, c0, (lo,
/// hi), out)` computes outputs `c0..c0 + LANES * B` of one row into the start of `out`.
macro_rules! fc_block {
    ($(#[$doc:meta])* $name:ident, $features:literal, $lanes:literal, $zero:ident, $splat:ident, $fma:ident,
     $load:ident, $add:ident, $min:ident, $max:ident, $store:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        fn $name<const B: usize>(
            x: &[f32],
            filter: &[f32],
            bias: &[f32],
            c0: usize,
            (lo, hi): (f32, f32),
            out: &mut [f32],
        ) {
            let units = bias.len();
            let mut acc = [$zero(); B];
            if units <= 16 {
                // A layer of few outputs (so one or two vectors a block): four partial sums
                // each, over every fourth input, so that the adds do not wait on each other
                // (an autoencoder's 128 -> 8 layer, one chain of 128 dependent adds, had
                // taken 0.15 us of its 0.3). Decided for the whole layer, not the block, so
                // that a row split over threads sums each output in the same order.
                let mut part = [[$zero(); B]; 4];
                let mut rows = filter.chunks_exact(units);
                let (quads, rest) = x.as_chunks::<4>();
                for xq in quads {
                    for (part, &xk) in part.iter_mut().zip(xq) {
                        let Some(wk) = rows.next() else { break };
                        let (xv, wk) = ($splat(xk), &wk[c0..][..$lanes * B]);
                        for j in 0..B {
                            part[j] = $fma(xv, $load(&wk[$lanes * j..]), part[j]);
                        }
                    }
                }
                // The rest into the first (a chain of slices of any length here made the
                // compiler keep the partial sums in memory: 30% slower).
                for (&xk, wk) in rest.iter().zip(rows) {
                    let (xv, wk) = ($splat(xk), &wk[c0..][..$lanes * B]);
                    for j in 0..B {
                        part[0][j] = $fma(xv, $load(&wk[$lanes * j..]), part[0][j]);
                    }
                }
                for j in 0..B {
                    acc[j] = $add($add(part[0][j], part[1][j]), $add(part[2][j], part[3][j]));
                }
            } else {
                for (&xk, wk) in x.iter().zip(filter.chunks_exact(units)) {
                    let xv = $splat(xk);
                    let wk = &wk[c0..][..$lanes * B];
                    for j in 0..B {
                        acc[j] = $fma(xv, $load(&wk[$lanes * j..]), acc[j]);
                    }
                }
            }
            let (lo, hi) = ($splat(lo), $splat(hi));
            for (j, acc) in acc.iter().enumerate() {
                // As `band_tiles!`: the clamp keeps a NaN.
                let v = $min(hi, $max(lo, $add(*acc, $load(&bias[c0 + $lanes * j..]))));
                $store(v, &mut out[$lanes * j..]);
            }
        }
    };
}

fc_block!(
    /// A fully connected block on 256-bit registers (eight outputs each).
    fc_block, "avx2,fma", 8, _mm256_setzero_ps, _mm256_set1_ps, _mm256_fmadd_ps, load8, _mm256_add_ps,
    _mm256_min_ps, _mm256_max_ps, store8
);
fc_block!(
    /// A fully connected block on 512-bit registers (sixteen outputs each).
    fc_block_512, "avx512f", 16, _mm512_setzero_ps, _mm512_set1_ps, _mm512_fmadd_ps, load16, _mm512_add_ps,
    _mm512_min_ps, _mm512_max_ps, store16
);

/// The first eight floats of `v` (which holds at least eight).
#[target_feature(enable = "avx2")]
#[inline]
fn load8(v: &[f32]) -> __m256 {
    let (v, _) = v[..8].as_chunks::<8>();
    // SAFETY: `v[0]` is a valid reference to 32 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_ps(v[0].as_ptr()) }
}

/// Stores eight floats at the start of `out` (which holds at least eight).
#[target_feature(enable = "avx2")]
#[inline]
fn store8(v: __m256, out: &mut [f32]) {
    let (out, _) = out[..8].as_chunks_mut::<8>();
    // SAFETY: `out[0]` is a valid, exclusive reference to 32 writable bytes; `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_ps(out[0].as_mut_ptr(), v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter row's taps side by side make one run; dilated taps stay apart.
    #[test]
    fn taps_side_by_side_make_runs() {
        let (c, wp) = (2, 5);
        let mut buf = [Run { at: 0, filter: 0, len: 0 }; MAX_TAPS];
        let taps: std::vec::Vec<usize> =
            (0..3).flat_map(|fy| (0..3).map(move |fx| (fy * wp + fx) * c)).collect();
        let runs = tap_runs(&taps, c, &mut buf);
        let want = [0, 1, 2].map(|fy| Run { at: fy * wp * c, filter: fy * 3 * c, len: 3 * c });
        assert_eq!(runs, &want[..]);
        let dilated: std::vec::Vec<usize> = (0..3).map(|fx| 2 * fx * c).collect();
        let runs = tap_runs(&dilated, c, &mut buf);
        let want = [0, 1, 2].map(|t| Run { at: 2 * t * c, filter: t * c, len: c });
        assert_eq!(runs, &want[..]);
        assert_eq!(tap_runs(&[0], 7, &mut buf), &[Run { at: 0, filter: 0, len: 7 }][..]);
    }

    #[test]
    fn runs_within_a_part_are_cut_and_rebased() {
        let runs = [Run { at: 0, filter: 0, len: 120 }, Run { at: 500, filter: 120, len: 120 }];
        let mut buf = [Run { at: 0, filter: 0, len: 0 }; MAX_TAPS];
        let want = [Run { at: 100, filter: 0, len: 20 }, Run { at: 500, filter: 20, len: 60 }];
        assert_eq!(runs_within(&runs, (100, 180), &mut buf), &want[..]);
        assert_eq!(runs_within(&runs, (240, 300), &mut buf), &[][..]);
    }

    #[test]
    fn tiles_are_as_tall_as_costs_least() {
        // Whole tiles of 6 first; nine pixels in two tiles of 5, sixteen in four of 4,
        // thirteen in three of 5; 1024 in tiles of 6 (171 tiles, against 256 of 4).
        for (pixels, rows) in [(36, 6), (9, 5), (16, 4), (13, 5), (1, 4), (1024, 6), (125, 6), (0, 6)] {
            assert_eq!(tile_rows(pixels), rows, "{pixels} pixels");
        }
    }

    #[test]
    fn granules_hold_whole_tiles() {
        for (tile, width, rows) in [(12, 1, 12), (12, 48, 1), (12, 8, 3), (8, 6, 4), (8, 0, 8)] {
            assert_eq!(granule(tile, width), rows, "{tile} pixels of rows {width} wide");
        }
    }

    /// Hands the whole output to `f`, as a split on one thread does.
    fn whole(out: &mut [f32], _: (usize, usize), f: RowRuns<'_>) {
        f(0, out)
    }

    /// Hands the output to `f` in runs of three rows (the last shorter), as a split over
    /// threads would, in reverse order, whatever the kernel's granule: any cut is correct.
    fn in_runs(out: &mut [f32], (row_len, _granule): (usize, usize), f: RowRuns<'_>) {
        let rows = out.len() / row_len;
        let mut runs: std::vec::Vec<(usize, &mut [f32])> =
            out.chunks_mut(3 * row_len).enumerate().map(|(k, r)| (3 * k, r)).collect();
        assert_eq!(runs.iter().map(|(_, r)| r.len()).sum::<usize>(), rows * row_len);
        runs.reverse();
        for (first, run) in runs {
            f(first, run);
        }
    }
    use hostrt_dsp::{Hw, Padding};
    use std::vec::Vec;

    /// Deterministic values in [-1, 1).
    fn values(seed: u32, n: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s >> 8) as f32 / (1 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// TensorFlow Lite's reference loop: every tap of every output value, padding skipped.
    fn reference(p: &FloatConv<'_>, depthwise: bool) -> Vec<f32> {
        let ([n, h, w, c], co, win) = (p.dims, p.out_channels, p.window);
        let mut out = Vec::new();
        for b in 0..n {
            for oy in 0..win.output.h {
                for ox in 0..win.output.w {
                    for o in 0..co {
                        let mut acc = 0.0f32;
                        for fy in 0..win.filter.h {
                            for fx in 0..win.filter.w {
                                let iy = (oy * win.stride.h + fy * win.dilation.h).wrapping_sub(win.pad.h);
                                let ix = (ox * win.stride.w + fx * win.dilation.w).wrapping_sub(win.pad.w);
                                if iy >= h || ix >= w {
                                    continue;
                                }
                                let x = &p.input[((b * h + iy) * w + ix) * c..][..c];
                                let t = fy * win.filter.w + fx;
                                if depthwise {
                                    acc += x[o] * p.filter[t * co + o];
                                } else {
                                    for (k, &x) in x.iter().enumerate() {
                                        acc += x * p.filter[(t * c + k) * co + o];
                                    }
                                }
                            }
                        }
                        out.push((acc + p.bias[o]).clamp(p.lo, p.hi));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn convolutions_match_the_reference_loop() {
        if !hostrt_dsp::has_avx2_fma() {
            std::println!("skipped: this CPU lacks AVX2 and FMA");
            return;
        }
        // (input [n, h, w, c], filter, stride, dilation, padding, output channels)
        let cases = [
            ([1, 9, 7, 3], Hw::new(3, 3), 1, 1, Padding::Same, 16),
            ([2, 8, 6, 5], Hw::new(3, 2), 2, 1, Padding::Same, 24),
            ([1, 10, 9, 4], Hw::new(3, 3), 1, 2, Padding::Valid, 8),
            ([1, 49, 10, 1], Hw::new(10, 4), 2, 1, Padding::Same, 32),
            ([2, 5, 5, 12], Hw::new(1, 1), 1, 1, Padding::Valid, 40),
            // Pointwise bands, each block of channels in one call (`band_tiles!`): 32 then
            // 16 channels over two images of 35 pixels; 16 over nine pixels (tiles of 5, one
            // partial); 32 over thirteen.
            ([2, 5, 7, 12], Hw::new(1, 1), 1, 1, Padding::Valid, 48),
            ([1, 3, 3, 8], Hw::new(1, 1), 1, 1, Padding::Valid, 16),
            ([1, 13, 1, 20], Hw::new(1, 1), 1, 1, Padding::Valid, 32),
            // Tiles of 4 pixels on 256-bit registers (sixteen pixels, `tile_rows`).
            ([1, 4, 4, 24], Hw::new(1, 1), 1, 1, Padding::Valid, 32),
            ([1, 6, 5, 40], Hw::new(3, 3), 1, 1, Padding::Same, 56),
            // 72 channels: 32 at a time on 512-bit registers, then 8 on 256-bit ones.
            ([1, 5, 4, 72], Hw::new(3, 3), 1, 1, Padding::Same, 72),
            // Images whose padded rows take several bands of the stack buffer.
            ([1, 40, 30, 16], Hw::new(3, 3), 1, 1, Padding::Same, 16),
            ([2, 50, 20, 12], Hw::new(3, 3), 2, 1, Padding::Same, 24),
            // A dilated window wider than the image, and stride 2 without padding.
            ([1, 3, 2, 16], Hw::new(3, 3), 1, 2, Padding::Same, 16),
            ([1, 7, 11, 24], Hw::new(3, 3), 2, 1, Padding::Valid, 24),
            // Wider rows: stride 2 with padding (40 channels: 32, then a last eight),
            // dilation 2, and no padding at all.
            ([1, 9, 40, 40], Hw::new(3, 3), 2, 1, Padding::Same, 40),
            ([2, 12, 36, 32], Hw::new(3, 3), 1, 2, Padding::Same, 32),
            ([1, 6, 20, 64], Hw::new(3, 3), 1, 1, Padding::Valid, 64),
            // Filters beyond 32 KiB, read through panels of up to 256 rows: a 1x1 of 600
            // input channels (three parts of 32 channels, one of 8), and a 3x3 whose third
            // run of taps crosses from the first part into the second.
            ([1, 4, 6, 600], Hw::new(1, 1), 1, 1, Padding::Valid, 40),
            ([1, 5, 5, 40], Hw::new(3, 3), 1, 1, Padding::Same, 32),
            // The same filters over bands of 48 pixels or more, which read them through
            // panels (copied per call, or laid out ahead of time).
            ([1, 8, 8, 600], Hw::new(1, 1), 1, 1, Padding::Valid, 40),
            ([1, 8, 7, 40], Hw::new(3, 3), 1, 1, Padding::Same, 32),
        ];
        for (i, (dims, filter, stride, dilation, padding, co)) in cases.into_iter().enumerate() {
            let [n, h, w, c] = dims;
            let window =
                Window::new(Hw::new(h, w), filter, Hw::square(stride), Hw::square(dilation), padding)
                    .unwrap();
            let input = values(i as u32, n * h * w * c);
            let conv_filter = values(100 + i as u32, filter.h * filter.w * c * co);
            let bias = values(200 + i as u32, co);
            let out_len = n * window.output.h * window.output.w * co;
            let (lo, hi) = (-0.5, 3.0);
            let p = FloatConv {
                input: &input,
                dims,
                filter: &conv_filter,
                bias: &bias,
                out_channels: co,
                window,
                lo,
                hi,
                packed: None,
            };
            // On 512-bit registers where the CPU has them, and on 256-bit ones: the same sums
            // lane by lane, so the same results bit for bit.
            let [out, narrow] = [true, false].map(|wide| {
                let mut out = std::vec![0.0; out_len];
                assert!(conv_on(&p, &mut out, wide, in_runs), "case {i} taken");
                for (a, b) in out.iter().zip(reference(&p, false)) {
                    assert!((a - b).abs() <= 1e-5, "conv case {i} (wide {wide}): {a} vs {b}");
                }
                out
            });
            assert!(out.iter().zip(&narrow).all(|(a, b)| a.to_bits() == b.to_bits()), "case {i} widths");
            // The filter laid out ahead of time: the same values, so the same results.
            let mut packed = std::vec![0.0; conv_filter.len()];
            if crate::panels::pack(&conv_filter, co, &mut packed) {
                // Read by both widths' tiles (the 256-bit ones 16 or 8 channels of a block).
                for wide in [true, false] {
                    let mut again = std::vec![0.0; out_len];
                    assert!(conv_on(&FloatConv { packed: Some(&packed), ..p }, &mut again, wide, in_runs));
                    let same = out.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "case {i} packed (wide {wide})");
                }
            }
            // The same window as a depthwise convolution of `c` channels rounded up to eights,
            // when at most `co` (so that the bias serves).
            let dc = c.next_multiple_of(8);
            if dc > co {
                continue;
            }
            let input = values(300 + i as u32, n * h * w * dc);
            let dw_filter = values(400 + i as u32, filter.h * filter.w * dc);
            let p = FloatConv {
                input: &input,
                dims: [n, h, w, dc],
                filter: &dw_filter,
                bias: &bias[..dc],
                out_channels: dc,
                window,
                lo,
                hi,
                packed: None,
            };
            // On 512-bit registers where the CPU has them, and on 256-bit ones: the same sums
            // lane by lane, so the same results bit for bit.
            let outs = [true, false].map(|wide| {
                let mut out = std::vec![0.0; n * window.output.h * window.output.w * dc];
                assert!(depthwise_on(&p, &mut out, wide, in_runs), "depthwise case {i} taken");
                for (a, b) in out.iter().zip(reference(&p, true)) {
                    assert!((a - b).abs() <= 1e-5, "depthwise case {i} (wide {wide}): {a} vs {b}");
                }
                out.iter().map(|v| v.to_bits()).collect::<std::vec::Vec<_>>()
            });
            assert!(outs[0] == outs[1], "depthwise case {i}: 512-bit and 256-bit loops differ");
        }
    }

    #[test]
    fn fully_connected_matches_the_reference_loop() {
        if !hostrt_dsp::has_avx2_fma() {
            std::println!("skipped: this CPU lacks AVX2 and FMA");
            return;
        }
        for (i, (batches, depth, units)) in [
            (1, 640, 128),
            (3, 7, 8),
            (2, 33, 24),
            (1, 5, 136),
            (2, 9, 264),
            (1, 6, 1000),
            (1, 130, 16),
            (2, 3, 8),
        ]
        .into_iter()
        .enumerate()
        {
            let (x, filter, bias) = (
                values(i as u32, batches * depth),
                values(50 + i as u32, depth * units),
                values(90 + i as u32, units),
            );
            // Whole, and cut in runs of 24 outputs (one row's outputs are split).
            let mut out = std::vec![0.0; batches * units];
            assert!(fully_connected((&x, &filter, &bias), depth, (-0.5, 2.0), &mut out, whole));
            let mut cut = std::vec![0.0; batches * units];
            assert!(fully_connected((&x, &filter, &bias), depth, (-0.5, 2.0), &mut cut, in_runs));
            assert!(out == cut, "case {i}: a split changed the results");
            for b in 0..batches {
                for j in 0..units {
                    let acc = (0..depth).fold(0.0f32, |a, k| a + x[b * depth + k] * filter[k * units + j]);
                    let want = (acc + bias[j]).clamp(-0.5, 2.0);
                    let got = out[b * units + j];
                    assert!((got - want).abs() <= 1e-4, "case {i} [{b}][{j}]: {got} vs {want}");
                }
            }
        }
        assert!(
            !fully_connected((&[0.0; 4], &[0.0; 12], &[0.0; 3]), 4, (0.0, 1.0), &mut [0.0; 3], whole),
            "3 units"
        );
    }

    #[test]
    fn shapes_outside_the_loops_are_declined() {
        let window =
            Window::new(Hw::new(4, 4), Hw::square(3), Hw::square(1), Hw::square(1), Padding::Same).unwrap();
        let (input, filter, bias) = ([0.0; 16 * 3], [0.0; 9 * 3 * 12], [0.0; 12]);
        // 12 output channels: not whole groups of eight.
        let p = FloatConv {
            input: &input,
            dims: [1, 4, 4, 3],
            filter: &filter,
            bias: &bias,
            out_channels: 12,
            window,
            lo: 0.0,
            hi: 1.0,
            packed: None,
        };
        assert!(!conv(&p, &mut [0.0; 16 * 12], |o, _, f| f(0, o)));
        // Rows too long for one band of the stack buffer (802 padded columns of 16 channels).
        let window =
            Window::new(Hw::new(3, 800), Hw::square(3), Hw::square(1), Hw::square(1), Padding::Same).unwrap();
        let input = std::vec![0.0; 3 * 800 * 16];
        let p = FloatConv {
            input: &input,
            dims: [1, 3, 800, 16],
            filter: &filter,
            bias: &bias,
            out_channels: 8,
            window,
            lo: 0.0,
            hi: 1.0,
            packed: None,
        };
        assert!(!conv(&p, &mut std::vec![0.0; 3 * 800 * 8], |o, _, f| f(0, o)));
        // A depthwise convolution reads in place, whatever the rows' length, but only with a
        // multiplier of 1: 16 input channels to 8 is declined.
        assert!(!depthwise(&p, &mut std::vec![0.0; 3 * 800 * 8], in_runs));
    }
}
