//! The inner loops that differ between implementations. Kernels (`crate::conv`, ...) own the
//! shape checks and outer loops and are generic over [`InnerLoops`]; `portable`, `dsp` and
//! `x86` each implement it and expose the kernels built on it.

use crate::quant::ActivationRange;

/// The three per-channel kernels (`fully_connected`, `conv2d`, `depthwise_conv2d`) as public
/// functions on the inner loops `$loops`, with the given doc comments.
macro_rules! per_channel_kernels {
    ($loops:ty, $fc:literal, $conv:literal, $depthwise:literal) => {
        $crate::arch::per_channel_kernels!(@one $loops, $fc, fully_connected, FullyConnectedParams, fully_connected);
        $crate::arch::per_channel_kernels!(@one $loops, $conv, conv2d, ConvParams, conv);
        $crate::arch::per_channel_kernels!(@one $loops, $depthwise, depthwise_conv2d, DepthwiseParams, depthwise);
    };
    (@one $loops:ty, $doc:literal, $name:ident, $params:ident, $module:ident) => {
        #[doc = $doc]
        // Never inlined: a caller built for size (firmware's `opt-level = "z"`) would otherwise
        // take the loops in under its own attributes, and LLVM then outlines their code and
        // calls `__aeabi_ldivmod` for the output stage's division by 2^31 (measured: twice
        // the instructions per inference of an imported model on Cortex-M4).
        #[inline(never)]
        pub fn $name(
            params: &$crate::$params,
            input: &[i8],
            filter: &[i8],
            bias: Option<&[i32]>,
            quant: $crate::PerChannel<'_>,
            output: &mut [i8],
        ) -> Result<(), $crate::DspError> {
            $crate::$module::run::<$loops>(params, input, filter, bias, quant, output)
        }
    };
}
pub(crate) use per_channel_kernels;

#[cfg(hostrt_arm_dsp)]
pub mod asm;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod avx2;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod avx2_dw;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod avx2_fc;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub mod avx512;
pub mod dsp;
pub mod emulated;
pub(crate) mod loops;
pub mod portable;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub mod vnni;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod vnni_fc;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub mod x86;

/// The inner loops the crate-root kernels use: the DSP extension's where the target has it.
#[cfg(hostrt_arm_dsp)]
pub(crate) type Best = dsp::Dsp;
/// The inner loops of the `dsp.*` program kernels on x86-64: SSE2 (the crate-root kernels
/// pick theirs at run time, `vnni` and `avx512` where the CPU has them, else these; targets
/// that turn SSE off, as `x86_64-unknown-none`, get the portable ones).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", feature = "kernels"))]
pub(crate) type Best = x86::X86;
/// The inner loops the crate-root kernels use: the DSP extension's where the target has it.
#[cfg(not(any(hostrt_arm_dsp, all(target_arch = "x86_64", target_feature = "sse2"))))]
pub(crate) type Best = portable::Portable;

/// [`InnerLoops::pack_filters`]' default layout: each filter's `per_filter` values widened
/// to int16 and zero-padded to `stride`, the rows one after the other (`n` rounded up to a
/// multiple of 8 with zero filters).
fn pack_rows(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
    let packed = &mut packed[..n.next_multiple_of(8) * stride];
    packed.fill(0);
    for (row, f) in packed.chunks_exact_mut(stride).zip(filter.chunks_exact(per_filter.max(1))).take(n) {
        for (d, &f) in row.iter_mut().zip(f) {
            *d = i16::from(f);
        }
    }
}

/// [`InnerLoops::dot_run`] through `K::dot4`, four channels per read of the input (a last
/// partial group repeats its last channel).
#[inline]
pub(crate) fn dot_run_by_4<K: InnerLoops + ?Sized>(
    input: &[i8],
    filters: &[i8],
    input_offset: i32,
    bias: &[i32],
    acc: &mut [i32],
) {
    let (n, depth) = (acc.len(), input.len());
    for j in (0..n).step_by(4) {
        let c: [usize; 4] = core::array::from_fn(|k| (j + k).min(n - 1));
        let sums =
            K::dot4(input, c.map(|c| &filters[c * depth..][..depth]), input_offset, c.map(|c| bias[c]));
        for (a, s) in acc[j..].iter_mut().zip(sums) {
            *a = s;
        }
    }
}

/// [`InnerLoops::conv_block_out`] by way of the sums: [`InnerLoops::conv_block`] into `acc`,
/// then [`InnerLoops::requantize_rows`].
pub(crate) fn block_out_by_sums<K: InnerLoops + ?Sized>(
    (patches, stride, packed, bias): (&[i16], usize, &[i16], &[i32]),
    stage: &OutputStage<'_>,
    acc: &mut [i32],
    (output, output_stride, pixels): (&mut [i8], usize, usize),
) {
    let acc = &mut acc[..pixels * bias.len()];
    K::conv_block(patches, stride, packed, bias, acc);
    K::requantize_rows(acc, stage, output, output_stride);
}

/// Most taps (filter height times width) of [`InnerLoops::depthwise_rows`].
pub(crate) const DEPTHWISE_MAX_TAPS: usize = 32;

/// `dst[i] = src[i] + offset` as int16, over the shorter of the two: inputs plus the input
/// offset (`-127..=128`), which stay in `-255..=255`. On x86-64 CPUs with AVX2, runs of 32
/// values or more go through the loop compiled for AVX2 (16 values per `VPMOVSXBW`; the
/// baseline's SSE2 took three times the instructions to stage a convolution's rows).
#[inline]
pub(crate) fn widen(src: &[i8], offset: i16, dst: &mut [i16]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if src.len().min(dst.len()) >= 32 && avx2::has_avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { widen_avx2(src, offset, dst) };
    }
    widen_each(src, offset, dst);
}

/// [`widen`]'s loop.
#[inline(always)]
fn widen_each(src: &[i8], offset: i16, dst: &mut [i16]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = i16::from(x) + offset;
    }
}

/// [`widen`]'s loop compiled for AVX2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2")]
fn widen_avx2(src: &[i8], offset: i16, dst: &mut [i16]) {
    widen_each(src, offset, dst);
}

/// The input rows of one output row of a depthwise convolution, staged for
/// [`InnerLoops::depthwise_rows`]: for each filter row `fy`, `columns` input columns (from
/// the first one the run's first pixel reads), each `n` channels of input plus the input
/// offset as int16 (so `-255..=255`), 0 in the padding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DepthwiseRows<'a> {
    /// `filter.h * columns * n` values: row `fy`, column `x`, channel `j` at
    /// `(fy * columns + x) * n + j`.
    pub values: &'a [i16],
    /// Columns per row.
    pub columns: usize,
    /// Filter height and width.
    pub filter: crate::shape::Hw,
    /// Columns between output pixels.
    pub stride: usize,
    /// Columns between filter taps.
    pub dilation: usize,
}

/// The output stage of a run of consecutive channels: channel `j` of the run is rescaled by
/// `multiplier[j]` and `shift[j]` (equal lengths, shifts in `-31..=30`), then offset and
/// clamped as [`InnerLoops::requantize`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputStage<'a> {
    /// Q31 multipliers of the run's channels.
    pub multiplier: &'a [i32],
    /// Shifts of the run's channels.
    pub shift: &'a [i32],
    /// Output zero point.
    pub offset: i32,
    /// Fused activation clamp (within int8).
    pub act: ActivationRange,
}

/// The hot loops of the int8 kernels. All arithmetic is modulo 2^32 (TFLite's int32
/// accumulation, with C++'s undefined overflow made wrapping), so any summation order gives
/// the same bits.
pub(crate) trait InnerLoops {
    /// `acc + Σ filter[i] * (input[i] + input_offset)`; the slices have equal lengths.
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32;

    /// [`InnerLoops::dot`] of one input with two filters of its length, unpacking the input
    /// once for both (two output channels at a time).
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2];

    /// [`InnerLoops::dot`] of two inputs with two filters, all of one length: `acc` and the
    /// result are `[x0·f0, x0·f1, x1·f0, x1·f1]` (two output pixels by two output channels,
    /// each value loaded and unpacked once for two products: CMSIS-NN's GEMM step).
    #[inline]
    fn dot2x2(inputs: [&[i8]; 2], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 4]) -> [i32; 4] {
        let [a, b] = Self::dot2(inputs[0], filters, input_offset, [acc[0], acc[1]]);
        let [c, d] = Self::dot2(inputs[1], filters, input_offset, [acc[2], acc[3]]);
        [a, b, c, d]
    }

    /// `acc[c] += filter[c] * (input[c] + input_offset)` for four channels (depthwise).
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]);

    /// TFLite's output stage: rescale, add the output offset, clamp to `act` (within int8).
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8;

    /// Whether the kernels take their blocked loops, built on the methods below: convolution
    /// patches of four output pixels gathered and widened to int16 once for a run of filters
    /// laid out once per call, depthwise input rows staged as int16, four output channels per
    /// read of a fully connected input, and rows of accumulators through the output stage at
    /// once (the stage set up once per group of channels). Implementations for wide registers
    /// set it; the per-pixel loops (CMSIS-NN's structure) stay for the others, which use the
    /// provided definitions below only in tests.
    const BLOCKED: bool = false;

    /// Whether the kernels take the DSP extension's word loops ([`loops`]): convolution
    /// patches widened once per output pixel into int16 pairs and multiplied with four filters
    /// at a time ([`loops::conv_row4`]), depthwise taps four channels at a time
    /// ([`loops::taps4`]). Set by `dsp` only.
    const DSP_LOOPS: bool = false;

    /// [`InnerLoops::dot`] of one input with four filters of its length.
    #[inline]
    fn dot4(input: &[i8], filters: [&[i8]; 4], input_offset: i32, acc: [i32; 4]) -> [i32; 4] {
        let [a, b] = Self::dot2(input, [filters[0], filters[1]], input_offset, [acc[0], acc[1]]);
        let [c, d] = Self::dot2(input, [filters[2], filters[3]], input_offset, [acc[2], acc[3]]);
        [a, b, c, d]
    }

    /// A run of a fully connected layer's output channels for one input row:
    /// `acc[j] = bias[j] + Σ_i filters[j * depth + i] * (input[i] + input_offset)` (modulo
    /// 2^32) for `j < acc.len()`, where `depth = input.len()` and `filters` and `bias` hold
    /// at least `acc.len()` channels (a loop may read filters past those, never sum them). By
    /// default [`dot_run_by_4`].
    #[inline]
    fn dot_run(input: &[i8], filters: &[i8], input_offset: i32, bias: &[i32], acc: &mut [i32]) {
        dot_run_by_4::<Self>(input, filters, input_offset, bias, acc);
    }

    /// Lays out the filters of a run of `n` output channels for [`InnerLoops::conv_block`]:
    /// `filter` holds them as rows of `per_filter` int8; `packed` receives them widened to
    /// int16, each zero-padded to `stride` values (a multiple of 8), and with `n` rounded up
    /// to a multiple of 8 with zero filters: `packed.len() >= n.next_multiple_of(8) * stride`.
    /// The layout is the implementation's (here: the rows, one after the other).
    #[inline]
    fn pack_filters(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
        pack_rows(filter, per_filter, stride, n, packed);
    }

    /// One block of a convolution's output pixels over a run of `n = bias.len()` channels:
    /// `acc[p * n + j] = bias[j] + Σ_k patches[p * stride + k] * filter_j[k]` (modulo 2^32)
    /// for the block's `acc.len() / n` pixels (at most 4; `patches` always holds 4 rows of
    /// `stride` values, a multiple of 8), with the filters as [`InnerLoops::pack_filters`]
    /// laid them out. In the conv kernel, patch values are inputs plus the input offset
    /// (`-255..=255`), 0 in the padding.
    #[inline]
    fn conv_block(patches: &[i16], stride: usize, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        let n = bias.len();
        if n == 0 {
            return;
        }
        for (row, patch) in acc.chunks_exact_mut(n).zip(patches.chunks_exact(stride)) {
            for ((a, &b), filter) in row.iter_mut().zip(bias).zip(packed.chunks_exact(stride)) {
                *a = patch
                    .iter()
                    .zip(filter)
                    .fold(b, |a, (&x, &w)| a.wrapping_add(i32::from(x) * i32::from(w)));
            }
        }
    }

    /// Lays out the depthwise filter of a run of `n` channels for
    /// [`InnerLoops::depthwise_rows`] (at most [`DEPTHWISE_MAX_TAPS`] `taps`; both may panic on
    /// more): tap `t`'s `n` values start at `filter[t * filter_stride]`;
    /// `packed` receives them as int16, zero-padded (at least
    /// `taps.next_multiple_of(2) * n.next_multiple_of(8)` values). The layout is the
    /// implementation's (here: tap after tap, `n` values each).
    #[inline]
    fn pack_depthwise(filter: &[i8], filter_stride: usize, taps: usize, n: usize, packed: &mut [i16]) {
        for (t, row) in packed.chunks_exact_mut(n.max(1)).take(taps).enumerate() {
            for (d, &f) in row.iter_mut().zip(&filter[t * filter_stride..][..n]) {
                *d = i16::from(f);
            }
        }
    }

    /// Depthwise convolution (depth multiplier 1) of a run of output pixels along one output
    /// row, from that row's input rows staged as int16 (see [`DepthwiseRows`]) and the run's
    /// filter as [`InnerLoops::pack_depthwise`] laid it out, over `n = bias.len()` channels: for
    /// pixel `i` and channel `j`,
    /// `acc[i * n + j] = bias[j] + Σ_(fy, fx) filter_j[fy][fx] * rows.at(fy, i * stride + fx * dilation, j)`.
    #[inline]
    fn depthwise_rows(rows: &DepthwiseRows<'_>, packed: &[i16], bias: &[i32], acc: &mut [i32]) {
        let n = bias.len();
        if n == 0 {
            return;
        }
        let g = rows;
        for (i, acc) in acc.chunks_exact_mut(n).enumerate() {
            acc.copy_from_slice(bias);
            for fy in 0..g.filter.h {
                for fx in 0..g.filter.w {
                    let x = &g.values[(fy * g.columns + i * g.stride + fx * g.dilation) * n..][..n];
                    let w = &packed[(fy * g.filter.w + fx) * n..][..n];
                    for ((a, &x), &w) in acc.iter_mut().zip(x).zip(w) {
                        *a = a.wrapping_add(i32::from(x) * i32::from(w));
                    }
                }
            }
        }
    }

    /// Whether [`InnerLoops::pack_filters`] lays filters out as
    /// [`crate::prepack::pack_conv_pairs`] does, so that the blocked convolution may read
    /// a layout made ahead of time instead (AVX2's).
    #[inline]
    fn takes_pairs() -> bool {
        false
    }

    /// Whether the blocked convolution takes [`InnerLoops::conv_block_out`] per block of
    /// pixels, instead of [`InnerLoops::conv_block`] per block and
    /// [`InnerLoops::requantize_rows`] per group of blocks (AVX2's).
    #[inline]
    fn has_block_out() -> bool {
        false
    }

    /// [`InnerLoops::conv_block`] through the output stage: pixel `p`'s `n = bias.len()`
    /// outputs to `output[p * output_stride..]`, for the block's `pixels` (at most 4). By
    /// default by way of `acc` (at least `pixels * n` values, overwritten).
    #[inline]
    fn conv_block_out(
        (patches, stride, packed, bias): (&[i16], usize, &[i16], &[i32]),
        stage: &OutputStage<'_>,
        acc: &mut [i32],
        (output, output_stride, pixels): (&mut [i8], usize, usize),
    ) {
        block_out_by_sums::<Self>(
            (patches, stride, packed, bias),
            stage,
            acc,
            (output, output_stride, pixels),
        );
    }

    /// Whether [`InnerLoops::conv_direct`] is worth taking over gathered patches (AVX2's).
    #[inline]
    fn has_direct() -> bool {
        false
    }

    /// [`InnerLoops::pack_filters`] for [`InnerLoops::conv_direct`] (by default the rows, one
    /// after the other).
    #[inline]
    fn pack_direct(filter: &[i8], per_filter: usize, stride: usize, n: usize, packed: &mut [i16]) {
        pack_rows(filter, per_filter, stride, n, packed);
    }

    /// One block of a convolution's output pixels read in place from staged input rows
    /// (`conv.rs`'s direct loop): `acc[p * n + j] = bias[j] + Σ_fy Σ_k x[bases[p] + fy *
    /// row + k] * f_j[fy * taps + k]` (modulo 2^32) for `k < taps` and the block's `acc.len()
    /// / n` pixels (at most 4; `bases` holds 4, the unused ones valid too), where `n =
    /// bias.len()`, `fy < rows` and the filters `f_j` (`rows * taps` values each, `taps`
    /// even) are as [`InnerLoops::pack_direct`] laid them out with that stride.
    #[inline]
    fn conv_direct(
        x: &[i16],
        (bases, row, rows, taps): ([usize; 4], usize, usize, usize),
        packed: &[i16],
        bias: &[i32],
        acc: &mut [i32],
    ) {
        let n = bias.len();
        let stride = rows * taps;
        for (out, &base) in acc.chunks_exact_mut(n.max(1)).zip(&bases) {
            for ((a, &b), f) in out.iter_mut().zip(bias).zip(packed.chunks_exact(stride.max(1))) {
                *a = (0..stride).fold(b, |a, k| {
                    let v = x[base + k / taps * row + k % taps];
                    a.wrapping_add(i32::from(v) * i32::from(f[k]))
                });
            }
        }
    }

    /// [`InnerLoops::requantize`] of rows of accumulators: `acc` holds rows of
    /// `stage.multiplier.len()` channels back to back, and row `r` goes to
    /// `output[r * output_stride..]`.
    #[inline]
    fn requantize_rows(acc: &[i32], stage: &OutputStage<'_>, output: &mut [i8], output_stride: usize) {
        let width = stage.multiplier.len();
        if width == 0 {
            return;
        }
        for (r, row) in acc.chunks_exact(width).enumerate() {
            let out = &mut output[r * output_stride..][..width];
            for (((o, &a), &m), &s) in out.iter_mut().zip(row).zip(stage.multiplier).zip(stage.shift) {
                *o = Self::requantize(a, m, s, stage.offset, stage.act);
            }
        }
    }
}
