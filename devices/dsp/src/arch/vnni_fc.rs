//! The int8 fully connected layer over weights laid out ahead of time
//! ([`crate::prepack::pack_fully_connected`]) on AVX-512 VNNI: per block of 16 output
//! channels, a row of biases with the input offset folded in, then one row per quad of the
//! input row holding the quad's four filter values of each channel. Each input quad, made
//! unsigned (`x + 128`), is broadcast to every lane and one `VPDPBUSD` adds its four products
//! to all 16 channels' sums, so nothing is summed across lanes and each block's weights are
//! read front to back. Eight blocks go together (one broadcast serves them) with two sums per
//! channel (even and odd quads) so that the adds do not wait on each other. Sums wrap modulo
//! 2^32 as every other path's, so the results are bit-exact with them.

use core::arch::x86_64::*;

use super::avx512::{Group, store_i8x16};
use crate::fully_connected::FullyConnectedParams;
use crate::prepack::{ConvLayout, ROW};
use crate::quant::PerChannel;

/// Blocks of 16 channels whose sums share each broadcast input quad.
const BLOCKS: usize = 8;

/// The layer, for arguments `avx512::fully_connected_prepacked` has checked: `packed` is
/// `layout`'s length, the depths are nonzero, shifts are in range and no multiplier is
/// `i32::MIN`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn fully_connected(
    p: &FullyConnectedParams,
    input: &[i8],
    (layout, packed): (ConvLayout, &[u8]),
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (depth, oc_n, rows) = (p.input_depth, p.output_depth, layout.block_rows());
    let act = (p.output_zero_point, p.activation.min, p.activation.max);
    let (packed, _) = packed.as_chunks::<ROW>();
    for (x, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(oc_n)) {
        let quads = Quads::of(x);
        let mut b0 = 0;
        while b0 < layout.blocks() {
            let blocks = &packed[b0 * rows..];
            let sums: [__m512i; BLOCKS] = match layout.blocks() - b0 {
                1 => pad(block_sums::<1>(blocks, rows, &quads)),
                2 => pad(block_sums::<2>(blocks, rows, &quads)),
                3 => pad(block_sums::<3>(blocks, rows, &quads)),
                4 => pad(block_sums::<4>(blocks, rows, &quads)),
                5 => pad(block_sums::<5>(blocks, rows, &quads)),
                6 => pad(block_sums::<6>(blocks, rows, &quads)),
                7 => pad(block_sums::<7>(blocks, rows, &quads)),
                _ => block_sums::<BLOCKS>(blocks, rows, &quads),
            };
            for (b, sums) in sums.into_iter().enumerate().take(layout.blocks() - b0) {
                let c0 = 16 * (b0 + b);
                let k = (oc_n - c0).min(16);
                let stage = Group::of(&quant.multiplier[c0..][..k], &quant.shift[c0..][..k]);
                store_i8x16(stage.apply(sums, act), &mut out[c0..][..k]);
            }
            b0 += BLOCKS;
        }
    }
}

/// An input row as `VPDPBUSD` reads it: whole quads of four values, then the rest (zero to
/// three values) padded to a quad, each made unsigned.
struct Quads<'a> {
    whole: &'a [[i8; 4]],
    tail: Option<i32>,
}

impl<'a> Quads<'a> {
    fn of(x: &'a [i8]) -> Quads<'a> {
        let (whole, rest) = x.as_chunks::<4>();
        // The padding's values meet zero filter values; any byte will do.
        let tail = (!rest.is_empty()).then(|| {
            let mut quad = [0i8; 4];
            quad[..rest.len()].copy_from_slice(rest);
            unsigned(quad)
        });
        Quads { whole, tail }
    }
}

/// Four int8 made unsigned (`x + 128`, each byte's sign bit flipped), as one little-endian word.
#[inline(always)]
pub(super) fn unsigned(quad: [i8; 4]) -> i32 {
    i32::from_ne_bytes(quad.map(|v| v as u8)) ^ 0x8080_8080_u32 as i32
}

/// The sums of `N` blocks (from the first of `blocks`, `rows` rows each: the bias row, then
/// one per quad) over the input row's quads.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn block_sums<const N: usize>(blocks: &[[u8; ROW]], rows: usize, x: &Quads<'_>) -> [__m512i; N] {
    // (Loops, not `array::from_fn`: a closure with this function's target features is not
    // inlined into `from_fn`, which lacks them.)
    let (pairs, last) = x.whole.as_chunks::<2>();
    let (mut even, mut odd) = ([_mm512_setzero_si512(); N], [_mm512_setzero_si512(); N]);
    // Each block's bias row, and its rows for the pairs of quads and the rest: the pairs' as
    // many as the pairs, so that their loads need no check.
    let mut paired: [&[[[u8; ROW]; 2]]; N] = [&[]; N];
    let mut rest_rows: [&[[u8; ROW]]; N] = [&[]; N];
    for b in 0..N {
        let block = &blocks[b * rows..][..rows];
        even[b] = load_row(&block[0]);
        paired[b] = &block[1..].as_chunks::<2>().0[..pairs.len()];
        rest_rows[b] = &block[1 + 2 * pairs.len()..];
    }
    for (i, pair) in pairs.iter().enumerate() {
        let (x0, x1) = (_mm512_set1_epi32(unsigned(pair[0])), _mm512_set1_epi32(unsigned(pair[1])));
        for ((even, odd), rows) in even.iter_mut().zip(&mut odd).zip(&paired) {
            let [w0, w1] = &rows[i];
            *even = _mm512_dpbusd_epi32(*even, x0, load_row(w0));
            *odd = _mm512_dpbusd_epi32(*odd, x1, load_row(w1));
        }
    }
    // The odd whole quad, then the padded one.
    let rest = last.first().map(|&q| unsigned(q)).into_iter().chain(x.tail);
    for (j, xq) in rest.enumerate() {
        let xq = _mm512_set1_epi32(xq);
        for (even, rows) in even.iter_mut().zip(&rest_rows) {
            *even = _mm512_dpbusd_epi32(*even, xq, load_row(&rows[j]));
        }
    }
    for (even, odd) in even.iter_mut().zip(odd) {
        *even = _mm512_add_epi32(*even, odd);
    }
    even
}

/// One row of the layout.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_row(row: &[u8; ROW]) -> __m512i {
    // SAFETY: `row` is a valid reference to 64 readable bytes; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_si512(row.as_ptr().cast()) }
}

/// `N` blocks' sums in the first lanes of [`BLOCKS`] (the rest zero, not to be used).
#[target_feature(enable = "avx512f")]
#[inline]
fn pad<const N: usize>(sums: [__m512i; N]) -> [__m512i; BLOCKS] {
    let mut all = [_mm512_setzero_si512(); BLOCKS];
    all[..N].copy_from_slice(&sums);
    all
}
