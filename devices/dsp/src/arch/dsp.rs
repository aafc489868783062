//! Inner loops on the Armv7E-M DSP extension, after CMSIS-NN: four int8 values are loaded as
//! one word, split into two pairs of int16 with `SXTAB16` (which adds the input offset on the
//! way) and `SXTB16`, and multiplied-accumulated two at a time with `SMLAD` (`SMLABB`/`SMLATT`
//! per channel for depthwise); `SSAT` saturates the output. Off Arm-with-DSP the same code
//! runs on the bit-exact software [`intrinsics`], so the host tests it against `portable`.

use super::InnerLoops;
use super::loops::{offset_pair, word};
use crate::quant::{ActivationRange, multiply_by_quantized_multiplier};

/// The DSP instructions: real ones on Arm with the DSP extension, emulated elsewhere.
#[cfg(hostrt_arm_dsp)]
pub use super::asm as intrinsics;
/// The DSP instructions: real ones on Arm with the DSP extension, emulated elsewhere.
#[cfg(not(hostrt_arm_dsp))]
pub use super::emulated as intrinsics;

use intrinsics::{smlabb, smlad, smlatt, ssat, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8};

/// Marker for the DSP inner loops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dsp;

impl InnerLoops for Dsp {
    const DSP_LOOPS: bool = true;

    #[inline]
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, mut acc: i32) -> i32 {
        let offset = offset_pair(input_offset);
        let (x4, x_tail) = input.as_chunks::<4>();
        let (w4, w_tail) = filter.as_chunks::<4>();
        for (x, w) in x4.iter().zip(w4) {
            let (x, w) = (word(x), word(w));
            acc = smlad(sxtab16(offset, x), sxtb16(w), acc);
            acc = smlad(sxtab16_ror8(offset, x), sxtb16_ror8(w), acc);
        }
        for (&x, &w) in x_tail.iter().zip(w_tail) {
            acc = acc.wrapping_add(i32::from(w) * (i32::from(x) + input_offset));
        }
        acc
    }

    #[inline]
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, mut acc: [i32; 2]) -> [i32; 2] {
        // CMSIS-NN's two-row matrix-vector step: 3 instructions unpack four inputs (the load
        // and two SXTAB16), then 5 per filter (load, two SXTB16, two SMLAD). Unrolling to
        // eight inputs measured slower (register spills).
        let offset = offset_pair(input_offset);
        let (x4, x_tail) = input.as_chunks::<4>();
        let (a4, a_tail) = filters[0].as_chunks::<4>();
        let (b4, b_tail) = filters[1].as_chunks::<4>();
        for ((x, a), b) in x4.iter().zip(a4).zip(b4) {
            let x = word(x);
            let (x02, x13) = (sxtab16(offset, x), sxtab16_ror8(offset, x));
            let (a, b) = (word(a), word(b));
            acc[0] = smlad(x02, sxtb16(a), acc[0]);
            acc[0] = smlad(x13, sxtb16_ror8(a), acc[0]);
            acc[1] = smlad(x02, sxtb16(b), acc[1]);
            acc[1] = smlad(x13, sxtb16_ror8(b), acc[1]);
        }
        for ((&x, &a), &b) in x_tail.iter().zip(a_tail).zip(b_tail) {
            let x = i32::from(x) + input_offset;
            acc[0] = acc[0].wrapping_add(i32::from(a) * x);
            acc[1] = acc[1].wrapping_add(i32::from(b) * x);
        }
        acc
    }

    #[inline]
    fn dot2x2(inputs: [&[i8]; 2], filters: [&[i8]; 2], input_offset: i32, mut acc: [i32; 4]) -> [i32; 4] {
        // Per four values: two input words unpacked with the offset (four SXTAB16), each
        // filter word unpacked (two SXTB16) and used for both pixels: 8 SMLAD, 16 products.
        let offset = offset_pair(input_offset);
        let (x4, x_tail) = inputs[0].as_chunks::<4>();
        let (y4, y_tail) = inputs[1].as_chunks::<4>();
        let (a4, a_tail) = filters[0].as_chunks::<4>();
        let (b4, b_tail) = filters[1].as_chunks::<4>();
        for (((x, y), a), b) in x4.iter().zip(y4).zip(a4).zip(b4) {
            let (x, y) = (word(x), word(y));
            let (x02, x13) = (sxtab16(offset, x), sxtab16_ror8(offset, x));
            let (y02, y13) = (sxtab16(offset, y), sxtab16_ror8(offset, y));
            let a = word(a);
            let (a02, a13) = (sxtb16(a), sxtb16_ror8(a));
            acc[0] = smlad(x02, a02, acc[0]);
            acc[0] = smlad(x13, a13, acc[0]);
            acc[2] = smlad(y02, a02, acc[2]);
            acc[2] = smlad(y13, a13, acc[2]);
            let b = word(b);
            let (b02, b13) = (sxtb16(b), sxtb16_ror8(b));
            acc[1] = smlad(x02, b02, acc[1]);
            acc[1] = smlad(x13, b13, acc[1]);
            acc[3] = smlad(y02, b02, acc[3]);
            acc[3] = smlad(y13, b13, acc[3]);
        }
        for (((&x, &y), &a), &b) in x_tail.iter().zip(y_tail).zip(a_tail).zip(b_tail) {
            let (x, y) = (i32::from(x) + input_offset, i32::from(y) + input_offset);
            let (a, b) = (i32::from(a), i32::from(b));
            acc = [
                acc[0].wrapping_add(a * x),
                acc[1].wrapping_add(b * x),
                acc[2].wrapping_add(a * y),
                acc[3].wrapping_add(b * y),
            ];
        }
        acc
    }

    #[inline]
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]) {
        let offset = offset_pair(input_offset);
        let (x, w) = (word(input), word(filter));
        let (x02, w02) = (sxtab16(offset, x), sxtb16(w));
        let (x13, w13) = (sxtab16_ror8(offset, x), sxtb16_ror8(w));
        acc[0] = smlabb(x02, w02, acc[0]);
        acc[2] = smlatt(x02, w02, acc[2]);
        acc[1] = smlabb(x13, w13, acc[1]);
        acc[3] = smlatt(x13, w13, acc[3]);
    }

    #[inline]
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8 {
        let v = multiply_by_quantized_multiplier(acc, multiplier, shift).wrapping_add(output_offset);
        // SSAT to int8 first; act lies within int8, so clamping after it equals clamping before.
        // (`max` then `min`, not `clamp`: no panic path for the checked `min <= max`.)
        ssat::<8>(v).max(act.min).min(act.max) as i8
    }
}

super::per_channel_kernels!(
    Dsp,
    "[`crate::fully_connected()`] with the DSP inner loops.",
    "[`crate::conv2d()`] with the DSP inner loops.",
    "[`crate::depthwise_conv2d()`] with the DSP inner loops."
);

#[cfg(test)]
mod tests {
    use super::super::portable::Portable;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn dot_matches_portable(pairs in proptest::collection::vec(any::<(i8, i8)>(), 0..40), zp in -128i32..=127, acc: i32) {
            let (x, w): (std::vec::Vec<i8>, std::vec::Vec<i8>) = pairs.into_iter().unzip();
            prop_assert_eq!(Dsp::dot(&x, &w, -zp, acc), Portable::dot(&x, &w, -zp, acc));
        }

        #[test]
        fn dot2x2_matches_portable(values in proptest::collection::vec(any::<[i8; 4]>(), 0..40), zp in -128i32..=127, acc: [i32; 4]) {
            let column = |k: usize| values.iter().map(|v| v[k]).collect::<std::vec::Vec<i8>>();
            let (x, y, a, b) = (column(0), column(1), column(2), column(3));
            prop_assert_eq!(
                Dsp::dot2x2([&x, &y], [&a, &b], -zp, acc),
                Portable::dot2x2([&x, &y], [&a, &b], -zp, acc)
            );
        }

        #[test]
        fn mac4_matches_portable(x: [i8; 4], w: [i8; 4], zp in -128i32..=127, acc: [i32; 4]) {
            let (mut a, mut b) = (acc, acc);
            Dsp::mac4(&x, &w, -zp, &mut a);
            Portable::mac4(&x, &w, -zp, &mut b);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn requantize_matches_portable(acc: i32, m in 0i32..=i32::MAX, s in -31i32..=30, zp in -128i32..=127) {
            let act = ActivationRange::new(-100, 90).unwrap();
            prop_assert_eq!(Dsp::requantize(acc, m, s, zp, act), Portable::requantize(acc, m, s, zp, act));
        }
    }
}
