//! The two hottest loops of the `dsp` kernels, written out in assembly on Arm with the DSP
//! extension (`cfg(hostrt_arm_dsp)`) so that every value stays in a register: with the loops
//! in Rust, LLVM kept sums and pointers on the stack on Cortex-M4 (up to 10 instructions per
//! multiply-accumulate where these take 1.6 and 2.75). Elsewhere the same loops run in Rust
//! on the [`emulated`](super::emulated) instructions, so the host tests the algorithm; the
//! Cortex-M4 image of `qemu-tests/dsp` checks the assembly against the portable kernels.
//!
//! Both are safe functions over slices: they check, before any load, that every address the
//! loop reads lies inside its slices (a violation is a bug in the caller, and panics).

#[cfg(not(hostrt_arm_dsp))]
use super::emulated::{smlabb, smlad, smlatt, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8};

/// The input offset in both halfwords, for `SXTAB16` ([`widen_words`], [`taps4`]). int8
/// zero points keep it in `-127..=128`, and `x + offset` in `-255..=255`, so no halfword
/// overflows.
#[inline(always)]
pub(crate) fn offset_pair(input_offset: i32) -> u32 {
    let half = u32::from(input_offset as u16);
    half | (half << 16)
}

/// `acc[r] + Σ x[whole..] · rows[r][whole..]` for four filter rows `rows` (`per_filter`
/// apart): the last values of a patch that [`conv_row4`] and [`conv_2x2`] leave out, summed by
/// `K::dot`.
#[inline(always)]
pub(crate) fn tail4<K: super::InnerLoops>(
    x: &[i8],
    rows: &[i8],
    (per_filter, whole): (usize, usize),
    input_offset: i32,
    mut acc: [i32; 4],
) -> [i32; 4] {
    if whole < per_filter {
        for (a, f) in acc.iter_mut().zip(rows.chunks_exact(per_filter)) {
            *a = K::dot(&x[whole..per_filter], &f[whole..], input_offset, *a);
        }
    }
    acc
}

/// Widens `x` (whole words of four int8) for [`conv_row4`]: per four values `x0..x3` two words,
/// `[x0 + offset, x2 + offset]` and `[x1 + offset, x3 + offset]` as int16 pairs
/// (`offset` in both halfwords: CMSIS-NN's reordered im2col), the layout `SMLAD` pairs with
/// `SXTB16`'s unpacking of filter words. Writes `2 * (x.len() / 4)` words of `out`.
#[inline]
pub fn widen_words(x: &[i8], offset: u32, out: &mut [u32]) {
    let (quads, _) = x.as_chunks::<4>();
    for (q, out) in quads.iter().zip(out.as_chunks_mut::<2>().0) {
        *out = widen_quad(q, offset);
    }
}

/// Four int8 values as one little-endian word (one unaligned `LDR` on Cortex-M4).
#[inline(always)]
pub(crate) fn word(bytes: &[i8; 4]) -> u32 {
    u32::from_le_bytes(bytes.map(|b| b as u8))
}

/// Four int8 as [`widen_words`] lays them out: `[x0 + offset, x2 + offset]`,
/// `[x1 + offset, x3 + offset]`.
#[inline(always)]
fn widen_quad(q: &[i8; 4], offset: u32) -> [u32; 2] {
    let w = word(q);
    [super::dsp::intrinsics::sxtab16(offset, w), super::dsp::intrinsics::sxtab16_ror8(offset, w)]
}

/// `acc[r] + Σ_k x[k] * filter_r[k]` for four filter rows `r`: `patch` holds the values `x`
/// as [`widen_words`] lays them out (two words per four values), filter row `r` starts at
/// `filters[r * stride]` (int8). Reads `2 * n` patch words and `4 * n` bytes of each row,
/// `n = patch.len() / 2`.
#[inline]
pub fn conv_row4(patch: &[u32], filters: &[i8], stride: usize, acc: [i32; 4]) -> [i32; 4] {
    let n = patch.len() / 2;
    if n == 0 {
        return acc;
    }
    // Every byte the loop reads: the rows' first 4n bytes.
    let rows = stride.checked_mul(3).and_then(|r| r.checked_add(4 * n)).expect("filter rows");
    let filters = &filters[..rows];
    run_conv_row4(&patch[..2 * n], filters, stride, n, acc)
}

/// One block of [`conv_row4`] in assembly, after the input words' load and the first row's
/// (`{w}`, at `[pf]`): the four rows' words (rows 1 to 3 at `s`, `2s` and `3s` past `pf`)
/// unpacked and multiplied into `a0..a3`.
#[cfg(hostrt_arm_dsp)]
macro_rules! row4 {
    () => {
        concat!(
            "sxtb16 {wt}, {w}\n",
            "sxtb16 {w}, {w}, ror #8\n",
            "smlad {a0}, {x02}, {wt}, {a0}\n",
            "smlad {a0}, {x13}, {w}, {a0}\n",
            "ldr {w}, [{pf}, {s}]\n",
            "sxtb16 {wt}, {w}\n",
            "sxtb16 {w}, {w}, ror #8\n",
            "smlad {a1}, {x02}, {wt}, {a1}\n",
            "smlad {a1}, {x13}, {w}, {a1}\n",
            "ldr {w}, [{pf}, {s}, lsl #1]\n",
            "sxtb16 {wt}, {w}\n",
            "sxtb16 {w}, {w}, ror #8\n",
            "smlad {a2}, {x02}, {wt}, {a2}\n",
            "smlad {a2}, {x13}, {w}, {a2}\n",
            "add {wt}, {pf}, {s}, lsl #1\n",
            "ldr {w}, [{wt}, {s}]\n",
            "sxtb16 {wt}, {w}\n",
            "sxtb16 {w}, {w}, ror #8\n",
            "smlad {a3}, {x02}, {wt}, {a3}\n",
            "smlad {a3}, {x13}, {w}, {a3}\n",
        )
    };
}

#[cfg(hostrt_arm_dsp)]
#[inline(always)]
fn run_conv_row4(patch: &[u32], filters: &[i8], stride: usize, n: usize, acc: [i32; 4]) -> [i32; 4] {
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    // SAFETY: reads `2n` words from `patch` (its length, word aligned as a `[u32]`) and, per
    // row r < 4, bytes `r * stride .. r * stride + 4n` of `filters` (within it: checked by
    // `conv_row4`; LDR reads unaligned words on Armv7E-M); writes only the named registers
    // and the flags, and ends with `n` counted down to 0 (n > 0 on entry; an odd `n` is
    // made even and the filter pointer stepped back a block, which no load reads: the
    // first is pre-indexed forward to the first block).
    unsafe {
        core::arch::asm!(
            // Two blocks of four values per pass; an odd count enters at the second, with
            // the filter pointer one block back (its pre-indexed load steps it forward).
            "tst {n}, #1",
            "beq 2f",
            "subs {pf}, {pf}, #4",
            "adds {n}, {n}, #1",
            "b 3f",
            "2:",
            "ldrd {x02}, {x13}, [{px}], #8",
            "ldr {w}, [{pf}]",
            row4!(),
            "3:",
            "ldrd {x02}, {x13}, [{px}], #8",
            "ldr {w}, [{pf}, #4]!",
            row4!(),
            "add {pf}, {pf}, #4",
            "subs {n}, {n}, #2",
            "bne 2b",
            px = inout(reg) patch.as_ptr() => _,
            pf = inout(reg) filters.as_ptr() => _,
            s = in(reg) stride,
            n = inout(reg) n => _,
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            a2 = inout(reg) a2,
            a3 = inout(reg) a3,
            x02 = out(reg) _,
            x13 = out(reg) _,
            w = out(reg) _,
            wt = out(reg) _,
            options(nostack, readonly),
        );
    }
    [a0, a1, a2, a3]
}

#[cfg(not(hostrt_arm_dsp))]
#[inline(always)]
fn run_conv_row4(patch: &[u32], filters: &[i8], stride: usize, n: usize, mut acc: [i32; 4]) -> [i32; 4] {
    for (q, x) in patch.as_chunks::<2>().0.iter().take(n).enumerate() {
        for (r, a) in acc.iter_mut().enumerate() {
            let (w, _) = filters[r * stride + 4 * q..][..4].as_chunks::<4>();
            let w = word(&w[0]);
            *a = smlad(x[1], sxtb16_ror8(w), smlad(x[0], sxtb16(w), *a));
        }
    }
    acc
}

/// Widens two pixels' values `x0`, `x1` (equal lengths, whole words of four int8) for
/// [`conv_2x2`]: per four values, [`widen_words`]' two words of `x0`, then those of `x1`.
/// Writes `4 * (x0.len() / 4)` words of `out`.
#[inline]
pub fn widen_words2(x0: &[i8], x1: &[i8], offset: u32, out: &mut [u32]) {
    let (q0, _) = x0.as_chunks::<4>();
    let (q1, _) = x1.as_chunks::<4>();
    for ((a, b), out) in q0.iter().zip(q1).zip(out.as_chunks_mut::<4>().0) {
        let ([a0, a1], [b0, b1]) = (widen_quad(a, offset), widen_quad(b, offset));
        *out = [a0, a1, b0, b1];
    }
}

/// `[acc[0] + x0·f0, acc[1] + x0·f1, acc[2] + x1·f0, acc[3] + x1·f1]` for two pixels' values
/// `x0`, `x1` (`patch`, laid out by [`widen_words2`]: four words per four values) and two
/// filter rows, `f0` from `filters[0]` and `f1` from `filters[stride]` (int8). Each filter
/// word is unpacked once for both pixels: 20 instructions per 16 multiply-accumulates on
/// Armv7E-M, where [`conv_row4`] takes 47 per 32 for one pixel. Reads `4n` patch words and
/// `4n` bytes of each row, `n = patch.len() / 4`.
#[inline]
pub fn conv_2x2(patch: &[u32], filters: &[i8], stride: usize, acc: [i32; 4]) -> [i32; 4] {
    let n = patch.len() / 4;
    if n == 0 {
        return acc;
    }
    // Every byte the loop reads: both rows' first 4n bytes.
    let rows = stride.checked_add(4 * n).expect("filter rows");
    run_conv_2x2(&patch[..4 * n], &filters[..rows], stride, n, acc)
}

#[cfg(hostrt_arm_dsp)]
#[inline(always)]
fn run_conv_2x2(patch: &[u32], filters: &[i8], stride: usize, n: usize, acc: [i32; 4]) -> [i32; 4] {
    let [mut a00, mut a01, mut a10, mut a11] = acc;
    // SAFETY: reads `4n` words from `patch` (its length, word aligned as a `[u32]`) and, per
    // row r < 2, bytes `r * stride .. r * stride + 4n` of `filters` (within it: checked by
    // `conv_2x2`; LDR reads unaligned words on Armv7E-M); writes only the named registers
    // and the flags, and ends with `n` counted down to 0 (n > 0 on entry).
    unsafe {
        core::arch::asm!(
            "2:",
            "ldr {w}, [{pf}]",
            "sxtb16 {wt}, {w}",
            "sxtb16 {w}, {w}, ror #8",
            "ldrd {xa}, {xb}, [{px}]",
            "smlad {a00}, {xa}, {wt}, {a00}",
            "smlad {a00}, {xb}, {w}, {a00}",
            "ldrd {xa}, {xb}, [{px}, #8]",
            "smlad {a10}, {xa}, {wt}, {a10}",
            "smlad {a10}, {xb}, {w}, {a10}",
            "ldr {w}, [{pf}, {s}]",
            "sxtb16 {wt}, {w}",
            "sxtb16 {w}, {w}, ror #8",
            "smlad {a11}, {xa}, {wt}, {a11}",
            "smlad {a11}, {xb}, {w}, {a11}",
            "ldrd {xa}, {xb}, [{px}], #16",
            "smlad {a01}, {xa}, {wt}, {a01}",
            "smlad {a01}, {xb}, {w}, {a01}",
            "add {pf}, {pf}, #4",
            "subs {n}, {n}, #1",
            "bne 2b",
            px = inout(reg) patch.as_ptr() => _,
            pf = inout(reg) filters.as_ptr() => _,
            s = in(reg) stride,
            n = inout(reg) n => _,
            a00 = inout(reg) a00,
            a01 = inout(reg) a01,
            a10 = inout(reg) a10,
            a11 = inout(reg) a11,
            xa = out(reg) _,
            xb = out(reg) _,
            w = out(reg) _,
            wt = out(reg) _,
            options(nostack, readonly),
        );
    }
    [a00, a01, a10, a11]
}

#[cfg(not(hostrt_arm_dsp))]
#[inline(always)]
fn run_conv_2x2(patch: &[u32], filters: &[i8], stride: usize, n: usize, mut acc: [i32; 4]) -> [i32; 4] {
    for (q, x) in patch.as_chunks::<4>().0.iter().take(n).enumerate() {
        for r in 0..2 {
            let (w, _) = filters[r * stride + 4 * q..][..4].as_chunks::<4>();
            let w = word(&w[0]);
            for (p, x) in x.as_chunks::<2>().0.iter().enumerate() {
                let a = &mut acc[2 * p + r];
                *a = smlad(x[1], sxtb16_ror8(w), smlad(x[0], sxtb16(w), *a));
            }
        }
    }
    acc
}

/// `acc[j] + Σ_t (xs[t * stride + j] + offset) * fs[t * stride + j]` for four channels `j`
/// and `n` taps, the input and filter taps `stride` bytes apart (a depthwise filter row with
/// depth multiplier 1 and dilation 1); `offset` in both halfwords. Reads `4` bytes at each
/// tap of both slices.
#[inline]
pub fn taps4(xs: &[i8], fs: &[i8], stride: usize, n: usize, offset: u32, acc: [i32; 4]) -> [i32; 4] {
    if n == 0 {
        return acc;
    }
    let span = (n - 1).checked_mul(stride).and_then(|s| s.checked_add(4)).expect("taps");
    run_taps4(&xs[..span], &fs[..span], stride, n, offset, acc)
}

/// The multiply-accumulate of one depthwise tap of four channels in assembly, its input word
/// unpacked into `{x02}` and `{x}` (bytes 0 and 2, 1 and 3) and its filter word in `{w}`:
/// channels 0 and 2 from the bottom and top halves of the first pair, 1 and 3 of the second.
#[cfg(hostrt_arm_dsp)]
macro_rules! mac4 {
    () => {
        concat!(
            "sxtb16 {w02}, {w}\n",
            "sxtb16 {w}, {w}, ror #8\n",
            "smlabb {a0}, {x02}, {w02}, {a0}\n",
            "smlatt {a2}, {x02}, {w02}, {a2}\n",
            "smlabb {a1}, {x}, {w}, {a1}\n",
            "smlatt {a3}, {x}, {w}, {a3}\n",
        )
    };
}

/// One tap of [`taps4`] in assembly: the input word at `[px]` plus the input offset, the
/// filter word at `[px + d]` (`d` = the filter's address minus the input's, modulo 2^32),
/// then `px += stride`.
#[cfg(hostrt_arm_dsp)]
macro_rules! tap {
    () => {
        concat!(
            "ldr {x}, [{px}]\n",
            "ldr {w}, [{px}, {d}]\n",
            "add {px}, {px}, {s}\n",
            "sxtab16 {x02}, {off}, {x}\n",
            "sxtab16 {x}, {off}, {x}, ror #8\n",
            mac4!(),
        )
    };
}

#[cfg(hostrt_arm_dsp)]
#[inline(always)]
fn run_taps4(xs: &[i8], fs: &[i8], stride: usize, n: usize, offset: u32, acc: [i32; 4]) -> [i32; 4] {
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    let mut px = xs.as_ptr();
    let d = (fs.as_ptr() as usize).wrapping_sub(px as usize);
    // The taps given, in one assembly block over these registers.
    macro_rules! block {
        ($($tap:expr),+) => {
            core::arch::asm!(
                $($tap),+,
                px = inout(reg) px, d = in(reg) d, s = in(reg) stride, off = in(reg) offset,
                a0 = inout(reg) a0, a1 = inout(reg) a1, a2 = inout(reg) a2, a3 = inout(reg) a3,
                x = out(reg) _, x02 = out(reg) _, w = out(reg) _, w02 = out(reg) _,
                options(nostack, readonly),
            )
        };
    }
    // Three taps per block (a 3-wide filter row in one), then one at a time: a loop counter
    // would need a thirteenth register.
    let mut left = n;
    while left > 0 {
        // SAFETY: each tap reads the words at `px` and `px + d` (the same offset into `fs`),
        // for taps t < n at offset t * stride: within both slices, as `taps4` checked
        // (`(n - 1) * stride + 4` bytes); writes only the named registers (`px` advanced by
        // the taps done).
        unsafe {
            if left >= 3 {
                block!(tap!(), tap!(), tap!());
                left -= 3;
            } else {
                block!(tap!());
                left -= 1;
            }
        }
    }
    [a0, a1, a2, a3]
}

#[cfg(not(hostrt_arm_dsp))]
#[inline(always)]
fn run_taps4(xs: &[i8], fs: &[i8], stride: usize, n: usize, offset: u32, mut acc: [i32; 4]) -> [i32; 4] {
    for t in 0..n {
        let tap = |s: &[i8]| word(&s[t * stride..][..4].as_chunks::<4>().0[0]);
        let (x, w) = (tap(xs), tap(fs));
        let (x02, x13, w02, w13) = (sxtab16(offset, x), sxtab16_ror8(offset, x), sxtb16(w), sxtb16_ror8(w));
        acc = [
            smlabb(x02, w02, acc[0]),
            smlabb(x13, w13, acc[1]),
            smlatt(x02, w02, acc[2]),
            smlatt(x13, w13, acc[3]),
        ];
    }
    acc
}

/// `acc[j] + Σ_(r, t < 3) xs[r * row + t * stride + j] * byte j of fs[3 * r + t]` for four
/// channels `j`: a whole 3x3 depthwise window (depth multiplier 1, no dilation), its input
/// rows `row` bytes apart and taps `stride` bytes apart, the filter's nine taps of the four
/// channels laid out as nine words (one per tap, channel `j` in byte `j`), so that each
/// filter load steps by itself. No input offset: the caller adds `offset * Σ filter` to
/// `acc` (every tap is in the image, so that is exact), which frees the register the offset
/// would take.
#[inline]
pub fn taps4_3x3(xs: &[i8], row: usize, fs: &[u32; 9], stride: usize, acc: [i32; 4]) -> [i32; 4] {
    let x_span = row.checked_mul(2).and_then(|r| r.checked_add(2 * stride + 4)).expect("rows");
    run_taps4_3x3(&xs[..x_span], row, fs, stride, acc)
}

/// One tap of [`taps4_3x3`]: the input word at `[px]`, then `px += stride`; the filter word
/// at `[pf]`, then `pf += 4`.
#[cfg(hostrt_arm_dsp)]
macro_rules! tap_3x3 {
    () => {
        concat!(
            "ldr {x}, [{px}]\n",
            "ldr {w}, [{pf}], #4\n",
            "add {px}, {px}, {s}\n",
            "sxtb16 {x02}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            mac4!(),
        )
    };
}

#[cfg(hostrt_arm_dsp)]
#[inline(always)]
fn run_taps4_3x3(xs: &[i8], row: usize, fs: &[u32; 9], stride: usize, acc: [i32; 4]) -> [i32; 4] {
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    // From the end of one input row's three taps to the start of the next (modulo 2^32).
    let skip = row.wrapping_sub(3 * stride);
    // SAFETY: reads the words at xs[r * row + t * stride] for r, t < 3, within `xs`, as
    // `taps4_3x3` checked (`2 * row + 2 * stride + 4` bytes), and the nine words of `fs`;
    // writes only the named registers.
    unsafe {
        core::arch::asm!(
            tap_3x3!(), tap_3x3!(), tap_3x3!(),
            "add {px}, {px}, {skip}",
            tap_3x3!(), tap_3x3!(), tap_3x3!(),
            "add {px}, {px}, {skip}",
            tap_3x3!(), tap_3x3!(), tap_3x3!(),
            px = inout(reg) xs.as_ptr() => _, pf = inout(reg) fs.as_ptr() => _,
            s = in(reg) stride, skip = in(reg) skip,
            a0 = inout(reg) a0, a1 = inout(reg) a1, a2 = inout(reg) a2, a3 = inout(reg) a3,
            x = out(reg) _, x02 = out(reg) _, w = out(reg) _, w02 = out(reg) _,
            options(nostack, readonly),
        );
    }
    [a0, a1, a2, a3]
}

#[cfg(not(hostrt_arm_dsp))]
#[inline(always)]
fn run_taps4_3x3(xs: &[i8], row: usize, fs: &[u32; 9], stride: usize, acc: [i32; 4]) -> [i32; 4] {
    let mut acc = acc;
    for (k, w) in fs.iter().enumerate() {
        let x = &xs[(k / 3) * row + (k % 3) * stride..][..4];
        for (j, a) in acc.iter_mut().enumerate() {
            *a = a.wrapping_add(i32::from(x[j]) * i32::from(w.to_le_bytes()[j] as i8));
        }
    }
    acc
}

/// The nine words [`taps4_3x3`] reads for four channels of a 3x3 depthwise filter: tap `t`'s
/// word holds the four channels' values at `filter[t * stride..]`.
#[inline]
pub fn filter_words_3x3(filter: &[i8], stride: usize) -> [u32; 9] {
    let mut words = [0; 9];
    for (t, w) in words.iter_mut().enumerate() {
        let (quad, _) = filter[t * stride..][..4].as_chunks::<4>();
        *w = word(&quad[0]);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    proptest! {
        #[test]
        fn taps4_3x3_is_nine_taps_of_four_channels(stride in 4usize..12, extra in 0usize..20, acc: [i32; 4], seed: u64) {
            let mut rng = crate::testutil::Lcg(seed);
            let row = 3 * stride + extra;
            let (xs, fs): (Vec<i8>, Vec<i8>) = (rng.bytes(2 * row + 2 * stride + 4), rng.bytes(8 * stride + 4));
            let got = taps4_3x3(&xs, row, &filter_words_3x3(&fs, stride), stride, acc);
            for j in 0..4 {
                let want = (0..9).fold(acc[j], |a, k| {
                    let (r, t) = (k / 3, k % 3);
                    a.wrapping_add(i32::from(xs[r * row + t * stride + j]) * i32::from(fs[k * stride + j]))
                });
                prop_assert_eq!(got[j], want, "channel {}", j);
            }
        }

        #[test]
        fn conv_row4_is_four_dot_products(
            x in proptest::collection::vec(any::<i8>(), 0..40), extra in 0usize..9, zp in -128i32..=127,
            acc: [i32; 4], seed: u64,
        ) {
            let n = x.len() / 4;
            let stride = 4 * n + extra;
            let mut rng = crate::testutil::Lcg(seed);
            let filters = rng.bytes(3 * stride + 4 * n);
            let offset = offset_pair(-zp);
            let mut patch = std::vec![0u32; 2 * n];
            widen_words(&x, offset, &mut patch);
            let got = conv_row4(&patch, &filters, stride, acc);
            for r in 0..4 {
                let want = (0..4 * n).fold(acc[r], |a, k| {
                    a.wrapping_add((i32::from(x[k]) - zp) * i32::from(filters[r * stride + k]))
                });
                prop_assert_eq!(got[r], want, "row {}", r);
            }
        }

        #[test]
        fn conv_2x2_is_two_pixels_by_two_rows(
            x in proptest::collection::vec(any::<i8>(), 0..80), extra in 0usize..9, zp in -128i32..=127,
            acc: [i32; 4], seed: u64,
        ) {
            let n = x.len() / 8;
            let (x0, x1) = (&x[..4 * n], &x[4 * n..8 * n]);
            let stride = 4 * n + extra;
            let mut rng = crate::testutil::Lcg(seed);
            let filters = rng.bytes(stride + 4 * n);
            let offset = offset_pair(-zp);
            let mut patch = std::vec![0u32; 4 * n];
            widen_words2(x0, x1, offset, &mut patch);
            let got = conv_2x2(&patch, &filters, stride, acc);
            for (i, (x, r)) in [(x0, 0), (x0, 1), (x1, 0), (x1, 1)].into_iter().enumerate() {
                let want = (0..4 * n).fold(acc[i], |a, k| {
                    a.wrapping_add((i32::from(x[k]) - zp) * i32::from(filters[r * stride + k]))
                });
                prop_assert_eq!(got[i], want, "pixel {} row {}", i / 2, r);
            }
        }

        #[test]
        fn taps4_is_four_channels_of_taps(
            n in 0usize..6, stride in 4usize..12, zp in -128i32..=127, acc: [i32; 4], seed: u64,
        ) {
            let mut rng = crate::testutil::Lcg(seed);
            let len = if n == 0 { 0 } else { (n - 1) * stride + 4 };
            let (xs, fs): (Vec<i8>, Vec<i8>) = (rng.bytes(len), rng.bytes(len));
            let offset = offset_pair(-zp);
            let got = taps4(&xs, &fs, stride, n, offset, acc);
            for j in 0..4 {
                let want = (0..n).fold(acc[j], |a, t| {
                    a.wrapping_add((i32::from(xs[t * stride + j]) - zp) * i32::from(fs[t * stride + j]))
                });
                prop_assert_eq!(got[j], want, "channel {}", j);
            }
        }
    }
}
