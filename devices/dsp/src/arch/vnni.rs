//! int8 convolution as an unsigned-by-signed byte GEMM on AVX-512 VNNI (`VPDPBUSD` on 256-bit
//! registers), taken at run time where the CPU has it; elsewhere the SSE2 loops run.
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
//! bytes of a pixel broadcast to every lane); per block of output pixels, their patches are
//! gathered (im2col) as unsigned bytes once for the whole run. Tiles of four pixels by up to
//! 32 channels keep their sums in registers and go through the output stage (TFLite's
//! per-channel requantization, eight channels per AVX2 vector) straight to the output.
//!
//! Detection reads CPUID and XCR0 (no `std`), once, and is cached.

use core::arch::x86_64::*;
use core::sync::atomic::{AtomicU8, Ordering};

use core::mem::MaybeUninit;

use crate::conv::{ConvParams, im2col, next_pixel};
use crate::error::DspError;
use crate::quant::{PerChannel, check_per_channel};

/// Whether the CPU and OS offer AVX2, AVX-512 VNNI and AVX-512 VL (cached after the first call).
pub fn available() -> bool {
    /// 0 unknown, 1 absent, 2 present.
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let yes = detect();
            STATE.store(1 + u8::from(yes), Ordering::Relaxed);
            yes
        }
        state => state == 2,
    }
}

fn detect() -> bool {
    #[allow(unused_unsafe)] // `__cpuid_count` is an unsafe function before Rust 1.94.
    // SAFETY: CPUID exists on every x86-64 processor; leaves 1 and 7 are asked for only after
    // leaf 0 says they exist.
    let (max_leaf, leaf1, leaf7) = unsafe {
        let max_leaf = __cpuid_count(0, 0).eax;
        if max_leaf < 7 {
            return false;
        }
        (max_leaf, __cpuid_count(1, 0), __cpuid_count(7, 0))
    };
    let _ = max_leaf;
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    let avx2 = leaf7.ebx & (1 << 5) != 0;
    let avx512f = leaf7.ebx & (1 << 16) != 0;
    let avx512vl = leaf7.ebx & (1 << 31) != 0;
    let avx512vnni = leaf7.ecx & (1 << 11) != 0;
    if !(osxsave && avx2 && avx512f && avx512vl && avx512vnni) {
        return false;
    }
    // SAFETY: XGETBV is available where CPUID reports OSXSAVE, checked above.
    let xcr0 = unsafe { xcr0() };
    // SSE, AVX, and the three AVX-512 register states (opmask, upper halves, upper registers)
    // saved by the OS.
    xcr0 & 0xe6 == 0xe6
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
    if p.output_channels > 0 && fits && available() {
        vnni_conv(Vnni(()), p, input, filter, bias, quant, output);
        return Ok(());
    }
    super::x86::conv2d(p, input, filter, bias, quant, output)
}

/// Proof that the CPU has the target features of [`tile`] (made only where [`available`]).
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
    let per_filter = w.filter.h * w.filter.w * s.c;
    let quads = per_filter.div_ceil(4);
    let stride = 4 * quads;
    let total = s.n * w.output.h * w.output.w;
    // Pixels per block, whole tiles (at least one, as `conv2d` checked).
    let block = (PATCH_BYTES / stride / TILE * TILE).min(total.next_multiple_of(TILE));
    let run_len = (FILTER_BYTES / (32 * quads) * 8).min(CHANNEL_RUN);
    let offset = -p.input_zero_point;
    let pad = (p.input_zero_point as i8 as u8) ^ 0x80;
    let pointwise = w.filter.h == 1
        && w.filter.w == 1
        && w.stride.h == 1
        && w.stride.w == 1
        && w.pad.h == 0
        && w.pad.w == 0;

    // Not zeroed whole: each call writes only what it uses (`prefix`), which for the small
    // layers of tiny-ML models is a fraction of these.
    let mut patches = [MaybeUninit::<u8>::uninit(); PATCH_BYTES];
    let mut packed = [MaybeUninit::<[u8; 32]>::uninit(); FILTER_BYTES / 32];
    let mut stage = Stage { bias: [0; CHANNEL_RUN], multiplier: [0; CHANNEL_RUN], shift: [0; CHANNEL_RUN] };
    let out_stage = OutStage::new(p);
    for c0 in (0..oc_n).step_by(run_len) {
        let n = (oc_n - c0).min(run_len);
        let blocks = n.div_ceil(8);
        let packed = prefix(&mut packed, blocks * quads, [0; 32]);
        pack_filters(&filter[c0 * per_filter..][..n * per_filter], per_filter, quads, packed);
        for j in 0..blocks * 8 {
            let c = c0 + j;
            (stage.bias[j], stage.multiplier[j], stage.shift[j]) = if j < n {
                let f = &filter[c * per_filter..][..per_filter];
                let sum = f.iter().fold(0i32, |a, &x| a.wrapping_add(i32::from(x)));
                let b = bias.map_or(0, |b| b[c]);
                (b.wrapping_add((offset - 128).wrapping_mul(sum)), quant.multiplier[c], quant.shift[c])
            } else {
                (0, 0, 0)
            };
        }
        let mut pixel = (0, 0, 0);
        for first in (0..total).step_by(block) {
            let np = (total - first).min(block);
            // Zeros past each patch and in the rows past the last pixel (a partial tile),
            // which are multiplied by zero filter values or not stored.
            let patches = prefix(&mut patches, np.next_multiple_of(TILE) * stride, 0);
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
                let rows = (np - t).min(TILE);
                let tile_patches: [&[[u8; 4]]; TILE] =
                    [0, 1, 2, 3].map(|r| &patch_quads[(t + r) * quads..][..quads]);
                let out = &mut output[(first + t) * oc_n + c0..];
                let mut b = 0;
                while b < blocks {
                    let width = if blocks - b >= 4 {
                        4
                    } else if blocks - b >= 2 {
                        2
                    } else {
                        1
                    };
                    let filters = &packed[b * quads..][..width * quads];
                    let tile_out =
                        TileOut { out: &mut *out, stride: oc_n, rows, first_channel: 8 * b, channels: n };
                    let _ = cpu;
                    // SAFETY: `cpu` proves the CPU has `tile`'s target features.
                    unsafe {
                        match width {
                            4 => tile::<4>(tile_patches, filters, &stage, &out_stage, tile_out),
                            2 => tile::<2>(tile_patches, filters, &stage, &out_stage, tile_out),
                            _ => tile::<1>(tile_patches, filters, &stage, &out_stage, tile_out),
                        }
                    }
                    b += width;
                }
            }
        }
    }
}

/// The first `len` values of `buf`, each set to `value`.
fn prefix<T: Copy>(buf: &mut [MaybeUninit<T>], len: usize, value: T) -> &mut [T] {
    let buf = &mut buf[..len];
    for x in buf.iter_mut() {
        x.write(value);
    }
    // SAFETY: every element of `buf` was initialized just above, and `MaybeUninit<T>` has the
    // size, alignment and layout of `T`.
    unsafe { &mut *(buf as *mut [MaybeUninit<T>] as *mut [T]) }
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
/// Values past `per_filter` and channels past the run are left as they are (zeros).
fn pack_filters(filter: &[i8], per_filter: usize, quads: usize, packed: &mut [[u8; 32]]) {
    for (c, row) in filter.chunks_exact(per_filter).enumerate() {
        let (block, lane) = (c / 8, 4 * (c % 8));
        let dst = &mut packed[block * quads..][..quads];
        let (whole, tail) = row.as_chunks::<4>();
        for (d, x) in dst.iter_mut().zip(whole) {
            d[lane..lane + 4].copy_from_slice(&x.map(|x| x as u8));
        }
        for (i, &x) in tail.iter().enumerate() {
            dst[whole.len()][lane + i] = x as u8;
        }
    }
}

/// Per-channel values of a run, padded with zeros to whole blocks of eight: the bias with the
/// unsigned inputs' correction, and the requantization.
struct Stage {
    bias: [i32; CHANNEL_RUN],
    multiplier: [i32; CHANNEL_RUN],
    shift: [i32; CHANNEL_RUN],
}

/// The output offset and clamp, broadcast.
#[derive(Clone, Copy)]
struct OutStage {
    offset: i32,
    min: i32,
    max: i32,
}

impl OutStage {
    fn new(p: &ConvParams) -> OutStage {
        OutStage { offset: p.output_zero_point, min: p.activation.min, max: p.activation.max }
    }
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

/// Eight int32 from an array of them.
#[target_feature(enable = "avx2")]
#[inline]
fn load_i32x8(v: &[i32; 8]) -> __m256i {
    // SAFETY: `v` is a valid reference to 32 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// 32 bytes from an array of them.
#[target_feature(enable = "avx2")]
#[inline]
fn load_u8x32(v: &[u8; 32]) -> __m256i {
    // SAFETY: as `load_i32x8`.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
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
    patches: [&[[u8; 4]]; TILE],
    filters: &[[u8; 32]],
    stage: &Stage,
    out_stage: &OutStage,
    to: TileOut<'_>,
) {
    let quads = patches[0].len();
    let patches = patches.map(|p| &p[..quads]);
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
    for q in 0..quads {
        let mut wq = [_mm256_setzero_si256(); B];
        for j in 0..B {
            wq[j] = load_u8x32(&w[j][q]);
        }
        for r in 0..TILE {
            let x = _mm256_set1_epi32(i32::from_le_bytes(patches[r][q]));
            for j in 0..B {
                acc[r][j] = _mm256_dpbusd_epi32(acc[r][j], x, wq[j]);
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
            to.out[r * to.stride + c..][..width].copy_from_slice(&bytes[..width]);
        }
    }
}

/// TFLite's per-channel output stage (`MultiplyByQuantizedMultiplier`, double rounding; see
/// `crate::quant`) of eight int32 lanes, plus the output offset, clamped: as int8.
#[target_feature(enable = "avx2")]
#[inline]
fn requantize8(acc: __m256i, multiplier: __m256i, shift: __m256i, st: &OutStage) -> [i8; 8] {
    let zero = _mm256_setzero_si256();
    let left = _mm256_max_epi32(shift, zero);
    let right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
    // The left shift wraps, as `wrapping_mul(1 << left)` does.
    let x = _mm256_sllv_epi32(acc, left);
    // Rounding doubling high multiply: bits 31..62 of `x * m + 2^30` (the arithmetic shift
    // of that sum by 31, equal to gemmlowp's nudge-then-truncate for either sign), from the
    // even lanes' and odd lanes' 64-bit products.
    let nudge = _mm256_set1_epi64x(1 << 30);
    let even = _mm256_add_epi64(_mm256_mul_epi32(x, multiplier), nudge);
    let odd = _mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), _mm256_srli_epi64::<32>(multiplier)),
        nudge,
    );
    let high = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<31>(even), _mm256_slli_epi64::<1>(odd));
    // The one overflow, i32::MIN * i32::MIN, gave i32::MIN; flipping every bit saturates it.
    let min = _mm256_set1_epi32(i32::MIN);
    let overflow = _mm256_and_si256(_mm256_cmpeq_epi32(x, min), _mm256_cmpeq_epi32(multiplier, min));
    let high = _mm256_xor_si256(high, overflow);
    // Rounding divide by 2^right, ties away from zero.
    let one = _mm256_set1_epi32(1);
    let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    let remainder = _mm256_and_si256(high, mask);
    let threshold = _mm256_sub_epi32(_mm256_srai_epi32::<1>(mask), _mm256_cmpgt_epi32(zero, high));
    let v = _mm256_sub_epi32(_mm256_srav_epi32(high, right), _mm256_cmpgt_epi32(remainder, threshold));
    let v = _mm256_add_epi32(v, _mm256_set1_epi32(st.offset));
    let v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(st.min)), _mm256_set1_epi32(st.max));
    // Within int8 now, so the saturating packs are exact: lane 0's four values, then lane 1's.
    let v = _mm256_packs_epi32(v, v);
    let v = _mm256_packs_epi16(v, v);
    let lo = _mm_cvtsi128_si32(_mm256_castsi256_si128(v));
    let hi = _mm_cvtsi128_si32(_mm256_extracti128_si256::<1>(v));
    let (lo, hi) = (lo.to_le_bytes(), hi.to_le_bytes());
    [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]].map(|b| b as i8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::InnerLoops;
    use crate::arch::portable::Portable;
    use crate::quant::ActivationRange;
    use crate::testutil::Lcg;

    #[test]
    fn requantize8_matches_scalar() {
        if !available() {
            std::println!("skipped: this CPU lacks AVX-512 VNNI");
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
            // SAFETY: `available` said the CPU has AVX2.
            let got = unsafe { requantize8(load_i32x8(&acc), load_i32x8(&mult), load_i32x8(&shift), &st) };
            for i in 0..8 {
                let want = Portable::requantize(acc[i], mult[i], shift[i], st.offset, ActivationRange::INT8);
                assert_eq!(got[i], want, "acc {} mult {} shift {}", acc[i], mult[i], shift[i]);
            }
        }
    }
}
