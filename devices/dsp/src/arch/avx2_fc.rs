//! The int8 fully connected layer over the VNNI loops' weight layout
//! ([`crate::prepack::pack_fully_connected`]) on AVX2 without VNNI: per block of 16 output
//! channels, a row of biases with the input offset folded in, then one row per quad of the
//! input holding the quad's four filter values of each channel. Each quarter row (four
//! channels' quads, 16 bytes) is sign-extended to int16 as it loads and multiplied by the
//! quad of the input's values made unsigned (`x + 128`, broadcast to every lane) in one
//! `VPMADDWD`; each channel's two partial sums are added across once, at the end of the row.
//! Where the loop reading the filter in place (`InnerLoops::dot_run`) reduces across lanes
//! per eight channels and values, this one does so once per layer row: the int8 autoencoder
//! 7.8-8.0 -> 6.4-6.7 us with pairs of values made int16 by shifts, 6.0-6.2 us with the
//! sign-extending loads (one operation fewer per 32 products). The output stage then runs on
//! each block's sums in their registers (5.4-5.5 us; through a buffer and `requantize_rows`,
//! 5.8-5.9). Sums wrap modulo 2^32 as every other path's, so the results are bit-exact with
//! them.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::avx2::{Narrow, Scale8, store_i8_upto16};
use super::vnni_fc::unsigned;
use crate::fully_connected::FullyConnectedParams;
use crate::prepack::{BLOCK, ConvLayout, ROW};
use crate::quant::PerChannel;

/// Most quads of an input row this loop takes (its pairs are staged on the stack, 8 KiB);
/// longer rows take the loop that reads the filter in place.
pub(super) const MAX_QUADS: usize = 1024;

/// Blocks of 16 channels whose sums share each broadcast input quad (eight sums, 256-bit
/// each: four per block. With four blocks, their sixteen sums and the operands did not fit
/// the sixteen registers: the int8 autoencoder 6.3 us, against 6.0 with two).
const BLOCKS: usize = 2;

/// The layer, for arguments `avx512::fully_connected_prepacked` has checked, with `packed`
/// `layout`'s length and at most [`MAX_QUADS`] quads per input row.
#[target_feature(enable = "avx2")]
pub(super) fn fully_connected(
    p: &FullyConnectedParams,
    input: &[i8],
    (layout, packed): (ConvLayout, &[u8]),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (depth, oc_n, rows) = (p.input_depth, p.output_depth, layout.block_rows());
    let quads = depth.div_ceil(4);
    assert!(quads <= MAX_QUADS && rows == quads + 1);
    let (packed, _) = packed.as_chunks::<ROW>();
    let mut staged = [MaybeUninit::<i64>::uninit(); MAX_QUADS];
    let narrow = Narrow::new(p.output_zero_point, p.activation);
    for (x, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(oc_n)) {
        let quads = stage_quads(x, &mut staged[..quads]);
        for b0 in (0..layout.blocks()).step_by(BLOCKS) {
            let blocks = &packed[b0 * rows..];
            let n = (layout.blocks() - b0).min(BLOCKS);
            let sums = if n == 1 {
                let [first] = block_sums::<1>(blocks, quads);
                [first, [_mm256_setzero_si256(); 2]]
            } else {
                block_sums::<BLOCKS>(blocks, quads)
            };
            for (b, sums) in sums.iter().enumerate().take(n) {
                let c = (b0 + b) * BLOCK;
                let v = stage16(sums, quant, c, &narrow);
                store_i8_upto16(v, &mut out[c..][..(oc_n - c).min(BLOCK)]);
            }
        }
    }
}

/// Channels `c..c + 16`'s output stage (those past the layer's channels get zero scales) on
/// their sums in order, as int8 in order.
#[target_feature(enable = "avx2")]
#[inline]
fn stage16(sums: &[__m256i; 2], quant: PerChannel<'_>, c: usize, narrow: &Narrow) -> __m128i {
    let mut v = [_mm256_setzero_si256(); 2];
    for (h, (v, &sum)) in v.iter_mut().zip(sums).enumerate() {
        // (The second eight may lie past the last channel: an empty slice, zero scales.)
        let at = (c + 8 * h).min(quant.multiplier.len());
        *v = narrow.offset(Scale8::of(&quant.multiplier[at..], &quant.shift[at..]).apply_checked(sum));
    }
    // Channels 0..4, 8..12 | 4..8, 12..16 as int16, then in order.
    let packed = _mm256_packs_epi32(v[0], v[1]);
    narrow.sixteen(_mm256_permute4x64_epi64::<0xD8>(packed))
}

/// The input row's values made unsigned (`x + 128`) as int16, one 64-bit word per quad for
/// `VPBROADCASTQ`; the last quad padded (its padding meets zero filter values). `slots` must
/// be the row's quads, all written here (the caller leaves them uninitialized: no 8 KiB to
/// zero per call).
#[target_feature(enable = "avx2")]
fn stage_quads<'p>(x: &[i8], slots: &'p mut [MaybeUninit<i64>]) -> &'p [i64] {
    let (whole, rest) = x.as_chunks::<4>();
    let mut last = [0i8; 4];
    last[..rest.len()].copy_from_slice(rest);
    let tail = (!rest.is_empty()).then_some(last);
    assert_eq!(slots.len(), whole.len() + usize::from(tail.is_some()));
    for (slot, &q) in slots.iter_mut().zip(whole.iter().chain(&tail)) {
        let u = unsigned(q) as u32 as u64;
        // Byte i to bits 16 i .. 16 i + 8.
        let spread = (u & 0xFF) | (u & 0xFF00) << 8 | (u & 0xFF_0000) << 16 | (u & 0xFF00_0000) << 24;
        slot.write(spread as i64);
    }
    // SAFETY: every slot was written just above (the assertion: one per quad), and
    // `MaybeUninit<T>` has `T`'s layout.
    unsafe { &*(slots as *const [MaybeUninit<i64>] as *const [i64]) }
}

/// The sums of `N` blocks (from the first of `blocks`: a bias row, then one row per quad)
/// over the staged `quads`: each block's channels 0..8 and 8..16, in order.
///
/// Each row's quarters (four channels' quads, 16 bytes) are sign-extended to int16 as they
/// load and multiplied by the broadcast quad in one `VPMADDWD`: each channel's two halves of
/// the quad's products land side by side, summed across at the end.
#[target_feature(enable = "avx2")]
#[inline]
fn block_sums<const N: usize>(blocks: &[[u8; ROW]], quads: &[i64]) -> [[__m256i; 2]; N] {
    let rows = quads.len() + 1;
    let mut rows_of: [&[[u8; ROW]]; N] = [&[]; N];
    for (b, r) in rows_of.iter_mut().enumerate() {
        *r = &blocks[b * rows + 1..][..rows - 1];
    }
    let mut acc = [[_mm256_setzero_si256(); 4]; N];
    for (i, &q) in quads.iter().enumerate() {
        let q = _mm256_set1_epi64x(q);
        for (acc, rows) in acc.iter_mut().zip(&rows_of) {
            for (j, acc) in acc.iter_mut().enumerate() {
                let w = _mm256_cvtepi8_epi16(quarter(&rows[i], j));
                *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(w, q));
            }
        }
    }
    let mut sums = [[_mm256_setzero_si256(); 2]; N];
    for (b, (acc, sums)) in acc.iter().zip(&mut sums).enumerate() {
        let bias = halves(&blocks[b * rows]);
        for (h, sum) in sums.iter_mut().enumerate() {
            // Pairs summed: channels 0, 1, 4, 5 | 2, 3, 6, 7 of the eight, then in order.
            let v = _mm256_permute4x64_epi64::<0xD8>(_mm256_hadd_epi32(acc[2 * h], acc[2 * h + 1]));
            *sum = _mm256_add_epi32(v, bias[h]);
        }
    }
    sums
}

/// Quarter `j` of a row of the layout (four channels' quads).
#[target_feature(enable = "avx2")]
#[inline]
fn quarter(row: &[u8; ROW], j: usize) -> __m128i {
    let part = &row[16 * j..][..16];
    // SAFETY: `part` is a valid reference to 16 readable bytes (the index above checks
    // them); `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(part.as_ptr().cast()) }
}

/// A row of the layout as two vectors: channels 0..8, then 8..16 of its block.
#[target_feature(enable = "avx2")]
#[inline]
fn halves(row: &[u8; ROW]) -> [__m256i; 2] {
    // SAFETY: `row` is a valid reference to 64 readable bytes: bytes 0..32 and 32..64;
    // `loadu` has no alignment requirement.
    unsafe { [_mm256_loadu_si256(row.as_ptr().cast()), _mm256_loadu_si256(row.as_ptr().add(32).cast())] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepack::pack_fully_connected;
    use crate::quant::ActivationRange;
    use crate::testutil::{Lcg, reference_fc};
    use std::vec;

    /// Layers this loop takes against the reference, where the other tests' operands do not
    /// reach: every multiplier sign and size (`i32::MIN`, whose stage can overflow, among
    /// them, met by a sum of `i32::MIN`), shifts at both ends, sums near int32's ends (wrapping
    /// as every path's), the longest rows it takes and one past them (the loop reading the
    /// filter in place).
    #[test]
    fn extreme_stages_and_longest_rows_match_the_reference() {
        if !crate::has_avx2() || crate::has_vnni() {
            return std::eprintln!("skipped: this CPU does not take the AVX2 loop");
        }
        let mut rng = Lcg(7);
        for (depth, channels) in [(4 * MAX_QUADS, 24), (4 * MAX_QUADS + 1, 9), (37, 70), (3, 130)] {
            let p = FullyConnectedParams {
                batches: 2,
                input_depth: depth,
                output_depth: channels,
                input_zero_point: -128,
                output_zero_point: 5,
                activation: ActivationRange::new(-100, 120).unwrap(),
            };
            let input = rng.bytes(2 * depth);
            let mut filter = rng.bytes(depth * channels);
            let mut bias: vec::Vec<i32> =
                (0..channels).map(|c| [i32::MAX - 9, i32::MIN + 9, -77][c % 3]).collect();
            // Channel 0's sum is `i32::MIN`, as its multiplier: the stage's one overflow.
            filter[..depth].fill(0);
            bias[0] = i32::MIN;
            let mults = [i32::MIN, i32::MAX, -(1 << 30), 1 << 30, 1, -1, 0x5555_5555];
            let multiplier: vec::Vec<i32> = (0..channels).map(|c| mults[c % mults.len()]).collect();
            let shift: vec::Vec<i32> = (0..channels).map(|c| [-31, 30, 0, -7, 2][c % 5]).collect();
            let quant = PerChannel { multiplier: &multiplier, shift: &shift };
            let want = reference_fc(&p, &input, &filter, Some(&bias), quant);
            let mut packed = vec![0u8; ConvLayout::of_fully_connected(&p).unwrap().len()];
            pack_fully_connected(&p, &filter, Some(&bias), &mut packed).unwrap();
            let mut got = vec![0i8; 2 * channels];
            let weights = (&filter[..], Some(&bias[..]), Some(&packed[..]));
            super::super::avx512::fully_connected_prepacked(&p, &input, weights, quant, &mut got).unwrap();
            assert_eq!(got, want, "depth {depth}, {channels} channels");
        }
    }
}
